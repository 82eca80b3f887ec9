"""relay.quantize's passes: the realized IR, step by step, against graphs written out by
hand from TVM's rules; skip options; partition_conversions."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import NotFullyIntegralError


def _c(value, dtype):
    return relay.const(np.array(value, dtype=dtype), dtype)


def _two_convs(rng):
    w1 = (rng.integers(-127, 128, (4, 3, 3, 3)) / 128).astype("float32")
    w1.flat[0] = 1.0  # max |w1| = 1: power2 scale 1, dom_scale 2**-7
    w2 = (rng.integers(-63, 64, (4, 4, 1, 1)) / 128).astype("float32")
    w2.flat[0] = 0.5  # max |w2| = 0.5: dom_scale 2**-8
    x = relay.var("x", shape=(1, 3, 8, 8))
    c1 = relay.nn.conv2d(x, relay.const(w1), kernel_size=(3, 3), padding=(1, 1))
    c2 = relay.nn.conv2d(relay.nn.relu(c1), relay.const(w2), kernel_size=(1, 1))
    return tvm.IRModule.from_expr(relay.Function([x], c2)), w1, w2


def _requantize(v, shift):
    """(v + 2**(shift-1)) >> shift, clipped, cast to int8: TVM's realized rescale."""
    v = relay.right_shift(relay.add(v, _c(1 << (shift - 1), "int32")), _c(shift, "int32"))
    return relay.cast(relay.clip(v, -127.0, 127.0), "int8")


def test_realized_graph_is_tvms():
    mod, w1, w2 = _two_convs(np.random.default_rng(0))
    with relay.quantize.qconfig(skip_conv_layers=None, global_scale=8.0):
        qmod = relay.quantize.quantize(mod)

    # input: dom_scale 8/2**7 = 2**-4, so x * 16, round, clip, cast
    x = relay.var("x", shape=(1, 3, 8, 8))
    q = relay.cast(
        relay.clip(relay.round(relay.multiply(x, _c(16.0, "float32"))), -127.0, 127.0), "int8"
    )
    w1q = np.clip(np.rint(w1 * 128), -127, 127).astype("int8")
    w2q = np.clip(np.rint(w2 * 256), -127, 127).astype("int8")
    c1 = relay.nn.conv2d(q, relay.const(w1q), kernel_size=(3, 3), padding=(1, 1), out_dtype="int32")
    # conv1's scale 2**-4 * 2**-7 = 2**-11 back to 2**-4: shift by 7, then stop_fusion
    r = relay.annotation.stop_fusion(_requantize(relay.nn.relu(c1), 7))
    c2 = relay.nn.conv2d(r, relay.const(w2q), kernel_size=(1, 1), out_dtype="int32")
    out = relay.annotation.stop_fusion(_requantize(c2, 8))  # 2**-12 -> 2**-4
    body = relay.multiply(relay.cast(out, "float32"), _c(0.0625, "float32"))
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))
    assert tvm.ir.structural_equal(qmod["main"], expected["main"]), qmod.astext()


def test_realized_equals_simulated_within_one_step():
    mod, _, _ = _two_convs(np.random.default_rng(1))
    data = np.random.default_rng(2).uniform(-1, 1, (1, 3, 8, 8)).astype("float32")
    out = {}
    for sim in (True, False):
        with relay.quantize.qconfig(skip_conv_layers=None, do_simulation=sim):
            qmod = relay.quantize.quantize(mod)
        out[sim] = relay.create_executor("graph", mod=qmod).evaluate()(data).numpy()
    step = 8.0 / 128
    diff = np.abs(out[True] - out[False]) / step
    # the realized shift rounds ties upward, the simulation away from zero: one step, rarely
    assert diff.max() <= 1.0 + 1e-6
    assert np.mean(diff > 0.5) < 0.05


def test_partition_places_stop_fusion_at_section_exits():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.var("w", shape=(4, 4, 3, 3))
    c1 = relay.nn.relu(relay.nn.conv2d(x, w, kernel_size=(3, 3), padding=(1, 1)))
    c2 = relay.nn.conv2d(c1, w, kernel_size=(3, 3), padding=(1, 1))
    body = relay.add(c1, c2)  # residual join of two sections
    mod = tvm.IRModule.from_expr(relay.Function([x, w], body))
    with relay.quantize.qconfig():
        out = relay.quantize.partition()(mod)
    hints = []
    relay.analysis.post_order_visit(
        out["main"],
        lambda n: (
            hints.append(n.args[0].args[0].op.name)
            if isinstance(n, relay.Call) and n.op.name == "annotation.stop_fusion"
            else None
        ),
    )
    # c1 leaves its section for conv2 and for the add; c2 for the add; the add's output
    # leaves at the end of the function
    assert sorted(hints) == ["add", "nn.conv2d", "nn.relu", "nn.relu"]


