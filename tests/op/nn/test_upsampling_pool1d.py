"""nn.upsampling, nn.upsampling3d, nn.max_pool1d and nn.avg_pool1d against NumPy loops."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import op
from relaykit.op import TypeRelError


def test_upsampling_nearest_repeats(run, tvar, rng):
    x = rng.standard_normal((1, 2, 3, 4)).astype("float32")
    out = run(op.nn.upsampling(tvar("x", x.shape), 2, 3), x)
    np.testing.assert_array_equal(out, x.repeat(2, axis=2).repeat(3, axis=3))
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    out2 = run(op.nn.upsampling(tvar("x", nhwc.shape), 2, 3, layout="NHWC"), nhwc)
    np.testing.assert_array_equal(out2, nhwc.repeat(2, axis=1).repeat(3, axis=2))


def test_upsampling_bilinear_align_corners(run, tvar):
    x = np.array([[[[0.0, 3.0], [6.0, 9.0]]]], "float32")
    out = run(op.nn.upsampling(tvar("x", x.shape), 2, 2, method="bilinear", align_corners=True), x)
    # align corners: output i samples input position i * (2 - 1) / (4 - 1)
    pos = np.arange(4) / 3.0
    expect = 6.0 * pos[:, None] + 3.0 * pos[None, :]
    np.testing.assert_allclose(out[0, 0], expect, rtol=1e-6)


def test_upsampling_checks(rel, tvar):
    with pytest.raises(TypeRelError, match="method"):
        rel(op.nn.upsampling(tvar("x", (1, 1, 2, 2)), 2, 2, method="trilinear"))
    with pytest.raises(TypeRelError, match="4-d"):
        rel(op.nn.upsampling(tvar("x", (1, 2, 2)), 2, 2))


def test_upsampling3d_nearest(run, tvar, rng):
    x = rng.standard_normal((1, 1, 2, 2, 3)).astype("float32")
    out = run(
        op.nn.upsampling3d(
            tvar("x", x.shape), 2, 1, 2, coordinate_transformation_mode="asymmetric"
        ),
        x,
    )
    np.testing.assert_array_equal(out, x.repeat(2, axis=2).repeat(2, axis=4))


def _pool1d_loop(x, k, s, pad, reduce, fill):
    padded = np.pad(x, [(0, 0), (0, 0), pad], constant_values=fill)
    n = (padded.shape[2] - k) // s + 1
    return np.stack([reduce(padded[:, :, i * s : i * s + k], axis=2) for i in range(n)], axis=2)


def test_pool1d(run, tvar, rng):
    x = rng.standard_normal((2, 3, 9)).astype("float32")
    out = run(op.nn.max_pool1d(tvar("x", x.shape), 3, 2, padding=(1, 1)), x)
    np.testing.assert_array_equal(out, _pool1d_loop(x, 3, 2, (1, 1), np.max, -np.inf))
    avg = run(op.nn.avg_pool1d(tvar("x", x.shape), 2, 1, padding=1, count_include_pad=True), x)
    np.testing.assert_allclose(avg, _pool1d_loop(x, 2, 1, (1, 1), np.mean, 0.0), rtol=1e-6)
    nwc = np.ascontiguousarray(x.transpose(0, 2, 1))
    out_nwc = run(op.nn.max_pool1d(tvar("x", nwc.shape), 3, 3, layout="NWC"), nwc)
    np.testing.assert_array_equal(
        out_nwc.transpose(0, 2, 1), _pool1d_loop(x, 3, 3, (0, 0), np.max, 0)
    )


def test_printed_calls_parse_back():
    import relaykit
    from relaykit import relay

    x, y = relay.var("x", shape=(1, 2, 3, 4)), relay.var("y", shape=(1, 2, 7))
    body = relay.Tuple([
        relay.nn.upsampling(x, 2, 1.5, method="bilinear"),
        relay.nn.upsampling3d(relay.reshape(x, (1, 2, 1, 3, 4)), 2, 2, 2),
        relay.nn.max_pool1d(y, 3, 2, padding=1),
        relay.nn.avg_pool1d(y, 2, count_include_pad=True),
    ])  # fmt: skip
    mod = relay.transform.InferType()(relaykit.IRModule.from_expr(relay.Function([x, y], body)))
    again = relay.fromtext(mod.astext())
    assert relaykit.ir.structural_equal(again["main"], mod["main"])
