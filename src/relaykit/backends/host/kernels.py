"""Host kernels of the graph executor: operators bound to their planned buffers.

A *binder* takes an operator's attributes, its input arrays (a list for a
tuple argument), its output arrays and a :class:`Scratch` allocator, and
returns a no-argument callable that computes the outputs in place, or
``None`` when it does not handle that case. Elementwise operators are NumPy
ufuncs with ``out=``; ``nn.dense`` and ``nn.conv2d`` (NCHW/OIHW, im2col into
scratch memory, then one ``matmul`` into the output; 3x3 stride-1 layers by
Winograd F(2x2, 3x3) where it measured faster, see :func:`winograd_pays`) write
their results straight into the planned buffer. Every other operator falls back to its
reference kernel (``FCompute``) and a copy into the planned buffer.

Binders see the actual arrays once, when the executor is created, so views,
transposed weights and im2col tap lists are computed then, not per run.

>>> import numpy as np
>>> from relaykit.ir.attrs import Attrs
>>> a, b, o = np.ones(3, "float32"), np.full(3, 2, "float32"), np.empty(3, "float32")
>>> run = bind_kernel("add", Attrs({}), [a, b], [o], Scratch(None))
>>> _ = run(); o.tolist()
[3.0, 3.0, 3.0]
"""

from __future__ import annotations

from relaykit.backends.host import convolution, elementwise, linalg, qnn_ops, reduction
from relaykit.backends.host.convolution import WINOGRAD_MAX_BYTES, conv2d_run, winograd_pays
from relaykit.backends.host.elementwise import erf_float32
from relaykit.backends.host.linalg import dense_run, matmul_run
from relaykit.backends.host.table import (
    Binder,
    KernelRegistry,
    Run,
    Scratch,
    bind_kernel,
    has_host_kernel,
    host_kernel_names,
    kernel_registry,
    register_host_kernel,
)

__all__ = [
    "Binder",
    "KernelRegistry",
    "Run",
    "Scratch",
    "WINOGRAD_MAX_BYTES",
    "bind_kernel",
    "conv2d_run",
    "convolution",
    "dense_run",
    "elementwise",
    "erf_float32",
    "has_host_kernel",
    "host_kernel_names",
    "kernel_registry",
    "linalg",
    "matmul_run",
    "qnn_ops",
    "reduction",
    "register_host_kernel",
    "winograd_pays",
]