def test_skip_conv_layers_and_dense():
    rng = np.random.default_rng(3)
    x = relay.var("x", shape=(1, 4, 4, 4))
    c1 = relay.nn.conv2d(
        x, relay.const(rng.uniform(-1, 1, (4, 4, 1, 1)).astype("float32")), kernel_size=(1, 1)
    )
    c2 = relay.nn.conv2d(
        c1, relay.const(rng.uniform(-1, 1, (4, 4, 1, 1)).astype("float32")), kernel_size=(1, 1)
    )
    d = relay.nn.dense(
        relay.nn.batch_flatten(c2), relay.const(rng.uniform(-1, 1, (2, 64)).astype("float32"))
    )
    mod = tvm.IRModule.from_expr(relay.Function([x], d))

    def dtypes(**cfg):
        with relay.quantize.qconfig(**cfg):
            q = relay.quantize.quantize(mod)
        found = {}
        relay.analysis.post_order_visit(
            q["main"],
            lambda n: (
                found.setdefault(n.op.name, []).append(n.args[0].checked_type.dtype)
                if isinstance(n, relay.Call) and n.op.name in ("nn.conv2d", "nn.dense")
                else None
            ),
        )
        return found

    assert dtypes() == {"nn.conv2d": ["float32", "int8"], "nn.dense": ["float32"]}
    assert dtypes(skip_conv_layers=[1], skip_dense_layer=False) == {
        "nn.conv2d": ["int8", "float32"],
        "nn.dense": ["int8"],
    }


def test_partition_conversions():
    mod, _, _ = _two_convs(np.random.default_rng(4))
    data = np.random.default_rng(5).uniform(-1, 1, (1, 3, 8, 8)).astype("float32")
    with relay.quantize.qconfig(skip_conv_layers=None):
        plain = relay.quantize.quantize(mod)
    with relay.quantize.qconfig(skip_conv_layers=None, partition_conversions="fully_integral"):
        split = relay.quantize.quantize(mod)
    names = sorted(g.name_hint for g in split.get_global_vars())
    assert names == ["dequantize_outputs", "main", "quantize_inputs", "quantized_main"]
    assert {"int8", "int32"} >= {n.checked_type.dtype for n in _calls(split["quantized_main"])}
    run = lambda m: relay.create_executor("vm", mod=m).evaluate()(data).numpy()  # noqa: E731
    np.testing.assert_array_equal(run(split), run(plain))


def _calls(func):
    out = []
    relay.analysis.post_order_visit(
        func, lambda n: out.append(n) if isinstance(n, relay.Call) else None
    )
    return out


def test_fully_integral_refuses_float_operators():
    x = relay.var("x", shape=(10, 10))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.softmax(x)))
    with relay.quantize.qconfig(partition_conversions="enabled"):
        relay.quantize.quantize(mod)  # allowed: conversions and core split as they are
    with (
        relay.quantize.qconfig(partition_conversions="fully_integral"),
        pytest.raises(NotFullyIntegralError, match=r"holds \[.nn.softmax.\]"),
    ):
        relay.quantize.quantize(mod)


def test_calibrate_modes_need_a_dataset():
    mod, _, _ = _two_convs(np.random.default_rng(6))
    with (
        relay.quantize.qconfig(calibrate_mode="percentile", skip_conv_layers=None),
        pytest.raises(TypeError, match="pass dataset="),
    ):
        relay.quantize.quantize(mod)


def test_scales_too_far_apart_to_add_are_a_typed_error():
    x = relay.var("x", shape=(1, 2, 4, 4))
    w = relay.const(np.ones((2, 2, 1, 1), "float32"))
    conv = relay.nn.conv2d(x, w, kernel_size=(1, 1))
    body = relay.add(conv, relay.const(np.full((2, 1, 1), 4.0, "float32")))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    tiny = [{"x": np.full((1, 2, 4, 4), 1e-12, "float32")}]  # calibration data near zero
    cfg = relay.quantize.qconfig(calibrate_mode="percentile", skip_conv_layers=None)
    with cfg, pytest.raises(ValueError, match=r"would overflow int32.*representative data"):
        relay.quantize.quantize(mod, dataset=tiny)
    with relay.quantize.qconfig(skip_conv_layers=None):  # the global scale has no such gap
        relay.quantize.quantize(mod)


@pytest.mark.parametrize("ops", [["nn.conv2d"], ["nn.conv2d", "nn.max_pool2d"], None])
def test_debug_enabled_ops_keep_results_right(ops):
    """Quantizing only some operators must still compute the model: an operator left out
    of annotation is not realized on unscaled integers either."""
    rng = np.random.default_rng(7)
    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.const(rng.uniform(-1, 1, (4, 4, 3, 3)).astype("float32"))
    conv = lambda d: relay.nn.conv2d(d, w, kernel_size=(3, 3), padding=(1, 1))  # noqa: E731
    c1 = relay.nn.relu(conv(x))
    body = relay.concatenate(
        [
            relay.nn.max_pool2d(conv(c1), pool_size=(2, 2)),
            relay.nn.avg_pool2d(conv(c1), pool_size=(2, 2)),
        ],
        axis=1,
    )
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    data = rng.uniform(-1, 1, (1, 4, 8, 8)).astype("float32")
    ref = relay.create_executor("graph", mod=mod).evaluate()(data).numpy()
    cfg = relay.quantize.qconfig(
        skip_conv_layers=None, calibrate_mode="percentile", debug_enabled_ops=ops
    )
    with cfg:
        q = relay.quantize.quantize(mod, dataset=[{"x": data}])
    got = relay.create_executor("vm", mod=q).evaluate()(data).numpy()
    # three 8-bit quantizations in series: a few percent of the range at most
    assert np.abs(got - ref).max() / np.abs(ref).max() < 0.03
    assert "int8" in q.astext()
