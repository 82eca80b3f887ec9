"""The native integer (QNN) host kernels against NumPy int64 computations written here:
quantized convolution (im2col and depthwise, strides, padding with the zero point),
dense and batch_matmul with their fused bias + requantize + clip epilogues, and the
elementwise requantize / quantize / dequantize / add; bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends.host import native as host_native
from relaykit.backends.host import qnn as host_qnn
from relaykit.backends.host import table
from relaykit.contrib import graph_executor
from relaykit.errors import RelayKitError

RNG = np.random.default_rng(26)
native = pytest.mark.skipif(
    host_qnn.kernels() is None, reason="no C compiler: the native integer kernels are unavailable"
)
pytestmark = native


# -- the references (int64, written out) ---------------------------------------------------


def q31(multiplier: float) -> tuple[int, int]:
    """multiplier ~= m * 2**(shift - 31), m rounded half away from zero."""
    sig, exp = math.frexp(multiplier)
    m = math.floor(abs(sig) * 2**31 + 0.5)
    if m == 2**31:
        m, exp = m // 2, exp + 1
    return (m if sig >= 0 else -m), exp


def requant_ref(acc, in_scale, in_zp, out_scale, out_zp, dtype, rounding="UPWARD", axis=1):
    """TVM's integer requantize of int64 ``acc`` (scales per tensor or along ``axis``)."""
    acc = np.asarray(acc, np.int64)
    isc = np.broadcast_to(np.asarray(in_scale, np.float32).reshape(-1), (acc.shape[axis],))
    osc = np.broadcast_to(np.asarray(out_scale, np.float32).reshape(-1), (acc.shape[axis],))
    out = np.empty(acc.shape, np.int64)
    for c in range(acc.shape[axis]):
        sl = [slice(None)] * acc.ndim
        sl[axis] = c
        v = (acc[tuple(sl)] - in_zp).astype(np.int32).astype(np.int64)
        if not (np.asarray(in_scale).size == 1 and np.asarray(out_scale).size == 1
                and isc[c] == osc[c]):  # fmt: skip
            m, shift = q31(float(np.float64(isc[c]) / np.float64(osc[c])))
            total = max(-shift, 0) + 31
            x = (v << max(shift, 0)) * m
            rnd = np.int64(1) << (total - 1)
            if rounding == "TONEAREST":
                rnd = np.where(x >= 0, rnd, rnd - 1)
            elif rounding == "TONEAREST_EVEN":  # a half goes up only from an odd quotient
                rnd = rnd - 1 + ((x >> total) & 1)
            v = ((x + rnd) >> total).astype(np.int32).astype(np.int64)
        out[tuple(sl)] = v + out_zp
    info = np.iinfo(dtype)
    return np.clip(out, info.min, info.max).astype(dtype)


def conv_ref(x, w, xzp, wzp, strides, pads, groups):
    """NCHW/OIHW convolution of (x - xzp) and (w - wzp) in int64, padding with xzp."""
    xs = x.astype(np.int64) - xzp
    ws = w.astype(np.int64) - np.asarray(wzp, np.int64).reshape(-1, 1, 1, 1)
    pt, pl, pb, pr = pads
    xp = np.pad(xs, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, _, h, wd = xp.shape
    oc, cg, kh, kw = w.shape
    sh, sw = strides
    oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.zeros((n, oc, oh, ow), np.int64)
    per = oc // groups
    for o in range(oc):
        g = o // per
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg : (g + 1) * cg, i : i + sh * oh : sh, j : j + sw * ow : sw]
                out[:, o] += np.einsum("nchw,c->nhw", patch, ws[o, :, i, j])
    return out


@pytest.fixture(autouse=True)
def no_reference_kernels(request, monkeypatch):
    """Every QNN operator binds a native kernel here (the reference ones are not used)."""
    if request.node.name.startswith("test_native_off"):
        return
    real = table._fallback

    def refuse(kernel, attrs, args, outs):
        if "qnn" in getattr(kernel, "__module__", ""):
            raise AssertionError(f"a QNN reference kernel was bound: {kernel.__qualname__}")
        return real(kernel, attrs, args, outs)

    monkeypatch.setattr(table, "_fallback", refuse)


def run_graph(expr, inputs, params=None):
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in inputs.items():
        m.set_input(k, v)
    m.run()
    return m.get_output(0).numpy(), lib


def qvals(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, size=shape).astype(dtype)


def c(v, dtype=None):
    return relay.const(np.asarray(v, dtype) if dtype else v)


# -- convolution ---------------------------------------------------------------------------


