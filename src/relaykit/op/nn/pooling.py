"""Pooling: ``nn.max_pool2d``, ``nn.avg_pool2d``, ``nn.global_avg_pool2d``,
``nn.global_max_pool2d``, ``nn.adaptive_avg_pool2d``, ``nn.adaptive_max_pool2d``,
``nn.max_pool2d_with_argmax``, ``nn.max_pool3d``, ``nn.avg_pool3d``, ``nn.max_pool1d`` and
``nn.avg_pool1d``: each one's schema,
type relation, reference kernel and constructor.

The 2-D pools follow TVM's ``ceil_mode`` rule; the 3-D pools (NCDHW or NDHWC) PyTorch's and ONNX's:
the last window must start inside the input or its leading padding.

``nn.max_pool2d_with_argmax`` also returns where each maximum came from, as ONNX's
``MaxPool`` ``Indices`` output (and PyTorch's ``return_indices``) do. The index of a
maximum is its position in the flattened NCHW input (batch and channel included):
``((n * C + c) * H + h) * W + w``, or with ``storage_order=1`` (column-major)
``(n * C + c) * H * W + w * H + h``. Padding never wins; among equal values the first in
row-major window order does.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 1, 4, 4))
>>> relay.nn.max_pool2d_with_argmax(x, pool_size=(2, 2), strides=(2, 2)).astuple().attrs.pool_size
[2, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, TupleWrapper
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op._numeric import as_out, lowest_finite, lowest_value
from relaykit.op._relations import tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call, no_default

from .geometry import (
    adaptive_bounds,
    adaptive_output_size,
    attr_pair,
    canonical_shape,
    from_canonical,
    get_pad_tuple2d,
    pad4,
    pair,
    pool2d_out_size,
    pool_out_size,
    to_canonical,
    to_layout,
    windows,
)

__all__ = [
    "max_pool2d",
    "avg_pool2d",
    "global_avg_pool2d",
    "global_max_pool2d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "max_pool2d_with_argmax",
    "max_pool3d",
    "avg_pool3d",
    "max_pool1d",
    "avg_pool1d",
]


# -- nn.max_pool2d, nn.avg_pool2d -----------------------------------------------------------------


_POOL2D_ATTRS = {
    "pool_size": no_default(),
    "strides": (1, 1),
    "dilation": (1, 1),
    "padding": (0, 0),
    "layout": "NCHW",
    "out_layout": "",
    "ceil_mode": False,
}


def pool2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n, c, h, w = canonical_shape(data, attrs.layout, "NCHW", "data")
    kh, kw = pair(attrs.pool_size, "pool_size")
    sh, sw = pair(attrs.strides, "strides")
    dh, dw = pair(attrs.dilation, "dilation")
    pt, pl, pb, pr = pad4(attrs.padding)
    oh = pool2d_out_size(h, kh, sh, dh, pt, pb, bool(attrs.ceil_mode))
    ow = pool2d_out_size(w, kw, sw, dw, pl, pr, bool(attrs.ceil_mode))
    return TensorType(
        to_layout((n, c, oh, ow), "NCHW", attrs.out_layout or attrs.layout), data.dtype
    )


def _pool2d_geometry(shape: tuple[int, ...], attrs: Attrs):
    kh, kw = pair(attrs.pool_size, "pool_size")
    sh, sw = pair(attrs.strides, "strides")
    dh, dw = pair(attrs.dilation, "dilation")
    pt, pl, pb, pr = pad4(attrs.padding)
    ceil = bool(attrs.ceil_mode)
    oh = pool2d_out_size(shape[2], kh, sh, dh, pt, pb, ceil)
    ow = pool2d_out_size(shape[3], kw, sw, dw, pl, pr, ceil)
    # Extra bottom/right padding so that ceil_mode's last window fits.
    eh = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - (shape[2] + pt + pb))
    ew = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - (shape[3] + pl + pr))
    return (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr), (eh, ew), (oh, ow)


def max_pool2d_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data = inputs[0]
    x = to_canonical(data, attrs.layout, "NCHW")
    (kh, kw), strides, dil, (pt, pl, pb, pr), (eh, ew), out_hw = _pool2d_geometry(x.shape, attrs)
    xp = np.pad(
        x, ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew)), constant_values=lowest_finite(x.dtype)
    )
    out = windows(xp, kh, kw, strides, dil, out_hw).max(axis=(-2, -1))
    return as_out(from_canonical(out, "NCHW", attrs.out_layout or attrs.layout), data.dtype)


def _window_counts(valid: np.ndarray, k: int, s: int, d: int, n: int) -> np.ndarray:
    """How many valid positions each of the ``n`` 1-D windows covers."""
    win = sliding_window_view(valid, (k - 1) * d + 1)[::s, ::d][:n]
    return win.sum(axis=-1)


def avg_pool2d_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data = inputs[0]
    x = to_canonical(data, attrs.layout, "NCHW")
    acc = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    (kh, kw), (sh, sw), (dh, dw), pads, (eh, ew), (oh, ow) = _pool2d_geometry(x.shape, attrs)
    pt, pl, pb, pr = pads
    h, w = x.shape[2], x.shape[3]
    xp = np.pad(x.astype(acc, copy=False), ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew)))
    sums = windows(xp, kh, kw, (sh, sw), (dh, dw), (oh, ow)).sum(axis=(-2, -1))
    # A position counts if it is real data, or padding when count_include_pad
    # (never the extra ceil_mode padding, as in TVM).
    pos_h = np.arange(h + pt + pb + eh)
    pos_w = np.arange(w + pl + pr + ew)
    if attrs.count_include_pad:
        valid_h, valid_w = pos_h < h + pt + pb, pos_w < w + pl + pr
    else:
        valid_h = (pos_h >= pt) & (pos_h < pt + h)
        valid_w = (pos_w >= pl) & (pos_w < pl + w)
    count = np.outer(
        _window_counts(valid_h, kh, sh, dh, oh), _window_counts(valid_w, kw, sw, dw, ow)
    )
    out = sums / np.maximum(count, 1).astype(acc)
    return as_out(from_canonical(out, "NCHW", attrs.out_layout or attrs.layout), data.dtype)


define_op(
    "nn.max_pool2d",
    num_inputs=1,
    attrs=_POOL2D_ATTRS,
    attrs_type_key="relay.attrs.MaxPool2DAttrs",
    type_rel=pool2d_rel,
    compute=max_pool2d_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="2-D max pooling.",
)

define_op(
    "nn.avg_pool2d",
    num_inputs=1,
    attrs={**_POOL2D_ATTRS, "count_include_pad": False},
    attrs_type_key="relay.attrs.AvgPool2DAttrs",
    type_rel=pool2d_rel,
    compute=avg_pool2d_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="2-D average pooling.",
)


def _pool_args(pool_size: Any, strides: Any, dilation: Any, padding: Any) -> dict[str, Any]:
    return {
        "pool_size": attr_pair(pool_size),
        "strides": attr_pair(strides),
        "dilation": attr_pair(dilation),
        "padding": get_pad_tuple2d(padding),
    }


def max_pool2d(
    data: Expr,
    pool_size: Any = (1, 1),
    strides: Any = (1, 1),
    dilation: Any = (1, 1),
    padding: Any = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
) -> Call:
    """2-D max pooling (padding never wins the max).

    >>> from relaykit import relay
    >>> max_pool2d(relay.var("x", shape=(1, 1, 4, 4)), 2, 2).attrs.pool_size
    [2, 2]
    """
    return make_call(
        "nn.max_pool2d",
        [data],
        **_pool_args(pool_size, strides, dilation, padding),
        layout=layout,
        out_layout=out_layout,
        ceil_mode=bool(ceil_mode),
    )


def avg_pool2d(
    data: Expr,
    pool_size: Any = (1, 1),
    strides: Any = (1, 1),
    dilation: Any = (1, 1),
    padding: Any = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> Call:
    """2-D average pooling; ``count_include_pad`` counts padding in the divisor."""
    return make_call(
        "nn.avg_pool2d",
        [data],
        **_pool_args(pool_size, strides, dilation, padding),
        layout=layout,
        out_layout=out_layout,
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
    )


# -- nn.global_avg_pool2d, nn.global_max_pool2d --------------------------------------------------


def global_pool2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n, c, _, _ = canonical_shape(data, attrs.layout, "NCHW", "data")
    return TensorType(to_layout((n, c, 1, 1), "NCHW", attrs.out_layout or attrs.layout), data.dtype)


def _global(reduce):
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        data = inputs[0]
        x = to_canonical(data, attrs.layout, "NCHW")
        out = reduce(x, axis=(2, 3), keepdims=True)
        return as_out(from_canonical(out, "NCHW", attrs.out_layout or attrs.layout), data.dtype)

    return compute


global_avg_pool2d_kernel = _global(np.mean)

global_max_pool2d_kernel = _global(np.max)

for _name, _kernel in (
    ("nn.global_avg_pool2d", global_avg_pool2d_kernel),
    ("nn.global_max_pool2d", global_max_pool2d_kernel),
):
    define_op(
        _name,
        num_inputs=1,
        attrs={"layout": "NCHW", "out_layout": ""},
        attrs_type_key="relay.attrs.GlobalPool2DAttrs",
        type_rel=global_pool2d_rel,
        compute=_kernel,
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        doc="Pool over the whole H x W plane.",
    )


def global_avg_pool2d(data: Expr, layout: str = "NCHW", out_layout: str = "") -> Call:
    """Mean over the whole spatial plane: (N, C, H, W) -> (N, C, 1, 1)."""
    return make_call("nn.global_avg_pool2d", [data], layout=layout, out_layout=out_layout)


def global_max_pool2d(data: Expr, layout: str = "NCHW", out_layout: str = "") -> Call:
    """Maximum over the whole spatial plane: (N, C, H, W) -> (N, C, 1, 1)."""
    return make_call("nn.global_max_pool2d", [data], layout=layout, out_layout=out_layout)


# -- nn.adaptive_avg_pool2d, nn.adaptive_max_pool2d ----------------------------------------------


def adaptive_pool2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n, c, h, w = canonical_shape(data, attrs.layout, "NCHW", "data")
    if h == 0 or w == 0:
        raise TypeRelError(f"cannot pool an empty input {data}")
    oh, ow = adaptive_output_size(attrs.output_size, h, w)
    return TensorType(
        to_layout((n, c, oh, ow), "NCHW", attrs.out_layout or attrs.layout), data.dtype
    )


def _adaptive_index(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Gather indices (out, kmax) of the adaptive windows and their validity mask."""
    start, end = adaptive_bounds(size, out)
    kmax = int((end - start).max())
    idx = start[:, None] + np.arange(kmax)[None, :]
    valid = idx < end[:, None]
    return np.minimum(idx, end[:, None] - 1), valid


