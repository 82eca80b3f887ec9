"""More ``nn.*`` operators: local response normalisation (``nn.lrn``).

>>> from relaykit import relay
>>> from relaykit.op.nn._extra_ops import lrn
>>> lrn(relay.var("x", shape=(1, 4, 2, 2)), size=3).attrs.size
3
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...ir.attrs import Attrs
from ...ir.expr import Call, Expr
from ...ir.types import Type
from .._numeric import as_out
from .._relations import FLOAT_DTYPES, normalize_axis, tensor_arg
from ..define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["lrn"]


def _lrn_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"lrn needs a floating-point tensor, got {data}")
    normalize_axis(attrs.axis, data.ndim, "lrn axis")
    if int(attrs.size) < 1:
        raise TypeRelError(f"lrn size must be positive, got {attrs.size}")
    return data


def _lrn_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    axis = attrs.axis % x.ndim
    size = int(attrs.size)
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    acc = x.astype(np.float64) ** 2
    pad = [(0, 0)] * x.ndim
    pad[axis] = (lo, hi)
    padded = np.pad(acc, pad)
    csum = np.cumsum(padded, axis=axis)
    csum = np.concatenate([np.zeros_like(np.take(csum, [0], axis=axis)), csum], axis=axis)
    n = x.shape[axis]
    window = np.take(csum, np.arange(size, size + n), axis=axis) - np.take(
        csum, np.arange(n), axis=axis
    )
    out = x / (attrs.bias + attrs.alpha / size * window) ** attrs.beta
    return as_out(out, x.dtype)


define_op(
    "nn.lrn",
    num_inputs=1,
    attrs={"size": 5, "axis": 1, "bias": 2.0, "alpha": 1e-5, "beta": 0.75},
    attrs_type_key="relay.attrs.LRNAttrs",
    type_rel=_lrn_rel,
    compute=_lrn_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Local response normalisation across channels.",
)


def lrn(
    data: Expr,
    size: int = 5,
    axis: int = 1,
    bias: float = 2.0,
    alpha: float = 0.00001,
    beta: float = 0.75,
) -> Call:
    """``data / (bias + alpha / size * sum(data**2 over size neighbours on axis)) ** beta``."""
    return make_call(
        "nn.lrn",
        [data],
        size=int(size),
        axis=int(axis),
        bias=float(bias),
        alpha=float(alpha),
        beta=float(beta),
    )
