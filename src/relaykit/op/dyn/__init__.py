"""Dynamic operators (``relay.op.dyn``): shapes, axes, counts and sizes given at run time.

Each ``dyn.X`` stands in the file named as its static twin's (``dyn.reshape`` in
:mod:`.transform`, ``dyn.image.resize2d`` in :mod:`.image`, ``dyn.nn.pad`` in :mod:`.nn`),
registered by the one helper :func:`~relaykit.op.dyn._base.define_dyn_op`.

Each ``dyn.X`` takes as tensor inputs what its static twin ``X`` takes as attributes
(``dyn.reshape(data, newshape)`` vs ``reshape(data, newshape=(2, 3))``). Its type has ``?``
dimensions where the value decides the size; the rank comes from the static length of the
shape-like input. Each has

* a NumPy kernel: the static op's kernel, called with the values made attributes;
* a data-dependent shape function (``FShapeFunc`` with ``TShapeDataDependent=True``,
  see :mod:`relaykit.op.shape_func`): the static op's output shape for those values;
* a fold back to the static op when the inputs are constants
  (:func:`static_equivalent`, used by ``relay.transform.DynamicToStatic``).

The ordinary constructors dispatch here when given an expression instead of numbers, as
TVM's Python API does: ``relay.reshape(x, newshape=relay_expr)`` builds ``dyn.reshape``;
a ``relay.Constant`` is read as the numbers it holds and builds the static op.

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 6))
>>> s = relay.var("s", shape=(2,), dtype="int64")
>>> call = relay.reshape(x, s)
>>> call.op.name
'dyn.reshape'
>>> f = relay.Function([x, s], call)
>>> out = relay.create_executor("debug").evaluate(f)(np.ones((2, 6), "float32"), np.array([3, 4]))
>>> out.shape
(3, 4)
"""

from __future__ import annotations

from . import image, nn
from ._base import DYN_OPS, static_equivalent
from .image import affine_grid, col2im, image_resize
from .indexing import topk
from .nn import dropout, matmul
from .reduce import REDUCTIONS, cumulative, reduce, sum_
from .shape_ops import one_hot
from .signal import dft, stft, window
from .sparse import sparse_to_dense
from .tensor import full, ones, zeros
from .transform import (
    as_dynamic,
    broadcast_to,
    center_crop_pad,
    compress,
    expand,
    expand_dims,
    pad_axes,
    reshape,
    slice_axes,
    split,
    squeeze,
    strided_slice,
    tile,
    unique,
    unsqueeze,
)
from .vision import non_max_suppression

__all__ = [
    "DYN_OPS",
    "broadcast_to",
    "expand_dims",
    "full",
    "one_hot",
    "ones",
    "reshape",
    "sparse_to_dense",
    "squeeze",
    "static_equivalent",
    "strided_slice",
    "tile",
    "topk",
    "zeros",
    "image",
    "nn",
    # operators ONNX models need with run-time axes, extents or data-dependent outputs
    "REDUCTIONS",
    "affine_grid",
    "as_dynamic",
    "center_crop_pad",
    "col2im",
    "compress",
    "cumulative",
    "dft",
    "dropout",
    "expand",
    "image_resize",
    "matmul",
    "non_max_suppression",
    "pad_axes",
    "reduce",
    "slice_axes",
    "split",
    "stft",
    "sum_",
    "unique",
    "unsqueeze",
    "window",
]