def _adaptive(kind: str):
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        data = inputs[0]
        x = to_canonical(data, attrs.layout, "NCHW")
        h, w = x.shape[2], x.shape[3]
        oh, ow = adaptive_output_size(attrs.output_size, h, w)
        ih, vh = _adaptive_index(h, oh)
        iw, vw = _adaptive_index(w, ow)
        g = x[:, :, ih[:, :, None, None], iw[None, None, :, :]]  # (N, C, OH, KH, OW, KW)
        if kind == "max":
            out = g.max(axis=(3, 5))
        else:
            acc = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
            mask = (vh[:, :, None, None] & vw[None, None, :, :]).astype(acc)
            out = (g * mask).sum(axis=(3, 5)) / mask.sum(axis=(1, 3))
        return as_out(from_canonical(out, "NCHW", attrs.out_layout or attrs.layout), data.dtype)

    return compute


adaptive_avg_pool2d_kernel = _adaptive("avg")

adaptive_max_pool2d_kernel = _adaptive("max")

for _name, _kernel in (
    ("nn.adaptive_avg_pool2d", adaptive_avg_pool2d_kernel),
    ("nn.adaptive_max_pool2d", adaptive_max_pool2d_kernel),
):
    define_op(
        _name,
        num_inputs=1,
        attrs={"output_size": (), "layout": "NCHW", "out_layout": ""},
        attrs_type_key="relay.attrs.AdaptivePool2DAttrs",
        type_rel=adaptive_pool2d_rel,
        compute=_kernel,
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        doc="Pool to a fixed output size.",
    )

