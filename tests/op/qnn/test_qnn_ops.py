"""The QNN operators: reference kernels against NumPy arithmetic written here (Python
integers for the fixed-point steps, int64 / float64 otherwise), CanonicalizeOps giving
the same integers bit for bit, and bad quantization parameters refused by name."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import ExecutionError, IRError, RelayTypeError
from relaykit.ir import IRModule

RNG = np.random.default_rng(25)


def run(expr: Any, args: list[Any], inputs: list[np.ndarray], canon: bool = False) -> np.ndarray:
    mod = IRModule.from_expr(relay.Function(args, expr))
    mod = relay.transform.InferType()(mod)
    if canon:
        mod = relay.qnn.transform.CanonicalizeOps()(mod)
        assert "qnn." not in str(mod)
    out = relay.create_executor("debug", mod=mod).evaluate()(*inputs)
    return np.asarray(out.numpy())


def both(expr: Any, args: list[Any], inputs: list[np.ndarray]) -> np.ndarray:
    """The QNN module's result, checked equal to the canonicalized module's."""
    a = run(expr, args, inputs)
    b = run(expr, args, inputs, canon=True)
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)
    return a


# -- independent arithmetic ---------------------------------------------------------------


def q31(m: float) -> tuple[int, int]:
    """``m = q * 2**(e - 31)`` with ``q`` an integer below 2**31 (rounded half up)."""
    if m == 0:
        return 0, 0
    e = math.floor(math.log2(m)) + 1
    q = math.floor(m * 2.0 ** (31 - e) + 0.5)
    if q >= 2**31:
        q, e = q // 2, e + 1
    return q, e


def scale_int(v: int, m: float, upward: bool) -> int:
    q, e = q31(m)
    total = 31 - e
    prod = v * q
    if total <= 0:
        return prod << -total
    half = 1 << (total - 1)
    return (prod + (half if upward or prod >= 0 else half - 1)) >> total


def round_half_away(v):
    """Round to nearest, halves away from zero (TVM's ``round``), in float64."""
    v = np.asarray(v, np.float64)
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def ref_requantize(x, isc, izp, osc, ozp, dtype, upward=True, axis_vals=None):
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    out = np.empty(x.shape, dtype=np.int64)
    for idx in np.ndindex(x.shape):
        c = idx[axis_vals] if axis_vals is not None else 0
        s_in = float(np.float32(isc[c] if np.ndim(isc) else isc))
        s_out = float(np.float32(osc))
        v = int(x[idx]) - int(izp)
        r = v if s_in == s_out else scale_int(v, s_in / s_out, upward)
        out[idx] = min(max(r + int(ozp), lo), hi)
    return out.astype(dtype)


# -- quantize / dequantize / requantize -----------------------------------------------------


def test_quantize_dequantize_per_tensor_and_channel() -> None:
    x = relay.var("x", shape=(2, 3, 4))
    data = (RNG.standard_normal((2, 3, 4)) * 5).astype("float32")
    data[0, 0, :3] = [0.25, 0.75, -0.25]  # ties at scale 0.5: halves away from zero
    q = relay.qnn.op.quantize(x, relay.const(0.5), relay.const(3), out_dtype="int8")
    got = both(q, [x], [data])
    expect = np.clip(round_half_away(data.astype(np.float64) / 0.5) + 3, -128, 127).astype("int8")
    np.testing.assert_array_equal(got, expect)
    scales = np.array([0.1, 0.2, 0.4], "float32")
    zps = np.array([0, 10, 250], "int32")
    qc = relay.qnn.op.quantize(x, relay.const(scales), relay.const(zps), axis=1, out_dtype="uint8")
    got = both(qc, [x], [data])
    ratio = data.astype(np.float32) / scales.reshape(1, 3, 1)
    expect = np.clip(round_half_away(ratio.astype(np.float64)) + zps.reshape(1, 3, 1), 0, 255)
    np.testing.assert_array_equal(got, expect.astype("uint8"))
    y = relay.var("y", shape=(2, 3, 4), dtype="uint8")
    dq = relay.qnn.op.dequantize(y, relay.const(scales), relay.const(zps), axis=1)
    qd = RNG.integers(0, 256, (2, 3, 4)).astype("uint8")
    got = both(dq, [y], [qd])
    expect = (qd.astype(np.int64) - zps.reshape(1, 3, 1)) * scales.reshape(1, 3, 1).astype(
        np.float64
    )
    np.testing.assert_allclose(got, expect, rtol=1e-6)


@pytest.mark.parametrize("rounding", ["UPWARD", "TONEAREST"])
@pytest.mark.parametrize("out_dtype", ["int8", "uint8", "int32"])
def test_requantize_exact(rounding: str, out_dtype: str) -> None:
    x = relay.var("x", shape=(64,), dtype="int32")
    data = RNG.integers(-5000, 5000, 64).astype("int32")
    data[:6] = [-6, -2, 2, 6, 10, -10]  # halves at multiplier 0.25 after the zero point
    ozp = 0 if out_dtype != "uint8" else 128
    y = relay.qnn.op.requantize(
        x, relay.const(0.5), relay.const(0), relay.const(2.0), relay.const(ozp),
        rounding=rounding, out_dtype=out_dtype,
    )  # fmt: skip
    got = both(y, [x], [data])
    expect = ref_requantize(data, 0.5, 0, 2.0, ozp, out_dtype, rounding == "UPWARD")
    np.testing.assert_array_equal(got, expect)
    y2 = relay.qnn.op.requantize(
        x, relay.const(0.0173), relay.const(-3), relay.const(0.611), relay.const(5),
        rounding=rounding, out_dtype=out_dtype,
    )  # fmt: skip
    got = both(y2, [x], [data])
    expect = ref_requantize(data, 0.0173, -3, 0.611, 5, out_dtype, rounding == "UPWARD")
    np.testing.assert_array_equal(got, expect)


def test_requantize_per_channel_and_float_compute() -> None:
    x = relay.var("x", shape=(2, 3), dtype="int32")
    data = RNG.integers(-3000, 3000, (2, 3)).astype("int32")
    scales = np.array([0.3, 1.7, 0.05], "float32")
    y = relay.qnn.op.requantize(
        x, relay.const(scales), relay.const(0), relay.const(0.9), relay.const(1), axis=1
    )
    got = both(y, [x], [data])
    expect = ref_requantize(data, scales, 0, 0.9, 1, "int8", True, axis_vals=1)
    np.testing.assert_array_equal(got, expect)
    yf = relay.qnn.op.requantize(
        x, relay.const(0.3), relay.const(0), relay.const(0.9), relay.const(1),
        compute_dtype="float64",
    )  # fmt: skip
    got = both(yf, [x], [data])
    expect = np.clip(
        round_half_away(data * (np.float64(np.float32(0.3)) / np.float32(0.9)) + 1), -128, 127
    )
    np.testing.assert_array_equal(got, expect.astype("int8"))


# -- add / subtract / mul --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["add", "subtract", "mul"])
def test_binary_exact(name: str) -> None:
    a = relay.var("a", shape=(4, 8), dtype="int8")
    b = relay.var("b", shape=(8,), dtype="int8")
    p = dict(ls=0.05, lz=3, rs=0.11, rz=-4, os=0.2, oz=-1)
    fn = getattr(relay.qnn.op, name)
    y = fn(
        a, b, relay.const(p["ls"]), relay.const(p["lz"]), relay.const(p["rs"]),
        relay.const(p["rz"]), relay.const(p["os"]), relay.const(p["oz"]),
    )  # fmt: skip
    da = RNG.integers(-128, 128, (4, 8)).astype("int8")
    db = RNG.integers(-128, 128, (8,)).astype("int8")
    got = both(y, [a, b], [da, db])
    f32 = lambda v: float(np.float32(v))  # noqa: E731
    expect = np.empty((4, 8), np.int64)
    for i, j in np.ndindex(4, 8):
        va, vb = int(da[i, j]), int(db[j])
        if name == "mul":
            prod = (va - p["lz"]) * (vb - p["rz"])
            s = float(np.float32(np.float32(p["ls"]) * np.float32(p["rs"])))
            r = scale_int(prod, s / f32(p["os"]), True) + p["oz"]
        else:
            qa = scale_int(va - p["lz"], f32(p["ls"]) / f32(p["os"]), True) + p["oz"]
            qb = scale_int(vb - p["rz"], f32(p["rs"]) / f32(p["os"]), True) + p["oz"]
            r = qa + qb - p["oz"] if name == "add" else qa - qb + p["oz"]
        expect[i, j] = min(max(r, -128), 127)
    np.testing.assert_array_equal(got, expect.astype("int8"))


# -- dense / batch_matmul / conv2d -----------------------------------------------------------


def test_dense_per_channel_kernel_zero_point() -> None:
    x = relay.var("x", shape=(3, 5), dtype="uint8")
    w = relay.var("w", shape=(4, 5), dtype="int8")
    kz = np.array([0, 1, -2, 3], "int32")
    y = relay.qnn.op.dense(
        x, w, relay.const(128), relay.const(kz), relay.const(0.1),
        relay.const(np.full(4, 0.2, "float32")), units=4,
    )  # fmt: skip
    dx = RNG.integers(0, 256, (3, 5)).astype("uint8")
    dw = RNG.integers(-128, 128, (4, 5)).astype("int8")
    got = both(y, [x, w], [dx, dw])
    expect = (dx.astype(np.int64) - 128) @ (dw.astype(np.int64) - kz[:, None]).T
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expect)


