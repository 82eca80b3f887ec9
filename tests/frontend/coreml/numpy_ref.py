"""Float64 NumPy references of Core ML's layers, written from the spec's formulas."""

from __future__ import annotations

import math

import numpy as np


def same_pads(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TensorFlow's SAME padding, extra pixel at the end (BOTTOM_RIGHT_HEAVY)."""
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def conv2d(x, w, b, stride, pads, dilation=(1, 1), groups=1):
    """x [N, C, H, W], w [O, C/groups, KH, KW]; pads (top, bottom, left, right)."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), pads[:2], pads[2:]))
    n, _c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    eh, ew = dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1
    oh, ow = (h - eh) // stride[0] + 1, (wd - ew) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg : (g + 1) * cg]
        for i in range(oh):
            for j in range(ow):
                patch = xs[
                    :, :,
                    i * stride[0] : i * stride[0] + eh : dilation[0],
                    j * stride[1] : j * stride[1] + ew : dilation[1],
                ]  # fmt: skip
                out[:, g * og : (g + 1) * og, i, j] = np.einsum(
                    "nchw,ochw->no", patch, w[g * og : (g + 1) * og].astype(np.float64)
                )
    return out + (0 if b is None else b.reshape(1, -1, 1, 1))


def deconv2d(x, w, b, stride, groups=1):
    """Transposed convolution, no padding; w [C_in, O/groups, KH, KW]."""
    n, c, h, wd = x.shape
    _cin, og, kh, kw = w.shape
    out = np.zeros((n, og * groups, (h - 1) * stride[0] + kh, (wd - 1) * stride[1] + kw))
    cg = c // groups
    for ci in range(c):
        g = ci // cg
        for i in range(h):
            for j in range(wd):
                out[:, g * og : (g + 1) * og,
                    i * stride[0] : i * stride[0] + kh,
                    j * stride[1] : j * stride[1] + kw] += (
                    x[:, ci, i, j][:, None, None, None] * w[ci][None]
                )  # fmt: skip
    return out + (0 if b is None else b.reshape(1, -1, 1, 1))


def pool2d(x, kind, kernel, stride, pads, exclude_pad=True):
    """Max/average pooling; pads (top, bottom, left, right)."""
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), pads[:2], pads[2:]), constant_values=fill)
    ones = np.pad(np.ones(x.shape[2:]), (pads[:2], pads[2:]))
    n, c, h, w = xp.shape
    oh, ow = (h - kernel[0]) // stride[0] + 1, (w - kernel[1]) // stride[1] + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = slice(i * stride[0], i * stride[0] + kernel[0])
            cols = slice(j * stride[1], j * stride[1] + kernel[1])
            win = xp[:, :, rows, cols]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                count = ones[rows, cols].sum() if exclude_pad else kernel[0] * kernel[1]
                out[:, :, i, j] = win.sum(axis=(2, 3)) / count
    return out


def softmax(x, axis=1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def lrn(x, size, alpha, beta, k):
    """Across channels: x / (k + alpha / size * sum of squares in the window) ** beta."""
    c = x.shape[1]
    sq = x.astype(np.float64) ** 2
    out = np.empty_like(sq)
    for ch in range(c):
        lo, hi = max(0, ch - (size - 1) // 2), min(c, ch + size // 2 + 1)
        out[:, ch] = x[:, ch] / (k + alpha / size * sq[:, lo:hi].sum(axis=1)) ** beta
    return out


def bilinear_align_corners(x, oh, ow):
    _n, _c, h, w = x.shape
    ys = np.linspace(0, h - 1, oh) if oh > 1 else np.zeros(1)
    xs = np.linspace(0, w - 1, ow) if ow > 1 else np.zeros(1)
    y0 = np.floor(ys).astype(int)
    x0 = np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    a = x[:, :, y0][:, :, :, x0]
    b = x[:, :, y0][:, :, :, x1]
    cc = x[:, :, y1][:, :, :, x0]
    d = x[:, :, y1][:, :, :, x1]
    return a * (1 - fy) * (1 - fx) + b * (1 - fy) * fx + cc * fy * (1 - fx) + d * fy * fx