del _name, _kernel


def _output_size(output_size: Any) -> tuple[Any, ...]:
    if output_size is None:
        return ()
    if isinstance(output_size, (int, np.integer)):
        return (int(output_size), int(output_size))
    return tuple(None if s is None else int(s) for s in output_size)


def adaptive_avg_pool2d(
    data: Expr, output_size: Any = None, layout: str = "NCHW", out_layout: str = ""
) -> Call:
    """Average pooling to a fixed (oh, ow) output, with PyTorch's window bounds."""
    return make_call(
        "nn.adaptive_avg_pool2d",
        [data],
        output_size=_output_size(output_size),
        layout=layout,
        out_layout=out_layout,
    )


def adaptive_max_pool2d(
    data: Expr, output_size: Any = None, layout: str = "NCHW", out_layout: str = ""
) -> Call:
    """Max pooling to a fixed (oh, ow) output."""
    return make_call(
        "nn.adaptive_max_pool2d",
        [data],
        output_size=_output_size(output_size),
        layout=layout,
        out_layout=out_layout,
    )


# -- nn.max_pool2d_with_argmax -------------------------------------------------------------------


def _argmax_pool_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    if attrs.layout != "NCHW":
        raise TypeRelError(f"max_pool2d_with_argmax supports layout NCHW, got {attrs.layout}")
    if attrs.storage_order not in (0, 1):
        raise TypeRelError(f"storage_order must be 0 or 1, got {attrs.storage_order}")
    values = pool2d_rel(arg_types, attrs)
    assert isinstance(values, TensorType)
    return TupleType([values, TensorType(values.shape, "int64")])


