"""image.resize against hand-computed interpolation (PyTorch/ONNX conventions)."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.op import TypeRelError, image


def test_nearest_upsample_asymmetric_floor(run, tvar):
    x = np.array([[[[1, 2], [3, 4]]]], "float32")
    call = image.resize(
        tvar("x", (1, 1, 2, 2)),
        (1, 1, 4, 4),
        method="nearest",
        coordinate_transformation_mode="asymmetric",
        rounding_method="floor",
    )
    assert run(call, x)[0, 0].tolist() == np.repeat(np.repeat(x[0, 0], 2, 0), 2, 1).tolist()


def test_linear_half_pixel_matches_manual(run, tvar):
    x = np.array([[[[0.0, 10.0]]]], "float32")
    call = image.resize(tvar("x", (1, 1, 1, 2)), (1, 1, 1, 4), method="linear")
    # output positions map to input (i + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25 (clamped)
    assert run(call, x)[0, 0, 0].tolist() == pytest.approx([0.0, 2.5, 7.5, 10.0])


def test_align_corners_linear(run, tvar):
    x = np.array([[[[0.0, 3.0]]]], "float32")
    call = image.resize(
        tvar("x", (1, 1, 1, 2)), (1, 1, 1, 4), coordinate_transformation_mode="align_corners"
    )
    assert run(call, x)[0, 0, 0].tolist() == pytest.approx([0.0, 1.0, 2.0, 3.0])


def test_cubic_reproduces_linear_ramps(run, tvar):
    ramp = np.arange(8, dtype="float32").reshape(1, 1, 1, 8)
    call = image.resize(
        tvar("x", (1, 1, 1, 8)),
        (1, 1, 1, 15),
        method="cubic",
        coordinate_transformation_mode="align_corners",
    )
    out = run(call, ramp)[0, 0, 0]
    np.testing.assert_allclose(out[2:-2], np.linspace(0, 7, 15)[2:-2], rtol=1e-5)


def test_resize_checks_size(rel, tvar):
    with pytest.raises(TypeRelError, match="one non-negative size per axis"):
        rel(image.resize(tvar("x", (1, 1, 2, 2)), (4, 4)))
