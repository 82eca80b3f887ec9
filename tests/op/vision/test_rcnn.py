"""``vision.roi_align`` against a loop written from its definition (one sample at a time)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relaykit.ir import TensorType
from relaykit.op import TypeRelError, vision


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
