"""image.grid_sample against sampling loops written point by point."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.op import image


def _bilinear_loop(img: np.ndarray, gx: float, gy: float, align: bool) -> float:
    """One bilinear sample with zero padding, written out point by point."""
    h, w = img.shape
    if align:
        x, y = (gx + 1) / 2 * (w - 1), (gy + 1) / 2 * (h - 1)
    else:
        x, y = ((gx + 1) * w - 1) / 2, ((gy + 1) * h - 1) / 2
    x0, y0 = int(np.floor(x)), int(np.floor(y))
    total = 0.0
    for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            if 0 <= yy < h and 0 <= xx < w:
                total += img[yy, xx] * wx * wy
    return total


@pytest.mark.parametrize("align", [True, False])
def test_grid_sample_bilinear_matches_loop(run, tvar, align):
    rng = np.random.default_rng(3)
    data = rng.standard_normal((1, 2, 3, 4)).astype("float32")
    grid = rng.uniform(-1.2, 1.2, (1, 2, 5, 6)).astype("float32")  # (N, xy, Ho, Wo)
    call = image.grid_sample(
        tvar("d", (1, 2, 3, 4)), tvar("g", (1, 2, 5, 6)), "bilinear", align_corners=align
    )
    out = run(call, data, grid)
    for c in range(2):
        for i in range(5):
            for j in range(6):
                want = _bilinear_loop(data[0, c], grid[0, 0, i, j], grid[0, 1, i, j], align)
                assert out[0, c, i, j] == pytest.approx(want, rel=1e-5, abs=1e-6)


def test_grid_sample_nearest_border(run, tvar):
    data = np.arange(6, dtype="float32").reshape(1, 1, 2, 3)
    grid = np.array([[[[-1.0, 5.0]], [[-1.0, -3.0]]]], "float32")  # x then y, 1x2 output
    call = image.grid_sample(
        tvar("d", (1, 1, 2, 3)), tvar("g", (1, 2, 1, 2)), "nearest", padding_mode="border"
    )
    # (-1, -1) is the top-left pixel; (5, -3) clamps to the top-right pixel
    assert run(call, data, grid).reshape(-1).tolist() == [0.0, 2.0]
