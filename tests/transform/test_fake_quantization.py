"""FakeQuantizationToInteger: the rewritten graph against NumPy float64 arithmetic written
here (within one quantization step), the shape of the rewrite (QNN operators, no float
left), the partial (QAT) mode, user rules, hard_fail errors naming the operator, and
list_fake_quantized_op_freqs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import FakeQuantizationError
from relaykit.ir import IRModule, TensorAffineType
from relaykit.ir.op import default_registry
from relaykit.relay.transform.fake_quantization_to_integer import (
    register_fake_quantization_to_integer,
)

RNG = np.random.default_rng(2526)


def dq(x: Any, scale: Any, zp: Any = 0, axis: int = -1) -> Any:
    return relay.qnn.op.dequantize(x, relay.const(scale), relay.const(zp), axis=axis)


def q(x: Any, scale: float, zp: int = 0, dtype: str = "int8") -> Any:
    return relay.qnn.op.quantize(x, relay.const(scale), relay.const(zp), out_dtype=dtype)


def rewrite(expr: Any, **options: Any) -> tuple[IRModule, IRModule]:
    mod = relay.transform.InferType()(IRModule.from_expr(expr))
    return mod, relay.transform.FakeQuantizationToInteger(**options)(mod)


def run(mod: IRModule, *inputs: np.ndarray) -> np.ndarray:
    return np.asarray(relay.create_executor("debug", mod=mod).evaluate()(*inputs).numpy())


def ops(mod: IRModule) -> set[str]:
    found: set[str] = set()
    relay.analysis.post_order_visit(
        mod["main"].body,
        lambda n: (
            found.add(n.op.name) if isinstance(n, relay.Call) and hasattr(n.op, "name") else None
        ),
    )
    return found


def quantize_ref(real: np.ndarray, scale: float, zp: int, dtype: str) -> np.ndarray:
    v = real / scale
    v = np.sign(v) * np.floor(np.abs(v) + 0.5) + zp
    info = np.iinfo(dtype)
    return np.clip(v, info.min, info.max).astype(dtype)


def within_one_step(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype
    assert np.max(np.abs(got.astype(np.int64) - want.astype(np.int64))) <= 1


def test_conv2d_region_becomes_qnn_and_matches_float64() -> None:
    xd = RNG.integers(-128, 128, size=(1, 3, 8, 8)).astype("int8")
    wd = RNG.integers(-128, 128, size=(4, 3, 3, 3)).astype("int8")
    x = relay.var("x", shape=xd.shape, dtype="int8")
    w = relay.var("w", shape=wd.shape, dtype="int8")
    conv = relay.nn.conv2d(dq(x, 0.05, 3), dq(w, 0.02), kernel_size=(3, 3), padding=(1, 1))
    mod, out = rewrite(q(conv, 4.0, 1))
    assert "qnn.conv2d" in ops(out) and "nn.conv2d" not in ops(out)
    assert "qnn.dequantize" not in ops(out)
    # float64 reference: the real values, convolved, quantized
    xr = 0.05 * (xd.astype(np.float64) - 3)
    wr = 0.02 * wd.astype(np.float64)
    pad = np.pad(xr, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 4, 8, 8))
    for i in range(8):
        for j in range(8):
            ref[0, :, i, j] = np.tensordot(wr, pad[0, :, i : i + 3, j : j + 3], axes=3)
    want = quantize_ref(ref, 4.0, 1, "int8")
    within_one_step(run(out, xd, wd), want)
    within_one_step(run(mod, xd, wd), want)


def test_dense_per_channel_with_bias() -> None:
    xd = RNG.integers(-128, 128, size=(4, 16)).astype("int8")
    wd = RNG.integers(-128, 128, size=(6, 16)).astype("int8")
    bd = RNG.integers(-1000, 1000, size=(6,)).astype("int32")
    ws = RNG.uniform(0.01, 0.05, size=6).astype("float32")
    x = relay.var("x", shape=xd.shape, dtype="int8")
    w = relay.var("w", shape=wd.shape, dtype="int8")
    b = relay.var("b", shape=bd.shape, dtype="int32")
    y = relay.nn.dense(dq(x, 0.1), dq(w, ws, np.zeros(6, "int32"), axis=0))
    y = relay.nn.bias_add(
        y, dq(b, (0.1 * ws).astype("float32"), np.zeros(6, "int32"), axis=0), axis=1
    )
    _mod, out = rewrite(q(y, 0.5, -3))
    assert {"qnn.dense", "qnn.requantize"} <= ops(out)
    real = (0.1 * xd.astype(np.float64)) @ (ws[:, None].astype(np.float64) * wd).T
    real += np.float64(0.1) * ws.astype(np.float64) * bd
    within_one_step(run(out, xd, wd, bd), quantize_ref(real, 0.5, -3, "int8"))


def test_data_movement_ops_are_exact() -> None:
    xd = RNG.integers(0, 256, size=(1, 4, 6, 6)).astype("uint8")
    x = relay.var("x", shape=xd.shape, dtype="uint8")
    y = relay.nn.max_pool2d(dq(x, 0.5, 128), pool_size=(2, 2), strides=(2, 2))
    y = relay.transpose(y, (0, 2, 3, 1))
    y = relay.reshape(y, (1, -1))
    y = relay.clip(relay.nn.relu(y), 0.0, 40.0)
    _mod, out = rewrite(q(y, 0.5, 128, "uint8"))
    assert ops(out) <= {"nn.max_pool2d", "transpose", "reshape", "maximum", "clip"}
    real = 0.5 * (xd.astype(np.float64) - 128)
    pooled = real.reshape(1, 4, 3, 2, 3, 2).max(axis=(3, 5))
    flat = pooled.transpose(0, 2, 3, 1).reshape(1, -1)
    want = quantize_ref(np.clip(np.maximum(flat, 0), 0, 40), 0.5, 128, "uint8")
    np.testing.assert_array_equal(run(out, xd), want)


def test_clip_bounds_round_as_quantize_does() -> None:
    # a bound at half a step: clip then quantize rounds it away from zero
    xd = np.arange(-20, 20, dtype="int8")
    x = relay.var("x", shape=xd.shape, dtype="int8")
    mod, out = rewrite(q(relay.clip(dq(x, 0.5), -1.25, 2.75), 0.5))
    real = np.clip(0.5 * xd.astype(np.float64), -1.25, 2.75)
    want = quantize_ref(real, 0.5, 0, "int8")
    assert want.min() == -3 and want.max() == 6  # the ties went away from zero
    np.testing.assert_array_equal(run(out, xd), want)
    np.testing.assert_array_equal(run(mod, xd), want)


def test_add_of_two_scales_and_a_constant() -> None:
    ad = RNG.integers(-100, 100, size=(3, 5)).astype("int8")
    bd = RNG.integers(-100, 100, size=(3, 5)).astype("int8")
    a = relay.var("a", shape=ad.shape, dtype="int8")
    b = relay.var("b", shape=bd.shape, dtype="int8")
    y = relay.add(dq(a, 0.1, 2), dq(b, 0.3, -1))
    y = relay.multiply(y, relay.const(2.0))
    _, out = rewrite(q(y, 0.25))
    assert {"qnn.requantize", "add", "qnn.mul"} <= ops(out)
    real = (0.1 * (ad.astype(np.float64) - 2) + 0.3 * (bd.astype(np.float64) + 1)) * 2.0
    within_one_step(run(out, ad, bd), quantize_ref(real, 0.25, 0, "int8"))


@pytest.mark.parametrize("op", ["add", "subtract"])
def test_add_of_two_scales_rounds_once_as_the_float_graph(op: str) -> None:
    # a residual add of a model (scales of calibration): the float graph rounds the exact
    # sum once; rounding each operand to the result's step first (qnn.add) would be one
    # step off on about a third of the elements
    ad = RNG.integers(0, 256, size=(4, 4096)).astype("uint8")
    bd = RNG.integers(0, 256, size=(4, 4096)).astype("uint8")
    sa, za, sb, zb, so, zo = 0.0213, 3, 0.0371, 130, 0.0467, 61
    a = relay.var("a", shape=ad.shape, dtype="uint8")
    b = relay.var("b", shape=bd.shape, dtype="uint8")
    fn = getattr(relay, op)
    _, out = rewrite(q(fn(dq(a, sa, za), dq(b, sb, zb)), so, zo, "uint8"))
    assert "qnn.add" not in ops(out) and "qnn.subtract" not in ops(out)
    real = getattr(np, op)(sa * (ad.astype(np.float64) - za), sb * (bd.astype(np.float64) - zb))
    want = quantize_ref(real, so, zo, "uint8")
    got = run(out, ad, bd)
    assert np.mean(got == want) > 0.9999
    within_one_step(got, want)


def test_add_whose_operands_move_exactly_stays_qnn_add() -> None:
    ad = RNG.integers(-60, 60, size=(64,)).astype("int8")
    bd = RNG.integers(-60, 60, size=(64,)).astype("int8")
    a = relay.var("a", shape=ad.shape, dtype="int8")
    b = relay.var("b", shape=bd.shape, dtype="int8")
    _, out = rewrite(q(relay.add(dq(a, 0.2), dq(b, 0.4)), 0.2))
    assert "qnn.add" in ops(out)
    real = 0.2 * ad.astype(np.float64) + 0.4 * bd.astype(np.float64)
    np.testing.assert_array_equal(run(out, ad, bd), quantize_ref(real, 0.2, 0, "int8"))


def test_concatenate_requantizes_each_input() -> None:
    xs = [RNG.integers(-128, 128, size=(2, 3)).astype("int8") for _ in range(3)]
    vs = [relay.var(f"x{i}", shape=(2, 3), dtype="int8") for i in range(3)]
    scales = [0.5, 1.5, 2.5]
    y = relay.concatenate([dq(v, s) for v, s in zip(vs, scales, strict=True)], axis=1)
    _, out = rewrite(q(y, 2.0))
    assert "qnn.concatenate" in ops(out)
    real = np.concatenate([s * x.astype(np.float64) for x, s in zip(xs, scales, strict=True)], 1)
    within_one_step(run(out, *xs), quantize_ref(real, 2.0, 0, "int8"))


def test_mean_has_one_rounding() -> None:
    xd = RNG.integers(0, 256, size=(2, 7)).astype("uint8")
    x = relay.var("x", shape=xd.shape, dtype="uint8")
    _, out = rewrite(q(relay.mean(dq(x, 0.3, 100), axis=1), 0.1, 5, "uint8"))
    real = (0.3 * (xd.astype(np.float64) - 100)).mean(axis=1)
    within_one_step(run(out, xd), quantize_ref(real, 0.1, 5, "uint8"))


def test_global_average_pool_rounds_once_as_the_float_graph() -> None:
    # scales that do not divide: the int32 average is taken at a step finer than the
    # result's, so the only rounding that matters is the final one, as in float
    xd = RNG.integers(0, 256, size=(2, 16, 7, 7)).astype("uint8")
    x = relay.var("x", shape=xd.shape, dtype="uint8")
    si, zi, so, zo = 0.0213, 3, 0.0171, 9
    _, out = rewrite(q(relay.nn.global_avg_pool2d(dq(x, si, zi)), so, zo, "uint8"))
    assert "qnn.dequantize" not in ops(out) and "qnn.requantize" in ops(out)
    real = (si * (xd.astype(np.float64) - zi)).mean(axis=(2, 3), keepdims=True)
    want = quantize_ref(real, so, zo, "uint8")
    got = run(out, xd)
    assert got.shape == want.shape
    assert np.mean(got == want) > 0.99
    within_one_step(got, want)


def test_adaptive_average_pool_of_overlapping_windows_matches_float64() -> None:
    xd = RNG.integers(-128, 128, size=(1, 3, 7, 5)).astype("int8")
    x = relay.var("x", shape=xd.shape, dtype="int8")
    si, so = 0.037, 0.029
    _, out = rewrite(q(relay.nn.adaptive_avg_pool2d(dq(x, si), output_size=(3, 2)), so))
    xr = si * xd.astype(np.float64)
    real = np.zeros((1, 3, 3, 2))
    for i in range(3):
        h0, h1 = (i * 7) // 3, -(-((i + 1) * 7) // 3)
        for j in range(2):
            w0, w1 = (j * 5) // 2, -(-((j + 1) * 5) // 2)
            real[:, :, i, j] = xr[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    want = quantize_ref(real, so, 0, "int8")
    got = run(out, xd)
    within_one_step(got, want)
    assert np.mean(got == want) > 0.9


def test_softmax_only_when_asked() -> None:
    x = relay.var("x", shape=(2, 5), dtype="int8")
    expr = q(relay.nn.softmax(dq(x, 0.1)), 1 / 256, -128)
    _, out = rewrite(expr)
    assert "nn.softmax" in ops(out) and "qnn.softmax" not in ops(out)
    _, out = rewrite(expr, optional_qnn_ops=["nn.softmax"])
    assert "qnn.softmax" in ops(out)
    xd = RNG.integers(-128, 128, size=(2, 5)).astype("int8")
    real = 0.1 * xd.astype(np.float64)
    e = np.exp(real - real.max(axis=1, keepdims=True))
    within_one_step(run(out, xd), quantize_ref(e / e.sum(1, keepdims=True), 1 / 256, -128, "int8"))


def test_region_with_unsupported_op_is_kept_or_refused_by_name() -> None:
    x = relay.var("x", shape=(4,), dtype="int8")
    expr = q(relay.cos(relay.nn.relu(dq(x, 0.1))), 0.1)
    _mod, out = rewrite(expr)
    assert "cos" in ops(out) and "qnn.quantize" in ops(out)
    with pytest.raises(FakeQuantizationError, match="no rewrite rule for cos") as info:
        rewrite(expr, hard_fail=True)
    assert info.value.op_name == "cos"


def test_failing_rule_is_reported_with_hard_fail() -> None:
    x = relay.var("x", shape=(4,), dtype="int8")
    expr = q(relay.negative(dq(x, 0.1)), 0.1)

    def refuse(expr: Any, type_map: Any) -> Any:
        raise NotImplementedError("not today")

    with default_registry.scoped():
        register_fake_quantization_to_integer("negative", refuse, level=11)
        _mod, out = rewrite(expr)
        assert "negative" in ops(out) and "qnn.quantize" in ops(out)
        with pytest.raises(FakeQuantizationError, match="rule of negative failed.*not today"):
            rewrite(expr, hard_fail=True)


def test_user_rule_extends_the_pass() -> None:
    def negate(expr: Any, type_map: dict[Any, Any]) -> list[Any]:
        arg = expr.args[0]
        t: TensorAffineType = type_map[arg]
        # -(s * (q - z)) = s * ((2z - q) - z)
        two_z = relay.multiply(relay.const(2), t.zero_point)
        flipped = relay.subtract(relay.cast(two_z, t.dtype), arg)
        return [flipped, t]

    xd = np.arange(-20, 20, dtype="int8")
    x = relay.var("x", shape=xd.shape, dtype="int8")
    with default_registry.scoped():
        register_fake_quantization_to_integer("negative", negate, level=11)
        _, out = rewrite(q(relay.negative(dq(x, 0.5, 3)), 0.5, 3))
    assert "qnn.dequantize" not in ops(out)
    want = quantize_ref(-0.5 * (xd.astype(np.float64) - 3), 0.5, 3, "int8")
    np.testing.assert_array_equal(run(out, xd), want)


def test_qat_mode_rewrites_as_far_as_inputs_are_quantized() -> None:
    a = relay.var("a", shape=(1, 4, 2), dtype="int8")
    b = relay.var("b", shape=(1, 3, 2), dtype="int8")
    y = relay.nn.batch_matmul(relay.reshape(dq(a, 0.5), (1, 4, 2)), dq(b, 0.25))
    y = relay.erf(relay.add(y, relay.const(1.0)))
    _mod, out = rewrite(y, use_qat=True)
    assert {"qnn.batch_matmul", "qnn.dequantize", "erf", "add"} == ops(out) - {"reshape"}
    ad = RNG.integers(-128, 128, size=(1, 4, 2)).astype("int8")
    bd = RNG.integers(-128, 128, size=(1, 3, 2)).astype("int8")
    real = (0.5 * ad.astype(np.float64)) @ (0.25 * bd.astype(np.float64)).transpose(0, 2, 1)
    want = np.vectorize(math.erf)(real + 1.0)
    np.testing.assert_allclose(run(out, ad, bd), want, rtol=1e-5, atol=1e-6)
    _, plain = rewrite(y)
    assert "nn.batch_matmul" in ops(plain)


def test_long_chain_is_rewritten_without_recursion() -> None:
    x = relay.var("x", shape=(2, 3), dtype="int8")
    y = dq(x, 0.5)
    for _ in range(3000):
        y = relay.nn.relu(relay.transpose(y, (1, 0)))
    _, out = rewrite(q(y, 0.5))
    xd = RNG.integers(-128, 128, size=(2, 3)).astype("int8")
    np.testing.assert_array_equal(run(out, xd), np.maximum(xd, 0))


def test_list_fake_quantized_op_freqs() -> None:
    x = relay.var("x", shape=(4, 8), dtype="int8")
    w = relay.var("w", shape=(8, 8), dtype="int8")
    y = q(relay.nn.relu(relay.nn.dense(dq(x, 0.5), dq(w, 0.5))), 1.0)
    y = q(relay.nn.dense(dq(y, 1.0), dq(w, 0.5)), 1.0)
    y = relay.sigmoid(dq(y, 1.0))  # outside any region
    freqs = relay.analysis.list_fake_quantized_op_freqs(IRModule.from_expr(y))
    assert freqs == {"nn.dense": 2, "nn.relu": 1}


def test_add_of_a_float_constant_rounds_the_real_sum_once() -> None:
    # x + 0.3137 in a fake-quantized region: the constant is not rounded to x's step first
    xd = RNG.integers(0, 256, size=(8, 512)).astype("uint8")
    x = relay.var("x", shape=xd.shape, dtype="uint8")
    c = np.float32(0.3137)
    _, out = rewrite(q(relay.add(dq(x, 0.0213, 9), relay.const(c)), 0.0467, 3, "uint8"))
    real = 0.0213 * (xd.astype(np.float64) - 9) + float(c)
    want = quantize_ref(real, 0.0467, 3, "uint8")
    got = run(out, xd)
    assert np.mean(got == want) > 0.999
    within_one_step(got, want)