def test_batch_matmul() -> None:
    x = relay.var("x", shape=(2, 3, 4), dtype="int8")
    y = relay.var("y", shape=(2, 5, 4), dtype="int8")
    out = relay.qnn.op.batch_matmul(
        x, y, relay.const(-2), relay.const(7), relay.const(0.5), relay.const(0.25)
    )
    dx = RNG.integers(-128, 128, (2, 3, 4)).astype("int8")
    dy = RNG.integers(-128, 128, (2, 5, 4)).astype("int8")
    got = both(out, [x, y], [dx, dy])
    expect = np.einsum("bik,bjk->bij", dx.astype(np.int64) + 2, dy.astype(np.int64) - 7)
    np.testing.assert_array_equal(got, expect)


def test_conv2d_padding_is_the_zero_point() -> None:
    x = relay.var("x", shape=(1, 2, 5, 5), dtype="uint8")
    w = relay.var("w", shape=(3, 2, 3, 3), dtype="int8")
    kz = np.array([1, 0, -1], "int32")
    y = relay.qnn.op.conv2d(
        x, w, relay.const(100), relay.const(kz), relay.const(0.1), relay.const(0.3),
        kernel_size=(3, 3), channels=3, padding=(1, 1),
    )  # fmt: skip
    dx = RNG.integers(0, 256, (1, 2, 5, 5)).astype("uint8")
    dw = RNG.integers(-128, 128, (3, 2, 3, 3)).astype("int8")
    got = both(y, [x, w], [dx, dw])
    xp = np.pad(dx.astype(np.int64) - 100, ((0, 0), (0, 0), (1, 1), (1, 1)))
    wk = dw.astype(np.int64) - kz.reshape(3, 1, 1, 1)
    expect = np.zeros((1, 3, 5, 5), np.int64)
    for o, i, j in np.ndindex(3, 5, 5):
        expect[0, o, i, j] = np.sum(xp[0, :, i : i + 3, j : j + 3] * wk[o])
    np.testing.assert_array_equal(got, expect)