def _argmax_pool_kernel(
    inputs: Sequence[np.ndarray], attrs: Attrs
) -> tuple[np.ndarray, np.ndarray]:
    x = inputs[0]
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr), (eh, ew), (oh, ow) = _pool2d_geometry(
        x.shape, attrs
    )
    pad = ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew))
    xp = np.pad(x, pad, constant_values=lowest_value(x.dtype))
    # Positions in the padded array; padding is masked out so that it never wins.
    rows = np.arange(xp.shape[2]) - pt
    cols = np.arange(xp.shape[3]) - pl
    valid = ((rows >= 0) & (rows < h))[:, None] & ((cols >= 0) & (cols < w))[None, :]
    win = windows(xp, kh, kw, (sh, sw), (dh, dw), (oh, ow)).reshape(n, c, oh, ow, kh * kw)
    ok = windows(valid[None, None], kh, kw, (sh, sw), (dh, dw), (oh, ow))
    ok = ok.reshape(1, 1, oh, ow, kh * kw)
    best = np.argmax(np.where(ok, win.astype(np.float64), -np.inf), axis=-1)
    values = np.take_along_axis(win, best[..., None], axis=-1)[..., 0]
    ki, kj = np.divmod(best, kw)
    hh = np.arange(oh)[:, None] * sh + ki * dh - pt
    ww = np.arange(ow)[None, :] * sw + kj * dw - pl
    plane = (np.arange(n)[:, None, None, None] * c + np.arange(c)[None, :, None, None]) * (h * w)
    index = plane + ww * h + hh if attrs.storage_order else plane + hh * w + ww
    return values.astype(x.dtype), index.astype(np.int64)


define_op(
    "nn.max_pool2d_with_argmax",
    num_inputs=1,
    num_outputs=2,
    attrs={
        "pool_size": (1, 1),
        "strides": (1, 1),
        "dilation": (1, 1),
        "padding": (0, 0, 0, 0),
        "layout": "NCHW",
        "out_layout": "",
        "ceil_mode": False,
        "storage_order": 0,
    },
    attrs_type_key="relay.attrs.MaxPool2DAttrs",
    type_rel=_argmax_pool_rel,
    compute=_argmax_pool_kernel,
    pattern=OpPattern.OPAQUE,
    doc="2-D max pooling returning (values, flat indices of the maxima).",
)


def max_pool2d_with_argmax(
    data: Expr,
    pool_size: Sequence[int] = (1, 1),
    strides: Sequence[int] = (1, 1),
    dilation: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
    layout: str = "NCHW",
    ceil_mode: bool = False,
    storage_order: int = 0,
) -> TupleWrapper:
    """``(values, indices)`` of a 2-D max pooling of NCHW ``data``; ``indices`` (int64)
    are positions in the flattened input (see the module docstring)."""
    pad = tuple(padding)
    if len(pad) == 2:
        pad = pad * 2
    call = make_call(
        "nn.max_pool2d_with_argmax",
        [data],
        pool_size=tuple(pool_size),
        strides=tuple(strides),
        dilation=tuple(dilation),
        padding=pad,
        layout=layout,
        ceil_mode=bool(ceil_mode),
        storage_order=int(storage_order),
    )
    return TupleWrapper(call, 2)