CONV_CASES = [
    # x dtype, w dtype, shape, oc, kernel, strides, pads, groups, per-channel w zp
    ("uint8", "int8", (1, 8, 12, 12), 16, (3, 3), (1, 1), (1, 1, 1, 1), 1, False),
    ("uint8", "int8", (2, 3, 17, 15), 8, (7, 7), (2, 2), (3, 3, 3, 3), 1, False),
    ("int8", "int8", (1, 5, 9, 9), 6, (3, 3), (2, 1), (0, 1, 2, 0), 1, False),
    ("uint8", "uint8", (1, 4, 8, 8), 5, (1, 1), (1, 1), (0, 0, 0, 0), 1, True),
    ("int8", "uint8", (1, 6, 7, 9), 33, (3, 2), (1, 2), (1, 0, 1, 1), 1, True),
    ("uint8", "int8", (1, 12, 11, 11), 12, (3, 3), (1, 1), (1, 1, 1, 1), 12, False),
    ("uint8", "int8", (2, 8, 14, 14), 8, (3, 3), (2, 2), (1, 1, 1, 1), 8, True),
    ("int8", "uint8", (1, 4, 9, 8), 8, (5, 5), (1, 2), (2, 2, 2, 2), 4, True),
    # channels in fours: k = (tap, channel), unit and wider strides
    ("int8", "int8", (1, 8, 11, 13), 12, (3, 3), (2, 2), (1, 0, 1, 2), 1, True),
    ("uint8", "int8", (2, 12, 19, 21), 5, (3, 2), (1, 1), (1, 1, 0, 1), 1, False),
    ("uint8", "int8", (1, 4, 9, 70), 6, (3, 3), (2, 2), (1, 1, 1, 1), 1, False),
    ("int8", "int8", (1, 8, 5, 66), 4, (1, 1), (2, 2), (0, 0, 0, 0), 1, True),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("out_dtype", ["uint8", "int8"])
def test_conv2d_bias_requantize_clip(case, out_dtype):
    xd, wd, shape, oc, ks, strides, pads, groups, per_channel = case
    x = qvals(xd, shape)
    w = qvals(wd, (oc, shape[1] // groups, *ks))
    xzp = int(RNG.integers(np.iinfo(xd).min // 2 + 1, np.iinfo(xd).max // 2))
    wzp = (
        RNG.integers(np.iinfo(wd).min // 4, np.iinfo(wd).max // 4, size=oc).astype("int32")
        if per_channel
        else np.int32(0 if wd == "int8" else 128)
    )
    bias = RNG.integers(-5000, 5000, size=oc).astype("int32")
    xs, ws = 0.02, RNG.uniform(0.001, 0.01, size=oc).astype("float32")
    osc, ozp = np.float32(0.05 * np.sqrt(shape[1] * ks[0] * ks[1])), 7
    xv = relay.var("x", shape=shape, dtype=xd)
    y = relay.qnn.op.conv2d(
        xv, c(w), c(xzp, "int32"), c(wzp, "int32"), c(xs, "float32"), c(ws), kernel_size=ks,
        channels=oc, strides=strides, padding=pads, groups=groups,
    )  # fmt: skip
    y = relay.nn.bias_add(y, c(bias))
    y = relay.qnn.op.requantize(
        y, c(np.float32(xs) * ws), c(0, "int32"), c(osc), c(ozp, "int32"), axis=1,
        out_dtype=out_dtype,
    )  # fmt: skip
    y = relay.clip(y, -20 if out_dtype == "int8" else 3, 100)
    got, lib = run_graph(y, {"x": x})
    acc = conv_ref(x, w, xzp, wzp, strides, pads, groups) + bias.reshape(1, -1, 1, 1)
    want = requant_ref(acc, np.float32(xs) * ws, 0, osc, ozp, out_dtype)
    want = np.clip(want, -20 if out_dtype == "int8" else 3, 100)
    np.testing.assert_array_equal(got, want)
    groups = list(lib.plan.fusion.values())
    assert [g.names for g in groups] == [("nn.bias_add", "qnn.requantize", "clip")]


def test_conv2d_int32_alone():
    x, w = qvals("uint8", (1, 6, 9, 9)), qvals("int8", (7, 6, 3, 3))
    xv = relay.var("x", shape=x.shape, dtype="uint8")
    y = relay.qnn.op.conv2d(
        xv, c(w), c(131, "int32"), c(0, "int32"), c(0.1, "float32"), c(0.1, "float32"),
        kernel_size=(3, 3), channels=7, padding=(1, 1),
    )  # fmt: skip
    got, _ = run_graph(y, {"x": x})
    np.testing.assert_array_equal(got, conv_ref(x, w, 131, 0, (1, 1), (1, 1, 1, 1), 1))


# -- dense and batch_matmul ----------------------------------------------------------------


@pytest.mark.parametrize("xd,wd", [("uint8", "int8"), ("int8", "int8"), ("uint8", "uint8")])
@pytest.mark.parametrize("m,k,n", [(1, 64, 10), (37, 30, 70), (128, 96, 33)])
def test_dense_requantize(xd, wd, m, k, n):
    x, w = qvals(xd, (m, k)), qvals(wd, (n, k))
    xzp, wzp = (
        int(RNG.integers(-50, 50)) + (128 if xd == "uint8" else 0),
        (RNG.integers(-20, 20, size=n).astype("int32") + (128 if wd == "uint8" else 0)),
    )
    bias = RNG.integers(-3000, 3000, size=n).astype("int32")
    ws = RNG.uniform(0.001, 0.01, size=n).astype("float32")
    xv = relay.var("x", shape=(m, k), dtype=xd)
    y = relay.qnn.op.dense(xv, c(w), c(xzp, "int32"), c(wzp), c(0.03, "float32"), c(ws), units=n)
    y = relay.nn.bias_add(y, c(bias), axis=1)
    y = relay.qnn.op.requantize(
        y, c(np.float32(0.03) * ws), c(0, "int32"), c(np.float32(0.4)), c(-3, "int32"),
        axis=1, out_dtype="int8", rounding="TONEAREST",
    )  # fmt: skip
    got, _ = run_graph(y, {"x": x})
    acc = (x.astype(np.int64) - xzp) @ (w.astype(np.int64) - wzp.reshape(-1, 1)).T + bias
    want = requant_ref(acc, np.float32(0.03) * ws, 0, np.float32(0.4), -3, "int8", "TONEAREST")
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("xd,yd", [("uint8", "int8"), ("int8", "uint8"), ("uint8", "uint8")])
@pytest.mark.parametrize("transpose_b", [True, False])
def test_batch_matmul_requantize(xd, yd, transpose_b):
    b, m, k, n = 3, 9, 20, 13
    x, yv_ = qvals(xd, (b, m, k)), qvals(yd, (b, n, k) if transpose_b else (b, k, n))
    xzp, yzp = (130 if xd == "uint8" else -4), (120 if yd == "uint8" else 3)
    xv = relay.var("x", shape=x.shape, dtype=xd)
    yv = relay.var("y", shape=yv_.shape, dtype=yd)
    z = relay.qnn.op.batch_matmul(
        xv,
        yv,
        c(xzp, "int32"),
        c(yzp, "int32"),
        c(0.02, "float32"),
        c(0.03, "float32"),
        transpose_b=transpose_b,
    )
    z = relay.qnn.op.requantize(
        z, c(np.float32(0.02) * np.float32(0.03)), c(0, "int32"), c(np.float32(0.5)),
        c(10, "int32"), out_dtype="uint8",
    )  # fmt: skip
    got, _ = run_graph(z, {"x": x, "y": yv_})
    spec = "bmk,bnk->bmn" if transpose_b else "bmk,bkn->bmn"
    acc = np.einsum(spec, x.astype(np.int64) - xzp, yv_.astype(np.int64) - yzp)
    want = requant_ref(acc, np.float32(0.02) * np.float32(0.03), 0, 0.5, 10, "uint8", axis=2)
    np.testing.assert_array_equal(got, want)


def test_batch_matmul_int32_alone():
    x, y = qvals("int8", (2, 5, 8)), qvals("int8", (2, 6, 8))
    xv, yv = (
        relay.var("x", shape=x.shape, dtype="int8"),
        relay.var("y", shape=y.shape, dtype="int8"),
    )
    z = relay.qnn.op.batch_matmul(
        xv, yv, c(-1, "int32"), c(2, "int32"), c(0.02, "float32"), c(0.03, "float32")
    )
    got, _ = run_graph(z, {"x": x, "y": y})
    want = np.einsum("bmk,bnk->bmn", x.astype(np.int64) + 1, y.astype(np.int64) - 2)
    np.testing.assert_array_equal(got, want)


# -- elementwise ---------------------------------------------------------------------------


def requant_float_ref(acc, in_scale, out_scale, out_zp, dtype, axis=1):
    """onnxruntime's requantization: ``rint(float32(acc) * float32(in / out)) + zp``."""
    acc = np.asarray(acc, np.int64)
    shape = [1] * acc.ndim
    shape[axis] = -1
    ratio = (np.asarray(in_scale, np.float64) / np.float64(out_scale)).astype(np.float32)
    v = acc.astype(np.float32) * ratio.reshape(shape if ratio.size > 1 else ())
    info = np.iinfo(dtype)
    return np.clip(np.rint(v).astype(np.int64) + out_zp, info.min, info.max).astype(dtype)


@pytest.mark.parametrize("xd,wd", [("uint8", "int8"), ("int8", "int8")])
def test_dense_requantize_in_float32_as_onnxruntime(xd, wd):
    m, k, n = 33, 70, 40
    x, w = qvals(xd, (m, k)), qvals(wd, (n, k))
    xzp = 128 if xd == "uint8" else 0
    ws = RNG.uniform(0.001, 0.01, size=n).astype("float32")
    xv = relay.var("x", shape=(m, k), dtype=xd)
    y = relay.qnn.op.dense(
        xv, c(w), c(xzp, "int32"), c(0, "int32"), c(0.03, "float32"), c(ws), units=n
    )
    y = relay.qnn.op.requantize(
        y, c(np.float32(0.03) * ws), c(0, "int32"), c(np.float32(0.11)), c(5, "int32"),
        axis=1, out_dtype="int8", rounding="TONEAREST_EVEN", compute_dtype="float32",
    )  # fmt: skip
    got, _ = run_graph(y, {"x": x})
    acc = (x.astype(np.int64) - xzp) @ w.astype(np.int64).T
    want = requant_float_ref(acc, np.float32(0.03) * ws, np.float32(0.11), 5, "int8")
    np.testing.assert_array_equal(got, want)
    assert (
        host_qnn.requant_params(
            n,
            None,
            np.float32(0.03) * ws,
            0,
            np.float32(0.11),
            5,
            "TONEAREST_EVEN",
            "int8",
            compute_dtype="float32",
        ).mode
        == 3
    )  # fmt: skip  (the native epilogue, not the reference kernel)


@pytest.mark.parametrize("in_dtype", ["int32", "int8", "uint8"])
@pytest.mark.parametrize("rounding", ["UPWARD", "TONEAREST", "TONEAREST_EVEN"])
def test_requantize_alone(in_dtype, rounding):
    x = (
        qvals(in_dtype, (2, 4, 5, 6))
        if in_dtype != "int32"
        else RNG.integers(-(2**20), 2**20, size=(2, 4, 5, 6)).astype("int32")
    )
    isc = RNG.uniform(0.01, 0.2, size=4).astype("float32")
    xv = relay.var("x", shape=x.shape, dtype=in_dtype)
    izp = 3 if in_dtype != "int32" else 0
    y = relay.qnn.op.requantize(
        xv, c(isc), c(izp, "int32"), c(np.float32(0.07)), c(-9, "int32"), axis=1,
        rounding=rounding, out_dtype="int8",
    )  # fmt: skip
    got, _ = run_graph(y, {"x": x})
    np.testing.assert_array_equal(got, requant_ref(x, isc, izp, 0.07, -9, "int8", rounding))


@pytest.mark.parametrize("rounding", ["TONEAREST", "UPWARD", "TONEAREST_EVEN"])
@pytest.mark.parametrize("out_dtype", ["int8", "uint8"])
def test_quantize_dequantize(rounding, out_dtype):
    scale = np.float32(0.05)
    x = (RNG.integers(-300, 300, size=(3, 50)) * scale / 2).astype("float32")  # many halves
    xv = relay.var("x", shape=x.shape, dtype="float32")
    zp = 5 if out_dtype == "int8" else 128
    q = relay.qnn.op.quantize(xv, c(scale), c(zp, "int32"), out_dtype=out_dtype, rounding=rounding)
    got, _ = run_graph(q, {"x": x})
    v = x / scale  # float32 division, as the operator defines it
    if rounding == "TONEAREST":
        r = np.where(np.abs(v - np.trunc(v)) >= 0.5, np.trunc(v) + np.sign(v), np.trunc(v))
    elif rounding == "UPWARD":
        r = np.floor(v + np.float32(0.5))
    else:
        r = np.rint(v)
    info = np.iinfo(out_dtype)
    want = np.clip(r.astype(np.int64) + zp, info.min, info.max).astype(out_dtype)
    np.testing.assert_array_equal(got, want)
    qv = relay.var("q", shape=x.shape, dtype=out_dtype)
    d = relay.qnn.op.dequantize(qv, c(scale), c(zp, "int32"))
    got_d, _ = run_graph(d, {"q": want})
    want_d = (want.astype(np.int64) - zp).astype(np.float32) * scale
    np.testing.assert_array_equal(got_d, want_d)


BINARY_SHAPES = [
    ((2, 7, 9), (2, 7, 9)),
    ((9,), (2, 7, 9)),
    ((2, 7, 9), (1, 1, 9)),
    ((1, 3, 5, 70000 // 15), (1, 3, 5, 70000 // 15)),
    ((1,), (3, 9000)),
    ((2, 12, 8), (1,)),
]


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("shapes", BINARY_SHAPES)
@pytest.mark.parametrize("same", [False, True])
def test_qnn_add(dtype, shapes, same):
    a, b = qvals(dtype, shapes[0]), qvals(dtype, shapes[1])
    av, bv = relay.var("a", shape=a.shape, dtype=dtype), relay.var("b", shape=b.shape, dtype=dtype)
    zs = (3, -2, 1) if dtype == "int8" else (120, 131, 125)
    sa = np.float32(0.06 if same else 0.03)
    za = zs[2] if same else zs[0]
    y = relay.qnn.add(
        av, bv, c(sa), c(za, "int32"), c(np.float32(0.05)), c(zs[1], "int32"),
        c(np.float32(0.06)), c(zs[2], "int32"),
    )  # fmt: skip
    got, _ = run_graph(y, {"a": a, "b": b})
    ra = a.astype(np.int64) if same else requant_ref(a, sa, za, 0.06, zs[2], "int32", axis=0)
    rb = requant_ref(b, 0.05, zs[1], 0.06, zs[2], "int32", axis=0)
    info = np.iinfo(dtype)
    want = np.clip(ra.astype(np.int64) + rb - zs[2], info.min, info.max).astype(dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("shapes", BINARY_SHAPES)
def test_qnn_mul(dtype, shapes):
    a, b = qvals(dtype, shapes[0]), qvals(dtype, shapes[1])
    av, bv = relay.var("a", shape=a.shape, dtype=dtype), relay.var("b", shape=b.shape, dtype=dtype)
    zs = (3, -2, 1) if dtype == "int8" else (120, 131, 125)
    y = relay.qnn.mul(
        av, bv, c(np.float32(0.03)), c(zs[0], "int32"), c(np.float32(0.05)), c(zs[1], "int32"),
        c(np.float32(0.2)), c(zs[2], "int32"),
    )  # fmt: skip
    got, _ = run_graph(y, {"a": a, "b": b})
    prod = (a.astype(np.int64) - zs[0]) * (b.astype(np.int64) - zs[1])
    want = requant_ref(prod, np.float32(0.03) * np.float32(0.05), 0, 0.2, zs[2], dtype, axis=0)
    np.testing.assert_array_equal(got, want)


def test_native_off_uses_reference():
    """Without the native library the same graph runs the reference kernels (same bits)."""
    x, w = qvals("uint8", (1, 4, 6, 6)), qvals("int8", (3, 4, 3, 3))
    xv = relay.var("x", shape=x.shape, dtype="uint8")
    y = relay.qnn.op.conv2d(
        xv, c(w), c(100, "int32"), c(0, "int32"), c(0.1, "float32"), c(0.1, "float32"),
        kernel_size=(3, 3), channels=3,
    )  # fmt: skip
    with host_native.disabled():
        got, _ = run_graph(y, {"x": x})
    np.testing.assert_array_equal(got, conv_ref(x, w, 100, 0, (1, 1), (0, 0, 0, 0), 1))


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_max_pool2d_integer(dtype):
    """An int8 model's max pool pads with the dtype's smallest value (never the maximum)."""
    x = qvals(dtype, (1, 3, 9, 10))
    xv = relay.var("x", shape=x.shape, dtype=dtype)
    y = relay.nn.max_pool2d(xv, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    got, _ = run_graph(y, {"x": x})
    lo = np.iinfo(dtype).min
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=lo)
    want = np.full((1, 3, 5, 5), lo, np.int64)
    for i in range(3):
        for j in range(3):
            want = np.maximum(want, xp[:, :, i : i + 9 : 2, j : j + 9 : 2])
    np.testing.assert_array_equal(got, want.astype(dtype))


@pytest.mark.parametrize("groups", [1, 8])
def test_fused_output_reuses_input_memory(groups):
    """Convolutions in a row: the planner may hand a later one's output an earlier one's
    input memory; the im2col product and the depthwise kernel read it before writing."""
    x = qvals("uint8", (1, 8, 10, 10))
    w1, w2 = qvals("int8", (8, 8 // groups, 3, 3)), qvals("int8", (8, 8 // groups, 3, 3))
    xv = relay.var("x", shape=x.shape, dtype="uint8")

    def layer(v, w):
        y = relay.qnn.op.conv2d(
            v, c(w), c(128, "int32"), c(0, "int32"), c(0.05, "float32"), c(0.01, "float32"),
            kernel_size=(3, 3), channels=8, padding=(1, 1), groups=groups,
        )  # fmt: skip
        return relay.qnn.op.requantize(
            y, c(np.float32(0.0005)), c(0, "int32"), c(np.float32(0.2)), c(128, "int32"),
            out_dtype="uint8",
        )  # fmt: skip

    got, _ = run_graph(layer(layer(layer(xv, w1), w2), w1), {"x": x})
    want = x
    for w in (w1, w2, w1):
        acc = conv_ref(want, w, 128, 0, (1, 1), (1, 1, 1, 1), groups)
        want = requant_ref(acc, 0.0005, 0, 0.2, 128, "uint8")
    np.testing.assert_array_equal(got, want)


def test_gather_before_dequantize():
    """An int8 embedding table is gathered, then dequantized (not dequantized whole)."""
    table = qvals("int8", (50, 6))
    ids = np.array([[3, 49, 0, 7]], "int32")
    iv = relay.var("ids", shape=ids.shape, dtype="int32")
    d = relay.qnn.op.dequantize(c(table), c(np.float32(0.25)), c(-3, "int32"))
    got, lib = run_graph(relay.take(d, iv, axis=0), {"ids": ids})
    want = (table[ids].astype(np.int64) + 3).astype(np.float32) * np.float32(0.25)
    np.testing.assert_array_equal(got, want)
    deq = [n for n in lib.plan.nodes if n.kind == "op" and n.name == "qnn.dequantize"]
    assert [lib.plan.entries[n.outputs[0]].shape for n in deq] == [(1, 4, 6)]


def test_dense_zero_point_computed_at_run_time():
    """Dynamic quantization: the input zero point is a value of the run (an executor
    input here); out of its dtype's range it is an error, as in the reference kernel."""
    x, w = qvals("uint8", (5, 12)), qvals("int8", (7, 12))
    xv = relay.var("x", shape=x.shape, dtype="uint8")
    zv = relay.var("z", shape=(), dtype="int32")
    y = relay.qnn.op.dense(xv, c(w), zv, c(0, "int32"), c(0.1, "float32"), c(0.2, "float32"), 7)
    mod = tvm.IRModule.from_expr(relay.Function([xv, zv], y))
    lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for z in (0, 77, 255):
        m.set_input("x", x)
        m.set_input("z", np.array(z, "int32"))
        m.run()
        want = (x.astype(np.int64) - z) @ w.astype(np.int64).T
        np.testing.assert_array_equal(m.get_output(0).numpy(), want)
    m.set_input("z", np.array(300, "int32"))
    with pytest.raises(RelayKitError, match="input_zero_point"):
        m.run()


def test_fused_int8_chain_survives_export(tmp_path):
    """An exported artifact carries the int8 groups; loaded without native code from the
    file (the host kernels are relaykit's own), it computes the same integers."""
    x, w = qvals("uint8", (1, 6, 9, 9)), qvals("int8", (10, 6, 3, 3))
    xv = relay.var("x", shape=x.shape, dtype="uint8")
    y = relay.qnn.op.conv2d(
        xv, c(w), c(120, "int32"), c(0, "int32"), c(0.05, "float32"), c(0.01, "float32"),
        kernel_size=(3, 3), channels=10, padding=(1, 1),
    )  # fmt: skip
    y = relay.qnn.op.requantize(
        y, c(np.float32(0.0005)), c(0, "int32"), c(np.float32(0.3)), c(5, "int32"),
        out_dtype="int8",
    )  # fmt: skip
    got, lib = run_graph(y, {"x": x})
    path = str(tmp_path / "q.rkmod")
    lib.export_library(path)
    loaded = tvm.runtime.load_module(path, allow_native=False)
    assert loaded.plan.fusion == lib.plan.fusion and loaded.plan.fusion
    m = graph_executor.GraphModule(loaded["default"](tvm.cpu()))
    m.set_input("x", x)
    m.run()
    acc = conv_ref(x, w, 120, 0, (1, 1), (1, 1, 1, 1), 1)
    want = requant_ref(acc, 0.0005, 0, 0.3, 5, "int8")
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(m.get_output(0).numpy(), want)


# -- the byte depthwise kernel, the 1x1 packing, the vector epilogue -----------------------

DW8_CASES = [
    # x dtype, shape, channel multiplier, kernel, strides, pads, dilation, w zp per channel
    ("uint8", (1, 16, 13, 19), 1, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),
    ("int8", (1, 9, 17, 33), 1, (3, 3), (2, 2), (0, 1, 1, 0), (1, 1), True),
    ("uint8", (2, 5, 12, 40), 2, (2, 4), (1, 2), (1, 2, 0, 1), (2, 3), True),
    ("int8", (1, 3, 30, 9), 3, (5, 1), (3, 1), (2, 0, 2, 0), (1, 1), False),
]


@pytest.mark.parametrize("case", DW8_CASES)
@pytest.mark.parametrize("rounding", ["UPWARD", "TONEAREST", "TONEAREST_EVEN"])
def test_depthwise_byte_kernel(case, rounding, monkeypatch):
    """Depthwise convolutions the byte kernel takes (kernel rows of up to four taps, the
    weights minus their zero point within int8), against int64 NumPy; the kernel is used."""
    xd, shape, mult, ks, strides, pads, dil, per_channel = case
    c_in = shape[1]
    oc = c_in * mult
    x = qvals(xd, shape)
    info = np.iinfo(xd)
    xzp = int(RNG.integers(info.min // 2, info.max // 2))
    wzp = RNG.integers(-20, 20, size=oc).astype("int32") if per_channel else np.int32(0)
    w = RNG.integers(-100, 100, (oc, 1, *ks)) + np.asarray(wzp).reshape(-1, 1, 1, 1)
    w = w.astype("int8")
    bias = RNG.integers(-3000, 3000, size=oc).astype("int32")
    ws = RNG.uniform(0.002, 0.01, size=oc).astype("float32")
    osc = np.float32(0.3)
    used = []
    real = host_qnn._conv_dw8

    def spy(*args, **kwargs):
        run = real(*args, **kwargs)
        used.append(run is not None)
        return run

    monkeypatch.setattr(host_qnn, "_conv_dw8", spy)
    xv = relay.var("x", shape=shape, dtype=xd)
    y = relay.qnn.op.conv2d(
        xv, c(w), c(xzp, "int32"), c(wzp, "int32"), c(0.02, "float32"), c(ws), kernel_size=ks,
        channels=oc, strides=strides, padding=pads, dilation=dil, groups=c_in,
    )  # fmt: skip
    y = relay.nn.bias_add(y, c(bias))
    y = relay.qnn.op.requantize(
        y, c(np.float32(0.02) * ws), c(0, "int32"), c(osc), c(5, "int32"), axis=1,
        rounding=rounding, out_dtype="uint8",
    )  # fmt: skip
    got, _ = run_graph(y, {"x": x})
    acc = dw_ref(x, w, xzp, wzp, strides, pads, dil, mult) + bias.reshape(1, -1, 1, 1)
    want = requant_ref(acc, np.float32(0.02) * ws, 0, osc, 5, "uint8", rounding)
    np.testing.assert_array_equal(got, want)
    assert used and all(used) == bool(host_qnn.kernels().rk_q_dw8_ok())


def dw_ref(x, w, xzp, wzp, strides, pads, dil, mult):
    """Depthwise convolution with dilation and a channel multiplier, int64."""
    xs = x.astype(np.int64) - xzp
    ws = w.astype(np.int64) - np.asarray(wzp, np.int64).reshape(-1, 1, 1, 1)
    pt, pl, pb, pr = pads
    xp = np.pad(xs, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, _, h, wd = xp.shape
    oc, _, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dil
    oh, ow = (h - (kh - 1) * dh - 1) // sh + 1, (wd - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, oc, oh, ow), np.int64)
    for o in range(oc):
        for i in range(kh):
            for j in range(kw):
                a, b = i * dh, j * dw
                patch = xp[
                    :, o // mult, a : a + sh * (oh - 1) + 1 : sh, b : b + sw * (ow - 1) + 1 : sw
                ]
                out[:, o] += patch * ws[o, 0, i, j]
    return out


def test_depthwise_weights_outside_int8_take_the_int16_kernel(monkeypatch):
    """uint8 weights far from their zero point do not fit the byte kernel: same results."""
    x, w = qvals("uint8", (1, 4, 9, 9)), qvals("uint8", (4, 1, 3, 3))
    w[0, 0, 0, 0], w[1, 0, 1, 1] = 255, 0
    xv = relay.var("x", shape=x.shape, dtype="uint8")
    y = relay.qnn.op.conv2d(
        xv, c(w), c(7, "int32"), c(100, "int32"), c(0.02, "float32"), c(0.01, "float32"),
        kernel_size=(3, 3), channels=4, padding=(1, 1), groups=4,
    )  # fmt: skip
    y = relay.qnn.op.requantize(
        y, c(np.float32(0.0002)), c(0, "int32"), c(np.float32(0.1)), c(3, "int32"),
        out_dtype="int8",
    )  # fmt: skip
    got, _ = run_graph(y, {"x": x})
    acc = conv_ref(x, w, 7, 100, (1, 1), (1, 1, 1, 1), 4)
    np.testing.assert_array_equal(got, requant_ref(acc, 0.0002, 0, 0.1, 3, "int8"))
    assert host_qnn._dw8_weights(w, np.full(4, 100)) is None


def test_strided_depthwise_over_its_input_memory():
    """A stride-2 depthwise layer between 1x1 layers: the planner may give its (smaller)
    output the input's memory; results stay exact and the layer stays fused."""
    x = qvals("uint8", (1, 8, 12, 12))
    w1, wd, w2 = (
        qvals("int8", (8, 8, 1, 1)),
        qvals("int8", (8, 1, 3, 3)),
        qvals("int8", (8, 8, 1, 1)),
    )
    xv = relay.var("x", shape=x.shape, dtype="uint8")

    def layer(v, w, groups, strides):
        y = relay.qnn.op.conv2d(
            v, c(w), c(128, "int32"), c(0, "int32"), c(0.05, "float32"), c(0.01, "float32"),
            kernel_size=w.shape[2:], channels=8, padding=(w.shape[2] // 2,) * 2,
            groups=groups, strides=strides,
        )  # fmt: skip
        return relay.qnn.op.requantize(
            y, c(np.float32(0.0005)), c(0, "int32"), c(np.float32(0.2)), c(128, "int32"),
            out_dtype="uint8",
        )  # fmt: skip

    y = layer(layer(layer(xv, w1, 1, (1, 1)), wd, 8, (2, 2)), w2, 1, (1, 1))
    got, lib = run_graph(y, {"x": x})
    want = x
    for w, g, s, p in ((w1, 1, (1, 1), 0), (wd, 8, (2, 2), 1), (w2, 1, (1, 1), 0)):
        acc = conv_ref(want, w, 128, 0, s, (p,) * 4, g)
        want = requant_ref(acc, 0.0005, 0, 0.2, 128, "uint8")
    np.testing.assert_array_equal(got, want)
    assert len(lib.plan.fusion) == 3


@pytest.mark.parametrize("xd", ["uint8", "int8"])
@pytest.mark.parametrize("channels, hw", [(6, (5, 7)), (16, (8, 8)), (13, (11, 3))])
def test_pointwise_convolution_packing(xd, channels, hw):
    """1x1 stride-1 convolutions pack their columns from the image directly (channels not
    a multiple of four, pixels not of sixteen, a weight zero point per channel)."""
    x = qvals(xd, (1, channels, *hw))
    w = qvals("int8", (20, channels, 1, 1))
    wzp = RNG.integers(-10, 10, size=20).astype("int32")
    xzp = 11
    xv = relay.var("x", shape=x.shape, dtype=xd)
    y = relay.qnn.op.conv2d(
        xv, c(w), c(xzp, "int32"), c(wzp), c(0.02, "float32"), c(0.01, "float32"),
        kernel_size=(1, 1), channels=20,
    )  # fmt: skip
    y = relay.qnn.op.requantize(
        y, c(np.float32(0.0002)), c(0, "int32"), c(np.float32(0.05)), c(-3, "int32"),
        rounding="TONEAREST", out_dtype="int8",
    )  # fmt: skip
    got, _ = run_graph(y, {"x": x})
    acc = conv_ref(x, w, xzp, wzp, (1, 1), (0, 0, 0, 0), 1)
    np.testing.assert_array_equal(got, requant_ref(acc, 0.0002, 0, 0.05, -3, "int8", "TONEAREST"))


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int8"])
def test_global_avg_pool2d_integers(dtype):
    """The mean of integer pixels truncated toward zero, as the reference kernel gives it
    (sum over the count in float64, cast), with sums far past int32 per channel."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, size=(2, 5, 7, 9), dtype=np.int64).astype(dtype)
    if info.min < 0:  # a negative mean that is not whole: truncated, not floored
        x[0, 0] = -3
        x[0, 0, 0, 0] = -4
    xv = relay.var("x", shape=x.shape, dtype=dtype)
    got, _ = run_graph(relay.nn.global_avg_pool2d(xv), {"x": x})
    total = x.astype(np.int64).sum(axis=(2, 3), keepdims=True)
    want = np.trunc(total / 63.0).astype(dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


POOL_CASES = [
    # shape, pool, strides, dilation, pads (t, l, b, r), ceil_mode
    ((2, 3, 9, 10), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False),
    ((1, 4, 11, 7), (2, 3), (1, 2), (1, 1), (0, 1, 1, 0), True),
    ((1, 2, 13, 12), (3, 2), (2, 3), (2, 2), (2, 0, 1, 2), True),
    ((1, 1, 5, 40), (1, 4), (1, 1), (1, 3), (0, 0, 0, 0), False),
]


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_max_pool2d_bytes_native(case, dtype, monkeypatch):
    """The native byte max pool (strides, dilation, asymmetric padding, ceil mode) against
    NumPy: padding and the extra rows of ceil mode hold the dtype's minimum."""
    from relaykit.backends.host import qnn_ops

    shape, pool, strides, dil, pads, ceil = case
    x = qvals(dtype, shape)
    x.reshape(-1)[::7] = np.iinfo(dtype).min  # minima inside the image too
    used = []
    real = qnn_ops.max_pool2d_run
    monkeypatch.setattr(qnn_ops, "max_pool2d_run", lambda *a: used.append(real(*a)) or used[-1])
    xv = relay.var("x", shape=shape, dtype=dtype)
    y = relay.nn.max_pool2d(
        xv, pool_size=pool, strides=strides, dilation=dil, padding=pads, ceil_mode=ceil
    )
    got, _ = run_graph(y, {"x": x})
    lo = np.iinfo(dtype).min
    (kh, kw), (sh, sw), (dh, dw) = pool, strides, dil
    pt, pl, pb, pr = pads
    oh, ow = got.shape[2:]
    ext_h = (oh - 1) * sh + (kh - 1) * dh + 1
    ext_w = (ow - 1) * sw + (kw - 1) * dw + 1
    xp = np.full((*shape[:2], max(ext_h, shape[2] + pt + pb), max(ext_w, shape[3] + pl + pr)), lo)
    xp[:, :, pt : pt + shape[2], pl : pl + shape[3]] = x
    want = np.full((*shape[:2], oh, ow), lo, np.int64)
    for i in range(kh):
        for j in range(kw):
            a, b = i * dh, j * dw
            want = np.maximum(
                want, xp[:, :, a : a + sh * (oh - 1) + 1 : sh, b : b + sw * (ow - 1) + 1 : sw]
            )
    np.testing.assert_array_equal(got, want.astype(dtype))
    assert used and used[-1] is not None