def test_concatenate_requantizes_in_integers() -> None:
    a = relay.var("a", shape=(1, 6), dtype="int8")
    b = relay.var("b", shape=(1, 6), dtype="int8")
    y = relay.qnn.op.concatenate(
        (a, b), (relay.const(0.3), relay.const(0.2)), (relay.const(1), relay.const(0)),
        relay.const(0.2), relay.const(0), axis=1,
    )  # fmt: skip
    da = RNG.integers(-128, 128, (1, 6)).astype("int8")
    db = RNG.integers(-128, 128, (1, 6)).astype("int8")
    got = both(y, [a, b], [da, db])
    left = ref_requantize(da, 0.3, 1, 0.2, 0, "int8")
    np.testing.assert_array_equal(got, np.concatenate([left, db], axis=1))


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.0, -0.5, float("nan"), float("inf")])
def test_bad_constant_scales_are_refused(scale: float) -> None:
    x = relay.var("x", shape=(4,))
    with pytest.raises(IRError, match="qnn.quantize: output_scale must be finite and positive"):
        relay.qnn.op.quantize(x, relay.const(scale), relay.const(0))


def test_zero_point_outside_dtype_range() -> None:
    x = relay.var("x", shape=(4,), dtype="int32")
    with pytest.raises(IRError, match=r"output_zero_point \[200\] is outside the range of int8"):
        relay.qnn.op.requantize(
            x, relay.const(1.0), relay.const(0), relay.const(1.0), relay.const(200)
        )
    y = relay.var("y", shape=(4,), dtype="uint8")
    with pytest.raises(IRError, match="input_zero_point"):
        relay.qnn.op.dequantize(y, relay.const(1.0), relay.const(-1))