# -- nn.max_pool3d, nn.avg_pool3d ----------------------------------------------------------------


def _pool3d_geometry(shape: Sequence[int], attrs: Attrs) -> list[tuple[int, ...]]:
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


_LAYOUTS_3D = ("NCDHW", "NDHWC")


def _pool3d_layouts(attrs: Attrs) -> tuple[str, str]:
    layout = str(attrs.layout)
    out_layout = str(getattr(attrs, "out_layout", "") or layout)
    if layout not in _LAYOUTS_3D or out_layout not in _LAYOUTS_3D:
        raise TypeRelError(f"3-D pooling takes NCDHW or NDHWC tensors, got layout {layout!r}")
    return layout, out_layout


def _pool3d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    layout, out_layout = _pool3d_layouts(attrs)
    if data.ndim != 5:
        raise TypeRelError(f"3-D pooling takes a 5-D tensor, got {data} ({layout})")
    dims = dict(zip(layout, data.shape, strict=True))
    canonical = tuple(dims[a] for a in "NCDHW")
    out = dict(
        zip("NCDHW", canonical[:2] + tuple(_pool3d_geometry(canonical, attrs)[4]), strict=True)
    )
    return TensorType(tuple(out[a] for a in out_layout), data.dtype)


def _windows_nd(x: np.ndarray, k, s, d, out) -> np.ndarray:
    r = len(k)
    eff = tuple((k[i] - 1) * d[i] + 1 for i in range(r))
    win = sliding_window_view(x, eff, axis=tuple(range(2, 2 + r)))
    index: tuple[slice, ...] = (slice(None), slice(None))
    index += tuple(slice(None, s[i] * (out[i] - 1) + 1, s[i]) for i in range(r))
    index += tuple(slice(None, None, d[i]) for i in range(r))
    return win[index]


