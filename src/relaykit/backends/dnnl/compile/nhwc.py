"""NHWC convolutions (TVM's ``data_layout="NHWC"``, ``kernel_layout="HWIO"``) as oneDNN's
NCHW ones: the data seen through transposes, which the region runtime makes views of
the same memory (oneDNN then reads it as its channels-last layout, no copy), the
weight rearranged once.

>>> from relaykit.backends.dnnl.run.program import Program
>>> class L:
...     p = Program()
...     def emit(self, op, inputs, shape, **attrs):
...         out = self.p.new_tensor(shape)
...         return out
...     def const(self, t):
...         return None
>>> lw = L()
>>> lw.p.shapes[nhwc_view(lw, lw.p.add_input((1, 5, 6, 3)), True)]
(1, 3, 5, 6)
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from relaykit.backends.dnnl.run.program import Program

__all__ = ["nhwc_view", "hwio_as_oihw"]


class _Lowerer(Protocol):
    p: Program

    def emit(self, op: str, inputs: list[int], shape: tuple[int, ...], **attrs: Any) -> int: ...
    def const(self, t: int) -> np.ndarray | None: ...


def nhwc_view(lw: _Lowerer, x: int, to_nchw: bool) -> int:
    """``x`` (NHWC) seen as NCHW, or (``to_nchw`` False) an NCHW ``x`` seen as NHWC."""
    n, a, b, c = lw.p.shapes[x]
    shape, perm = ((n, c, a, b), [0, 3, 1, 2]) if to_nchw else ((n, b, c, a), [0, 2, 3, 1])
    out = lw.emit("transpose", [x], shape, perm=perm)
    if lw.p.dtype(x) != "float32":
        lw.p.dtypes[out] = lw.p.dtype(x)
    return out


def hwio_as_oihw(lw: _Lowerer, w: int) -> int:
    """An HWIO weight as OIHW: a constant rearranged here, an input through a view."""
    value = lw.const(w)
    if value is not None:
        return lw.p.add_constant(np.ascontiguousarray(value.transpose(3, 2, 0, 1)))
    h, k, i, o = lw.p.shapes[w]
    return lw.emit("transpose", [w], (o, i, h, k), perm=[3, 2, 0, 1])