def test_per_channel_shape_must_match_axis() -> None:
    x = relay.var("x", shape=(2, 3))
    y = relay.qnn.op.quantize(x, relay.const(np.ones(4, "float32")), relay.const(0), axis=1)
    with pytest.raises(
        RelayTypeError, match="output_scale has 4 entries but axis 1 of the data has 3"
    ):
        relay.transform.InferType()(IRModule.from_expr(relay.Function([x], y)))


def test_run_time_scale_refused_where_a_constant_is_needed() -> None:
    x = relay.var("x", shape=(4,), dtype="int32")
    s = relay.var("s", shape=(), dtype="float32")
    y = relay.qnn.op.requantize(x, s, relay.const(0), relay.const(1.0), relay.const(0))
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function([x, s], y)))
    with pytest.raises(IRError, match="qnn.requantize: input_scale must be a constant .* %s"):
        relay.qnn.transform.CanonicalizeOps()(mod)
    # run as is, the kernel checks the value it gets
    ex = relay.create_executor("debug", mod=mod).evaluate()
    with pytest.raises(ExecutionError, match="input_scale must be finite and positive"):
        ex(np.arange(4, dtype="int32"), np.float32(0.0))


# -- unary (float emulation) ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["tanh", "exp", "sqrt", "rsqrt", "erf", "abs", "sigmoid", "hardswish", "log"]
)
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_unary_all_values(name: str, dtype: str) -> None:
    import scipy.special

    floats = {
        "tanh": np.tanh, "exp": np.exp, "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v),
        "erf": scipy.special.erf, "abs": np.abs, "sigmoid": scipy.special.expit,
        "hardswish": lambda v: v * np.clip(v + 3.0, 0.0, 6.0) / 6.0, "log": np.log,
    }  # fmt: skip
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    start = 1 if name in ("sqrt", "rsqrt", "log") else lo
    data = np.arange(start, hi + 1).astype(dtype)
    x = relay.var("x", shape=data.shape, dtype=dtype)
    y = getattr(relay.qnn.op, name)(
        x, relay.const(0.03), relay.const(0), relay.const(0.05), relay.const(0)
    )
    got = both(y, [x], [data])
    with np.errstate(all="ignore"):
        real = floats[name](data.astype(np.float64) * np.float64(np.float32(0.03)))
        expect = np.clip(round_half_away(real / np.float64(np.float32(0.05))), lo, hi)
    # float32 emulation against float64: equal except where a value lies on a rounding edge
    assert np.mean(got.astype(np.int64) == expect) > 0.97
    assert np.max(np.abs(got.astype(np.int64) - expect)) <= 1


def test_leaky_relu_exact() -> None:
    data = np.arange(0, 256).astype("uint8")
    x = relay.var("x", shape=data.shape, dtype="uint8")
    y = relay.qnn.op.leaky_relu(
        x, 0.9, relay.const(0.125), relay.const(60), relay.const(0.6), relay.const(17)
    )
    got = both(y, [x], [data])
    f32 = lambda v: float(np.float32(v))  # noqa: E731
    expect = []
    for v in data.astype(int):
        if v < 60:
            r = scale_int(scale_int(v - 60, 0.9, True), f32(0.125) / f32(0.6), True) + 17
        else:
            r = scale_int(v - 60, f32(0.125) / f32(0.6), True) + 17
        expect.append(min(max(r, 0), 255))
    np.testing.assert_array_equal(got, np.array(expect, "uint8"))


