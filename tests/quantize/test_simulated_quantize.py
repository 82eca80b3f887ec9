"""relay.op.annotation.simulated_quantize against NumPy, and do_simulation against a
NumPy model of the same quantization."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import AttrError, RelayTypeError
from relaykit.op.relay import simulated_quantize


def np_round_half_away(x):
    """Round to nearest, ties away from zero (C's round, LLVM's llvm.round, which TVM's
    round lowers to)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def np_simulated_quantize(x, scale, lo, hi):
    """The op's definition: the division in the data's dtype (float32), as TVM's kernel."""
    scaled = (x / np.float32(scale)).astype(np.float64)
    return np_round_half_away(np.clip(scaled, lo, hi)) * scale


def _run(expr, params, *args):
    mod = tvm.IRModule.from_expr(relay.Function(params, expr))
    return relay.create_executor("graph", mod=mod).evaluate()(*args).numpy()


@pytest.mark.parametrize("scale", [0.25, 0.1, 1 / 128])
def test_kernel_matches_numpy(scale):
    rng = np.random.default_rng(1)
    data = (rng.standard_normal((4, 33)) * 3).astype("float32")
    data[0, :4] = np.array([0.5, -0.5, 1.5, -2.5]) * scale  # ties (exact for powers of 2)
    x = relay.var("x", shape=data.shape)
    sq = simulated_quantize(x, relay.const(scale), relay.const(-127.0), relay.const(127.0), 1)
    got = _run(sq, [x], data)
    np.testing.assert_allclose(got, np_simulated_quantize(data, scale, -127, 127), rtol=1e-6)
    if np.log2(scale) == int(np.log2(scale)):
        # ties away from zero
        assert got[0, 0] == pytest.approx(scale) and got[0, 1] == pytest.approx(-scale)
        assert got[0, 2] == pytest.approx(2 * scale) and got[0, 3] == pytest.approx(-3 * scale)


def test_identity_kind_passes_data_through():
    data = np.array([0.1234, -5.0], "float32")
    x = relay.var("x", shape=(2,))
    sq = simulated_quantize(x, relay.const(1.0), relay.const(-1.0), relay.const(1.0), 0)
    np.testing.assert_array_equal(_run(sq, [x], data), data)


def test_bad_arguments():
    x = relay.var("x", shape=(2,))
    with pytest.raises(AttrError, match="kind must be one of"):
        simulated_quantize(x, relay.const(1.0), relay.const(-1.0), relay.const(1.0), 9)
    bad = simulated_quantize(
        x, relay.const(np.ones(2, "float32")), relay.const(0.0), relay.const(1.0), 1
    )
    with pytest.raises(RelayTypeError, match="dom_scale must be a float32 scalar"):
        relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], bad)))


def test_do_simulation_matches_numpy():
    """conv2d -> relu quantized in simulation: the input, the weight and the section's
    output go through simulated quantizes with the calibrated scales, as NumPy computes
    here."""
    rng = np.random.default_rng(2)
    w = rng.uniform(-0.6, 0.6, (4, 3, 3, 3)).astype("float32")
    data = rng.uniform(-1, 1, (1, 3, 6, 6)).astype("float32")
    x = relay.var("x", shape=data.shape)
    body = relay.nn.relu(relay.nn.conv2d(x, relay.const(w), kernel_size=(3, 3), padding=(1, 1)))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    with relay.quantize.qconfig(skip_conv_layers=None, do_simulation=True, global_scale=2.0):
        qmod = relay.quantize.quantize(mod)
    got = relay.create_executor("graph", mod=qmod).evaluate()(data).numpy()

    x_q = np_simulated_quantize(data, 2.0 / 128, -127, 127)  # global_scale / 2**(8-1)
    w_scale = 2.0 ** np.ceil(np.log2(np.abs(w).max())) / 128  # power2 weight scale
    w_q = np_simulated_quantize(w, w_scale, -127, 127)
    xp = np.pad(x_q, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    ref = np.maximum(np.einsum("nchwij,ocij->nohw", win, w_q), 0)
    # the section's output leaves it through cast_hint(int8): an INPUT-kind quantize
    ref = np_simulated_quantize(ref, 2.0 / 128, -127, 127)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    assert "relay.op.annotation.simulated_quantize" in qmod.astext()
