"""``vision.roi_align`` and ``nn.max_pool2d_with_argmax`` against loops written from
their definitions (one sample, one window at a time)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relaykit.ir import TensorType, TupleType
from relaykit.op import TypeRelError, nn, vision


def naive_argmax_pool(x, pool, strides, dilation, padding, storage_order=0):
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = pool, strides, dilation
    pt, pl, pb, pr = padding
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pl + pr - (kw - 1) * dw - 1) // sw + 1
    values = np.zeros((n, c, oh, ow), x.dtype)
    index = np.zeros((n, c, oh, ow), np.int64)
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    best = None
                    for a in range(kh):
                        for e in range(kw):
                            y, z = i * sh + a * dh - pt, j * sw + e * dw - pl
                            if (
                                0 <= y < h
                                and 0 <= z < w
                                and (best is None or x[b, ch, y, z] > best[0])
                            ):
                                best = (x[b, ch, y, z], y, z)
                    values[b, ch, i, j] = best[0]
                    plane = (b * c + ch) * h * w
                    index[b, ch, i, j] = plane + (
                        best[2] * h + best[1] if storage_order else best[1] * w + best[2]
                    )
    return values, index


@pytest.mark.parametrize(
    "pool, strides, dilation, padding, order",
    [
        ((2, 2), (2, 2), (1, 1), (0, 0, 0, 0), 0),
        ((3, 3), (1, 2), (1, 1), (1, 1, 1, 1), 0),
        ((2, 3), (1, 1), (2, 1), (0, 1, 2, 0), 1),
    ],
)
def test_max_pool2d_with_argmax_matches_a_loop(
    rng, run, tvar, pool, strides, dilation, padding, order
):
    x = rng.standard_normal((2, 3, 7, 6)).astype("float32")
    call = nn.max_pool2d_with_argmax(
        tvar("x", x.shape), pool, strides, dilation, padding, storage_order=order
    ).astuple()
    values, index = run(call, x)
    want_v, want_i = naive_argmax_pool(x, pool, strides, dilation, padding, order)
    np.testing.assert_array_equal(values, want_v)
    np.testing.assert_array_equal(index, want_i)
    # the indices point at the values in the flattened input
    flat = x.transpose(0, 1, 3, 2).reshape(-1) if order else x.reshape(-1)
    np.testing.assert_array_equal(flat[index], values)


def test_max_pool2d_with_argmax_type(rel, tvar):
    call = nn.max_pool2d_with_argmax(tvar("x", (1, 2, 5, 5)), (2, 2), (2, 2)).astuple()
    assert rel(call) == TupleType([TensorType((1, 2, 2, 2)), TensorType((1, 2, 2, 2), "int64")])
    bad = nn.max_pool2d_with_argmax(tvar("x", (1, 2, 5, 5)), (2, 2), layout="NHWC").astuple()
    with pytest.raises(TypeRelError, match="layout NCHW"):
        rel(bad)


def bilinear(img, y, x):
    """The value of (C, H, W) ``img`` at (y, x) as RoiAlign reads it: 0 outside
    [-1, size], clamped at the border."""
    h, w = img.shape[1:]
    if y < -1 or y > h or x < -1 or x > w:
        return np.zeros(img.shape[0]), [np.zeros(img.shape[0])] * 4
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = min(int(y), h - 1), min(int(x), w - 1)
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    ly = 0.0 if y0 == h - 1 else y - y0
    lx = 0.0 if x0 == w - 1 else x - x0
    terms = [
        (1 - ly) * (1 - lx) * img[:, y0, x0],
        (1 - ly) * lx * img[:, y0, x1],
        ly * (1 - lx) * img[:, y1, x0],
        ly * lx * img[:, y1, x1],
    ]
    return sum(terms), terms


def naive_roi_align(data, rois, pooled, scale, ratio, mode, aligned, corners=False):
    ph, pw = pooled
    out = np.zeros((len(rois), data.shape[1], ph, pw))
    off = 0.5 if aligned else 0.0
    for r, (b, x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):  # positions in float64
        x1, y1, x2, y2 = (v * scale - off for v in (x1, y1, x2, y2))
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = ratio or math.ceil(rh / ph)
        gw = ratio or math.ceil(rw / pw)
        for i in range(ph):
            for j in range(pw):
                samples = []
                for a in range(gh):
                    for e in range(gw):
                        y = y1 + i * rh / ph + (a + 0.5) * rh / ph / gh
                        x = x1 + j * rw / pw + (e + 0.5) * rw / pw / gw
                        value, terms = bilinear(data[int(b)].astype(np.float64), y, x)
                        samples.append(np.max(terms, axis=0) if corners else value)
                if samples:
                    agg = np.mean(samples, axis=0) if mode == "avg" else np.max(samples, axis=0)
                    out[r, :, i, j] = agg
    return out


@pytest.mark.parametrize(("mode", "corners"), [("avg", False), ("max", False), ("max", True)])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align_matches_a_loop(rng, run, tvar, mode, corners, aligned, ratio):
    data = rng.standard_normal((2, 3, 9, 10)).astype("float32")
    rois = np.array(
        [
            [0, 0.5, 1.0, 6.0, 7.5],
            [1, 2.0, 2.0, 2.2, 2.4],
            [1, -3.0, -2.0, 12.0, 11.0],
            [0, 4, 4, 4, 4],
        ],
        "float32",
    )
    call = vision.roi_align(
        tvar("d", data.shape),
        tvar("r", rois.shape),
        (3, 2),
        0.9,
        ratio,
        mode=mode,
        aligned=aligned,
        max_over_corners=corners,
    )
    got = run(call, data, rois)
    want = naive_roi_align(data, rois, (3, 2), 0.9, ratio, mode, aligned, corners)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    nhwc = vision.roi_align(
        tvar("d", data.transpose(0, 2, 3, 1).shape),
        tvar("r", rois.shape),
        (3, 2),
        0.9,
        ratio,
        layout="NHWC",
        mode=mode,
        aligned=aligned,
        max_over_corners=corners,
    )
    got = run(nhwc, np.ascontiguousarray(data.transpose(0, 2, 3, 1)), rois)
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)


def test_roi_align_type_errors(rel, tvar):
    call = vision.roi_align(tvar("d", (1, 3, 8, 8)), tvar("r", (4, 4)))
    with pytest.raises(TypeRelError, match=r"\(R, 5\)"):
        rel(call)
    ok = vision.roi_align(tvar("d", (1, 3, 8, 8)), tvar("r", (4, 5)), pooled_size=(2, 3))
    assert rel(ok) == TensorType((4, 3, 2, 3))
