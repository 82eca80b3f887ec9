"""More ``nn.*`` operators: local response normalisation (``nn.lrn``) and 3-D pooling
(``nn.max_pool3d``, ``nn.avg_pool3d``, NCDHW, with PyTorch/ONNX ``ceil_mode``: the
last window must start inside the input or its leading padding).

>>> from relaykit import relay
>>> from relaykit.op.nn._extra_ops import lrn
>>> lrn(relay.var("x", shape=(1, 4, 2, 2)), size=3).attrs.size
3
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._numeric import as_out
from relaykit.op._relations import FLOAT_DTYPES, normalize_axis, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["lrn", "max_pool3d", "avg_pool3d", "pool_out_size"]


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


# -- 3-D pooling ----------------------------------------------------------------------------------


def pool_out_size(size: int, k: int, s: int, d: int, lo: int, hi: int, ceil_mode: bool) -> int:
    """Output length of one pooled axis (PyTorch/ONNX rule in ceil mode)."""
    span = (size + lo + hi - d * (k - 1) - 1) / s + 1
    if not ceil_mode:
        return math.floor(span)
    out = math.ceil(span)
    if (out - 1) * s >= size + lo:
        out -= 1
    return out


def _geometry(shape: Sequence[int], attrs: Attrs) -> list[tuple[int, ...]]:
    r = len(shape) - 2
    k = tuple(attrs.pool_size)
    s = tuple(attrs.strides or (1,) * r)
    d = tuple(attrs.dilation or (1,) * r)
    p = tuple(attrs.padding or (0,) * (2 * r))
    if not len(k) == len(s) == len(d) == r or len(p) != 2 * r:
        raise TypeRelError(f"pool_size, strides, dilation and padding must describe {r} axes")
    out = tuple(
        pool_out_size(shape[2 + i], k[i], s[i], d[i], p[i], p[r + i], bool(attrs.ceil_mode))
        for i in range(r)
    )
    if any(o <= 0 for o in out):
        raise TypeRelError(f"the pooling window does not fit the input of shape {tuple(shape)}")
    return [k, s, d, p, out]


def _pool3d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.ndim != 5 or attrs.layout != "NCDHW":
        raise TypeRelError(f"3-D pooling takes an NCDHW tensor, got {data} ({attrs.layout})")
    out = _geometry(data.shape, attrs)[4]
    return TensorType(data.shape[:2] + out, data.dtype)


def _windows(x: np.ndarray, k, s, d, out) -> np.ndarray:
    r = len(k)
    eff = tuple((k[i] - 1) * d[i] + 1 for i in range(r))
    win = sliding_window_view(x, eff, axis=tuple(range(2, 2 + r)))
    index: tuple[slice, ...] = (slice(None), slice(None))
    index += tuple(slice(None, s[i] * (out[i] - 1) + 1, s[i]) for i in range(r))
    index += tuple(slice(None, None, d[i]) for i in range(r))
    return win[index]


def _pool_kernel(kind: str) -> Any:
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = inputs[0]
        k, s, d, p, out = _geometry(x.shape, attrs)
        r = len(k)
        extra = [
            max(0, (out[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - (x.shape[2 + i] + p[i] + p[r + i]))
            for i in range(r)
        ]
        width = [(0, 0), (0, 0)] + [(p[i], p[r + i] + extra[i]) for i in range(r)]
        axes = tuple(range(-r, 0))
        if kind == "max":
            low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
            padded = np.pad(x, width, constant_values=low)
            return as_out(_windows(padded, k, s, d, out).max(axis=axes), x.dtype)
        acc = x.astype(np.float64)
        sums = _windows(np.pad(acc, width), k, s, d, out).sum(axis=axes)
        valid = np.zeros(x.shape[2:], dtype=np.float64)
        valid[...] = 1.0
        if attrs.count_include_pad:
            vwidth = [(p[i], p[r + i]) for i in range(r)]
            valid = np.pad(valid, vwidth, constant_values=1.0)
            valid = np.pad(valid, [(0, e) for e in extra])
        else:
            valid = np.pad(valid, [(p[i], p[r + i] + extra[i]) for i in range(r)])
        counts = _windows(valid[None, None], k, s, d, out).sum(axis=axes)
        return as_out(sums / np.maximum(counts, 1), x.dtype)

    return compute


_POOL3D_ATTRS = {
    "pool_size": None,
    "strides": (1, 1, 1),
    "dilation": (1, 1, 1),
    "padding": (0, 0, 0, 0, 0, 0),
    "layout": "NCDHW",
    "out_layout": "",
    "ceil_mode": False,
}

define_op(
    "nn.max_pool3d",
    num_inputs=1,
    attrs=_POOL3D_ATTRS,
    attrs_type_key="relay.attrs.MaxPool3DAttrs",
    type_rel=_pool3d_rel,
    compute=_pool_kernel("max"),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="3-D max pooling (NCDHW).",
)
define_op(
    "nn.avg_pool3d",
    num_inputs=1,
    attrs={**_POOL3D_ATTRS, "count_include_pad": False},
    attrs_type_key="relay.attrs.AvgPool3DAttrs",
    type_rel=_pool3d_rel,
    compute=_pool_kernel("avg"),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="3-D average pooling (NCDHW).",
)


def _triple(v: Any) -> tuple[int, ...]:
    return (int(v),) * 3 if isinstance(v, (int, np.integer)) else tuple(int(x) for x in v)


def _pad6(v: Any) -> tuple[int, ...]:
    t = _triple(v) if isinstance(v, (int, np.integer)) or len(v) == 3 else tuple(v)
    return t + t if len(t) == 3 else tuple(int(x) for x in t)


def max_pool3d(
    data: Expr,
    pool_size: Any = (1, 1, 1),
    strides: Any = (1, 1, 1),
    dilation: Any = (1, 1, 1),
    padding: Any = (0, 0, 0),
    layout: str = "NCDHW",
    out_layout: str = "",
    ceil_mode: bool = False,
) -> Call:
    """3-D max pooling; ``padding`` is 3 values (both sides) or 6 (all begins, then ends)."""
    return make_call(
        "nn.max_pool3d",
        [data],
        pool_size=_triple(pool_size),
        strides=_triple(strides),
        dilation=_triple(dilation),
        padding=_pad6(padding),
        layout=layout,
        out_layout=out_layout,
        ceil_mode=bool(ceil_mode),
    )


def avg_pool3d(
    data: Expr,
    pool_size: Any = (1, 1, 1),
    strides: Any = (1, 1, 1),
    dilation: Any = (1, 1, 1),
    padding: Any = (0, 0, 0),
    layout: str = "NCDHW",
    out_layout: str = "",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> Call:
    """3-D average pooling; ``count_include_pad`` counts padding in the divisor."""
    return make_call(
        "nn.avg_pool3d",
        [data],
        pool_size=_triple(pool_size),
        strides=_triple(strides),
        dilation=_triple(dilation),
        padding=_pad6(padding),
        layout=layout,
        out_layout=out_layout,
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
    )