def test_conv2d_transpose_per_channel_kernel_zero_point() -> None:
    x = relay.var("x", shape=(1, 2, 3, 3), dtype="int8")
    w = relay.var("w", shape=(2, 3, 2, 2), dtype="int8")  # IOHW
    kz = np.array([1, -2, 0], "int32")
    y = relay.qnn.op.conv2d_transpose(
        x, w, relay.const(-5), relay.const(kz), relay.const(0.1), relay.const(0.3),
        kernel_size=(2, 2), channels=3, strides=(2, 2),
    )  # fmt: skip
    dx = RNG.integers(-128, 128, (1, 2, 3, 3)).astype("int8")
    dw = RNG.integers(-128, 128, (2, 3, 2, 2)).astype("int8")
    got = both(y, [x, w], [dx, dw])
    xs = dx.astype(np.int64) + 5
    ws = dw.astype(np.int64) - kz.reshape(1, 3, 1, 1)
    expect = np.zeros((1, 3, 6, 6), np.int64)
    for c, i, j in np.ndindex(2, 3, 3):
        expect[0, :, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2] += xs[0, c, i, j] * ws[c]
    np.testing.assert_array_equal(got, expect)


def test_simulated_quantize_and_dequantize_with_run_time_dtype() -> None:
    from relaykit.op.qnn.quantize import SQNN_DTYPE_TO_CODE

    data = (RNG.standard_normal((2, 5)) * 40).astype("float32")
    x = relay.var("x", shape=(2, 5))
    code = relay.var("code", shape=(), dtype="int32")
    scales = np.array([0.5, 0.25], "float32")
    zps = np.array([127, 3], "int32")
    sq = relay.qnn.op.simulated_quantize(
        x, relay.const(scales), relay.const(zps), axis=0, out_dtype=code
    )
    for name in ("int8", "uint8", "int32"):
        got = run(sq, [x, code], [data, np.int32(SQNN_DTYPE_TO_CODE[name])])
        lo, hi = np.iinfo(name).min, np.iinfo(name).max
        ratio = data / scales[:, None]
        expect = np.clip(round_half_away(ratio.astype(np.float64)) + zps[:, None], lo, hi)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, expect)
    passed = run(sq, [x, code], [data, np.int32(SQNN_DTYPE_TO_CODE["disable"])])
    np.testing.assert_array_equal(passed, data)
    sd = relay.qnn.op.simulated_dequantize(x, relay.const(0.5), relay.const(4), in_dtype="int8")
    got = run(sd, [x], [np.round(data)])
    np.testing.assert_allclose(got, (np.round(data).astype(np.float64) - 4) * 0.5)


def test_fold_constant_folds_qnn_only_when_asked() -> None:
    c = relay.const(np.array([1.0, 2.0, 3.0], "float32"))
    y = relay.qnn.op.quantize(c, relay.const(0.5), relay.const(0))
    mod = IRModule.from_expr(relay.Function([], y))
    kept = relay.transform.FoldConstant()(mod)["main"].body
    assert kept.op.name == "qnn.quantize"
    folded = relay.transform.FoldConstant(fold_qnn=True)(mod)["main"].body
    np.testing.assert_array_equal(folded.data.numpy(), np.array([2, 4, 6], "int8"))


@pytest.mark.parametrize(("lo", "hi", "removed"), [(-128, 127, True), (-127, 127, False)])
def test_legalize_removes_full_range_clip_after_requantize(lo: int, hi: int, removed: bool) -> None:
    x = relay.var("x", shape=(4,), dtype="int32")
    q = relay.qnn.op.requantize(
        x, relay.const(1.0), relay.const(0), relay.const(1.0), relay.const(-128)
    )
    mod = IRModule.from_expr(relay.Function([x], relay.clip(q, lo, hi)))
    with relay.transform.PassContext(opt_level=3):
        body = relay.transform.Legalize()(mod)["main"].body
    assert body.op.name == ("qnn.requantize" if removed else "clip")