def _pool3d_kernel(kind: str) -> Any:
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        layout, out_layout = _pool3d_layouts(attrs)
        out = ncdhw(to_canonical(inputs[0], layout, "NCDHW"), attrs)
        return np.ascontiguousarray(from_canonical(out, "NCDHW", out_layout))

    def ncdhw(x: np.ndarray, attrs: Attrs) -> np.ndarray:
        k, s, d, p, out = _pool3d_geometry(x.shape, attrs)
        r = len(k)
        extra = [
            max(0, (out[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - (x.shape[2 + i] + p[i] + p[r + i]))
            for i in range(r)
        ]
        width = [(0, 0), (0, 0)] + [(p[i], p[r + i] + extra[i]) for i in range(r)]
        axes = tuple(range(-r, 0))
        if kind == "max":
            padded = np.pad(x, width, constant_values=lowest_finite(x.dtype))
            return as_out(_windows_nd(padded, k, s, d, out).max(axis=axes), x.dtype)
        acc = x.astype(np.float64)
        sums = _windows_nd(np.pad(acc, width), k, s, d, out).sum(axis=axes)
        valid = np.zeros(x.shape[2:], dtype=np.float64)
        valid[...] = 1.0
        if attrs.count_include_pad:
            vwidth = [(p[i], p[r + i]) for i in range(r)]
            valid = np.pad(valid, vwidth, constant_values=1.0)
            valid = np.pad(valid, [(0, e) for e in extra])
        else:
            valid = np.pad(valid, [(p[i], p[r + i] + extra[i]) for i in range(r)])
        counts = _windows_nd(valid[None, None], k, s, d, out).sum(axis=axes)
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
    compute=_pool3d_kernel("max"),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="3-D max pooling (NCDHW or NDHWC).",
)

define_op(
    "nn.avg_pool3d",
    num_inputs=1,
    attrs={**_POOL3D_ATTRS, "count_include_pad": False},
    attrs_type_key="relay.attrs.AvgPool3DAttrs",
    type_rel=_pool3d_rel,
    compute=_pool3d_kernel("avg"),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="3-D average pooling (NCDHW or NDHWC).",
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


# -- nn.max_pool1d, nn.avg_pool1d: the 2-D pools over a unit height -------------------------------

_POOL1D_ATTRS = {
    "pool_size": None,
    "strides": (1,),
    "dilation": (1,),
    "padding": (0,),
    "layout": "NCW",
    "out_layout": "",
    "ceil_mode": False,
}
_LAYOUT_2D = {"NCW": "NCHW", "NWC": "NHWC"}


def _one(value: Any, what: str) -> int:
    items = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    if len(items) != 1:
        raise TypeRelError(f"pool1d {what} must have 1 value, got {items}")
    return int(items[0])


def _as_2d(attrs: Attrs) -> tuple[Attrs, int]:
    """The attributes of the equivalent 2-D pool, and where its unit height axis is."""
    layout = _LAYOUT_2D.get(attrs.layout)
    out_layout = _LAYOUT_2D.get(attrs.out_layout or attrs.layout)
    if layout is None or out_layout is None:
        raise TypeRelError(f"pool1d layout must be NCW or NWC, got {attrs.layout!r}")
    pad = tuple(attrs.padding) if isinstance(attrs.padding, (list, tuple)) else (attrs.padding,)
    if len(pad) not in (1, 2):
        raise TypeRelError(f"pool1d padding must have 1 or 2 values, got {pad}")
    left, right = (int(pad[0]), int(pad[-1]))
    values = {
        "pool_size": (1, _one(attrs.pool_size, "pool_size")),
        "strides": (1, _one(attrs.strides, "strides")),
        "dilation": (1, _one(attrs.dilation, "dilation")),
        "padding": (0, left, 0, right),
        "layout": layout,
        "out_layout": out_layout,
        "ceil_mode": bool(attrs.ceil_mode),
    }
    if "count_include_pad" in attrs:
        values["count_include_pad"] = bool(attrs.count_include_pad)
    return Attrs(values, "DictAttrs"), layout.index("H")


def pool1d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.ndim != 3:
        raise TypeRelError(f"pool1d takes a 3-d tensor, got {data}")
    attrs2, h = _as_2d(attrs)
    shape = list(data.shape)
    shape.insert(h, 1)
    out = pool2d_rel([TensorType(tuple(shape), data.dtype)], attrs2)
    assert isinstance(out, TensorType)
    oshape = list(out.shape)
    del oshape[attrs2.out_layout.index("H")]
    return TensorType(tuple(oshape), data.dtype)


def _pool1d_kernel(kernel2d: Any) -> Any:
    def kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        attrs2, h = _as_2d(attrs)
        out = kernel2d([np.expand_dims(inputs[0], h)], attrs2)
        return np.ascontiguousarray(np.squeeze(out, attrs2.out_layout.index("H")))

    return kernel


define_op(
    "nn.max_pool1d",
    num_inputs=1,
    attrs=_POOL1D_ATTRS,
    attrs_type_key="relay.attrs.MaxPool1DAttrs",
    type_rel=pool1d_rel,
    compute=_pool1d_kernel(max_pool2d_kernel),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="1-D max pooling.",
)
define_op(
    "nn.avg_pool1d",
    num_inputs=1,
    attrs={**_POOL1D_ATTRS, "count_include_pad": False},
    attrs_type_key="relay.attrs.AvgPool1DAttrs",
    type_rel=pool1d_rel,
    compute=_pool1d_kernel(avg_pool2d_kernel),
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="1-D average pooling.",
)


def _tuple1(value: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else (int(value),)


def max_pool1d(
    data: Expr,
    pool_size: Any = (1,),
    strides: Any = (1,),
    dilation: Any = (1,),
    padding: Any = (0,),
    layout: str = "NCW",
    out_layout: str = "",
    ceil_mode: bool = False,
) -> Call:
    """1-D max pooling over the W axis of an NCW (or NWC) tensor."""
    return make_call(
        "nn.max_pool1d",
        [data],
        pool_size=_tuple1(pool_size),
        strides=_tuple1(strides),
        dilation=_tuple1(dilation),
        padding=_tuple1(padding),
        layout=layout,
        out_layout=out_layout,
        ceil_mode=bool(ceil_mode),
    )


def avg_pool1d(
    data: Expr,
    pool_size: Any = (1,),
    strides: Any = (1,),
    dilation: Any = (1,),
    padding: Any = (0,),
    layout: str = "NCW",
    out_layout: str = "",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> Call:
    """1-D average pooling; ``count_include_pad`` counts padding in the divisor."""
    return make_call(
        "nn.avg_pool1d",
        [data],
        pool_size=_tuple1(pool_size),
        strides=_tuple1(strides),
        dilation=_tuple1(dilation),
        padding=_tuple1(padding),
        layout=layout,
        out_layout=out_layout,
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
    )
