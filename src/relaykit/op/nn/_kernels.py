"""Reference NumPy kernels of the ``nn.*`` operators.

Convolutions use im2col (``sliding_window_view``) and one batched ``matmul``
over the groups, so BLAS does the work and grouped/depthwise convolutions need
no per-channel Python loop. Data is moved to canonical ``NCHW``/``OIHW`` order
first and the result moved to the output layout last.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from relaykit.ir.attrs import Attrs
from relaykit.ir.types import check_dtype
from relaykit.op._numeric import as_out, lowest_value

from ._relations import adaptive_output_size, layout_perm, pad4, pair, pool2d_out_size

__all__ = [
    "conv2d",
    "conv2d_transpose",
    "dense",
    "batch_matmul",
    "max_pool2d",
    "avg_pool2d",
    "global_avg_pool2d",
    "global_max_pool2d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "batch_norm",
    "layer_norm",
    "softmax",
    "log_softmax",
    "pad",
]


def _to_canonical(x: np.ndarray, layout: str, canonical: str) -> np.ndarray:
    perm = layout_perm(layout, canonical)
    return x if perm == tuple(range(x.ndim)) else np.transpose(x, perm)


def _from_canonical(x: np.ndarray, canonical: str, layout: str) -> np.ndarray:
    perm = tuple(canonical.index(c) for c in layout)
    return x if perm == tuple(range(x.ndim)) else np.ascontiguousarray(np.transpose(x, perm))


def _out_dtype(attrs: Attrs, x: np.ndarray) -> np.dtype:
    return np.dtype(check_dtype(attrs.out_dtype)) if attrs.out_dtype else x.dtype


def _acc_dtype(out: np.dtype) -> np.dtype:
    """The accumulation type: float64 for every float, int64 for integers.

    A reference kernel is the oracle the backends are checked against, so its sums are
    rounded once, at the end: the result then depends neither on where BLAS cuts the
    matrix into blocks (channels with equal weights give equal outputs) nor on the order
    of the additions.
    """
    if out.kind == "f":
        return np.dtype(np.float64)
    return np.dtype(np.int64)


def _windows(
    x: np.ndarray,
    kh: int,
    kw: int,
    strides: tuple[int, int],
    dilation: tuple[int, int],
    out_hw: tuple[int, int],
) -> np.ndarray:
    """The (N, C, OH, OW, KH, KW) strided window view of an already-padded NCHW array."""
    (sh, sw), (dh, dw) = strides, dilation
    eff_h, eff_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    win = sliding_window_view(x, (eff_h, eff_w), axis=(2, 3))
    return win[:, :, ::sh, ::sw, ::dh, ::dw][:, :, : out_hw[0], : out_hw[1]]


def _grouped_conv(
    x: np.ndarray,
    w: np.ndarray,
    groups: int,
    strides: tuple[int, int],
    dilation: tuple[int, int],
    padding: tuple[int, int, int, int],
    acc: np.dtype,
) -> np.ndarray:
    """NCHW x OIHW -> NCHW grouped convolution by im2col and one batched matmul."""
    n, _c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    pt, pl, pb, pr = padding
    xp = np.pad(x.astype(acc, copy=False), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    (sh, sw), (dh, dw) = strides, dilation
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (wd + pl + pr - (kw - 1) * dw - 1) // sw + 1
    win = _windows(xp, kh, kw, strides, dilation, (oh, ow))
    g, og = groups, o // groups
    cols = win.reshape(n, g, cg, oh, ow, kh, kw).transpose(1, 0, 3, 4, 2, 5, 6)
    cols = cols.reshape(g, n * oh * ow, cg * kh * kw)
    wmat = w.astype(acc, copy=False).reshape(g, og, cg * kh * kw).transpose(0, 2, 1)
    out = np.matmul(cols, wmat)  # (G, N*OH*OW, OG)
    return out.reshape(g, n, oh, ow, og).transpose(1, 0, 4, 2, 3).reshape(n, o, oh, ow)


def conv2d(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, weight = inputs
    out_dtype = _out_dtype(attrs, data)
    x = _to_canonical(data, attrs.data_layout, "NCHW")
    w = _to_canonical(weight, attrs.kernel_layout, "OIHW")
    out = _grouped_conv(
        x,
        w,
        attrs.groups,
        pair(attrs.strides, "strides"),
        pair(attrs.dilation, "dilation"),
        pad4(attrs.padding),
        _acc_dtype(out_dtype),
    )
    out = _from_canonical(out, "NCHW", attrs.out_layout or attrs.data_layout)
    return as_out(out, out_dtype)


def conv2d_transpose(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    """Transposed convolution: per-group matmul to columns, then col2im over the kernel taps."""
    data, weight = inputs
    out_dtype = _out_dtype(attrs, data)
    acc = _acc_dtype(out_dtype)
    x = _to_canonical(data, attrs.data_layout, "NCHW").astype(acc, copy=False)
    w = _to_canonical(weight, attrs.kernel_layout, "IOHW").astype(acc, copy=False)
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    g = attrs.groups
    cg = c // g
    (sh, sw), (dh, dw) = pair(attrs.strides, "strides"), pair(attrs.dilation, "dilation")
    pt, pl, pb, pr = pad4(attrs.padding)
    oph, opw = pair(attrs.output_padding or 0, "output_padding", minimum=0)
    # cols[g, n*h*w, og*kh*kw] = x_g (N*H*W, Cg) @ w_g (Cg, OG*KH*KW)
    xg = x.reshape(n, g, cg, h * wd).transpose(1, 0, 3, 2).reshape(g, n * h * wd, cg)
    wg = w.reshape(g, cg, og * kh * kw)
    cols = np.matmul(xg, wg).reshape(g, n, h, wd, og, kh, kw)
    full_h = (h - 1) * sh + (kh - 1) * dh + 1 + oph
    full_w = (wd - 1) * sw + (kw - 1) * dw + 1 + opw
    buf = np.zeros((g, n, og, full_h, full_w), dtype=acc)
    for i in range(kh):  # loop over kernel taps (not elements): each tap is one strided add
        for j in range(kw):
            tap = cols[:, :, :, :, :, i, j].transpose(0, 1, 4, 2, 3)
            buf[
                :,
                :,
                :,
                i * dh : i * dh + (h - 1) * sh + 1 : sh,
                j * dw : j * dw + (wd - 1) * sw + 1 : sw,
            ] += tap
    oh = full_h - pt - pb
    ow = full_w - pl - pr
    out = buf[:, :, :, pt : pt + oh, pl : pl + ow].transpose(1, 0, 2, 3, 4)
    out = out.reshape(n, g * og, oh, ow)
    out = _from_canonical(out, "NCHW", attrs.out_layout or attrs.data_layout)
    return as_out(out, out_dtype)


def dense(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, weight = inputs
    out_dtype = _out_dtype(attrs, data)
    acc = _acc_dtype(out_dtype)
    return as_out(
        np.matmul(data.astype(acc, copy=False), weight.astype(acc, copy=False).T), out_dtype
    )


def batch_matmul(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    a, b = inputs
    out_dtype = _out_dtype(attrs, a)
    acc = _acc_dtype(out_dtype)
    a = a.astype(acc, copy=False)
    b = b.astype(acc, copy=False)
    if attrs.transpose_a:
        a = a.transpose(0, 2, 1)
    if attrs.transpose_b:
        b = b.transpose(0, 2, 1)
    return as_out(np.matmul(a, b), out_dtype)


# -- pooling --------------------------------------------------------------------------------------


def _pool_geometry(shape: tuple[int, ...], attrs: Attrs):
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


def max_pool2d(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data = inputs[0]
    x = _to_canonical(data, attrs.layout, "NCHW")
    (kh, kw), strides, dil, (pt, pl, pb, pr), (eh, ew), out_hw = _pool_geometry(x.shape, attrs)
    xp = np.pad(
        x, ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew)), constant_values=lowest_value(x.dtype)
    )
    out = _windows(xp, kh, kw, strides, dil, out_hw).max(axis=(-2, -1))
    return as_out(_from_canonical(out, "NCHW", attrs.out_layout or attrs.layout), data.dtype)


def _window_counts(valid: np.ndarray, k: int, s: int, d: int, n: int) -> np.ndarray:
    """How many valid positions each of the ``n`` 1-D windows covers."""
    win = sliding_window_view(valid, (k - 1) * d + 1)[::s, ::d][:n]
    return win.sum(axis=-1)


def avg_pool2d(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data = inputs[0]
    x = _to_canonical(data, attrs.layout, "NCHW")
    acc = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    (kh, kw), (sh, sw), (dh, dw), pads, (eh, ew), (oh, ow) = _pool_geometry(x.shape, attrs)
    pt, pl, pb, pr = pads
    h, w = x.shape[2], x.shape[3]
    xp = np.pad(x.astype(acc, copy=False), ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew)))
    sums = _windows(xp, kh, kw, (sh, sw), (dh, dw), (oh, ow)).sum(axis=(-2, -1))
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
    return as_out(_from_canonical(out, "NCHW", attrs.out_layout or attrs.layout), data.dtype)


def _global(reduce):
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        data = inputs[0]
        x = _to_canonical(data, attrs.layout, "NCHW")
        out = reduce(x, axis=(2, 3), keepdims=True)
        return as_out(_from_canonical(out, "NCHW", attrs.out_layout or attrs.layout), data.dtype)

    return compute


global_avg_pool2d = _global(np.mean)
global_max_pool2d = _global(np.max)


def _adaptive_index(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Gather indices (out, kmax) of the adaptive windows and their validity mask."""
    i = np.arange(out)
    start = (i * size) // out
    end = -((-(i + 1) * size) // out)
    kmax = int((end - start).max())
    idx = start[:, None] + np.arange(kmax)[None, :]
    valid = idx < end[:, None]
    return np.minimum(idx, end[:, None] - 1), valid


def _adaptive(kind: str):
    def compute(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        data = inputs[0]
        x = _to_canonical(data, attrs.layout, "NCHW")
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
        return as_out(_from_canonical(out, "NCHW", attrs.out_layout or attrs.layout), data.dtype)

    return compute


adaptive_avg_pool2d = _adaptive("avg")
adaptive_max_pool2d = _adaptive("max")


# -- normalisation --------------------------------------------------------------------------------


def _along(v: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = v.shape[0]
    return v.reshape(shape)


def batch_norm(inputs: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    data, gamma, beta, mean, var = inputs
    axis = attrs.axis % data.ndim
    scale = 1.0 / np.sqrt(var + np.asarray(attrs.epsilon, data.dtype))
    if attrs.scale:
        scale = scale * gamma
    out = (data - _along(mean, axis, data.ndim)) * _along(scale, axis, data.ndim)
    if attrs.center:
        out = out + _along(beta, axis, data.ndim)
    return as_out(out, data.dtype), mean.copy(), var.copy()


def layer_norm(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, gamma, beta = inputs
    axis = attrs.axis % data.ndim
    mean = data.mean(axis=axis, keepdims=True)
    var = ((data - mean) ** 2).mean(axis=axis, keepdims=True)
    out = (data - mean) / np.sqrt(var + np.asarray(attrs.epsilon, data.dtype))
    if attrs.scale:
        out = out * _along(gamma, axis, data.ndim)
    if attrs.center:
        out = out + _along(beta, axis, data.ndim)
    return as_out(out, data.dtype)


def softmax(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    with np.errstate(all="ignore"):
        e = np.exp(x - x.max(axis=attrs.axis, keepdims=True))
        return as_out(e / e.sum(axis=attrs.axis, keepdims=True), x.dtype)


def log_softmax(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    with np.errstate(all="ignore"):
        shifted = x - x.max(axis=attrs.axis, keepdims=True)
        lse = np.log(np.exp(shifted).sum(axis=attrs.axis, keepdims=True))
        return as_out(shifted - lse, x.dtype)


def pad(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, value = inputs
    width = [tuple(p) for p in attrs.pad_width]
    if attrs.pad_mode == "constant":
        out = np.pad(data, width, mode="constant", constant_values=value.astype(data.dtype))
    else:
        out = np.pad(data, width, mode=attrs.pad_mode)
    return as_out(out, data.dtype)
