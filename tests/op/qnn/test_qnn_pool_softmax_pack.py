"""qnn.avg_pool2d, qnn.softmax and qnn.contrib_dense_pack: kernels against NumPy float64 /
int64 arithmetic written here, CanonicalizeOps giving the same integers, bad input refused
with the operator and the argument named."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import IRError, RelayTypeError
from relaykit.ir import IRModule

RNG = np.random.default_rng(2525)


def run(expr: Any, args: list[Any], inputs: list[np.ndarray], canon: bool = False) -> np.ndarray:
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function(args, expr)))
    if canon:
        mod = relay.qnn.transform.CanonicalizeOps()(mod)
        assert "qnn." not in str(mod)
    return np.asarray(relay.create_executor("debug", mod=mod).evaluate()(*inputs).numpy())


def both(expr: Any, args: list[Any], inputs: list[np.ndarray]) -> np.ndarray:
    a = run(expr, args, inputs)
    b = run(expr, args, inputs, canon=True)
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)
    return a


def quantize_ref(real: np.ndarray, scale: float, zp: int, dtype: str) -> np.ndarray:
    """Round half away from zero, add the zero point, clip: in float64."""
    v = real / np.float64(np.float32(scale))
    v = np.sign(v) * np.floor(np.abs(v) + 0.5) + zp
    info = np.iinfo(dtype)
    return np.clip(v, info.min, info.max).astype(dtype)


def avg_pool_ref(x: np.ndarray, k: int, stride: int) -> np.ndarray:
    n, c, h, w = x.shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    out = np.empty((n, c, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * stride : i * stride + k, j * stride : j * stride + k]
            out[:, :, i, j] = win.mean(axis=(2, 3))
    return out


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_avg_pool2d_matches_float64_reference(dtype: str) -> None:
    info = np.iinfo(dtype)
    data = RNG.integers(info.min, info.max + 1, size=(1, 3, 7, 7)).astype(dtype)
    x = relay.var("x", shape=data.shape, dtype=dtype)
    zp_in, zp_out = (5, 3) if dtype == "uint8" else (-4, 2)
    y = relay.qnn.op.avg_pool2d(
        x,
        relay.const(0.25),
        relay.const(zp_in),
        relay.const(0.5),
        relay.const(zp_out),
        pool_size=(3, 3),
        strides=(2, 2),
        padding=(0, 0),
        dilation=(1, 1),
        layout="NCHW",
    )
    got = both(y, [x], [data])
    real = 0.25 * (data.astype(np.float64) - zp_in)
    want = quantize_ref(avg_pool_ref(real, 3, 2), 0.5, zp_out, dtype)
    assert got.dtype == np.dtype(dtype)
    # float32 arithmetic in the operator, float64 here: at most one step apart
    assert np.max(np.abs(got.astype(np.int64) - want.astype(np.int64))) <= 1
    assert np.mean(got == want) > 0.95


def test_softmax_matches_float64_reference() -> None:
    data = RNG.integers(-128, 128, size=(4, 10)).astype("int8")
    x = relay.var("x", shape=data.shape, dtype="int8")
    y = relay.qnn.op.softmax(
        x, relay.const(0.1), relay.const(0), relay.const(1 / 256), relay.const(-128), axis=1
    )
    got = both(y, [x], [data])
    real = 0.1 * data.astype(np.float64)
    e = np.exp(real - real.max(axis=1, keepdims=True))
    want = quantize_ref(e / e.sum(axis=1, keepdims=True), 1 / 256, -128, "int8")
    assert np.max(np.abs(got.astype(np.int64) - want.astype(np.int64))) <= 1
    # rows sum to about one
    np.testing.assert_allclose(((got.astype(np.float64) + 128) / 256).sum(axis=1), 1.0, atol=0.05)


def test_avg_pool2d_refuses_per_channel_and_float_input() -> None:
    x = relay.var("x", shape=(1, 3, 4, 4), dtype="uint8")
    bad = relay.qnn.op.avg_pool2d(
        x,
        relay.const(np.array([0.1, 0.2, 0.3], "float32")),
        relay.const(0),
        relay.const(0.5),
        relay.const(0),
        (2, 2),
        (1, 1),
        (0, 0),
        (1, 1),
        layout="NCHW",
    )
    with pytest.raises(RelayTypeError, match="qnn.avg_pool2d: input_scale must be a scalar"):
        relay.transform.InferType()(IRModule.from_expr(relay.Function([x], bad)))
    f = relay.var("f", shape=(1, 3, 4, 4))
    s, z = relay.const(0.5), relay.const(0)
    y = relay.qnn.op.avg_pool2d(f, s, z, s, z, (2, 2), (1, 1), (0, 0), (1, 1), layout="NCHW")
    with pytest.raises(RelayTypeError, match="qnn.avg_pool2d takes"):
        relay.transform.InferType()(IRModule.from_expr(relay.Function([f], y)))


def test_softmax_refuses_bad_scale_by_name() -> None:
    x = relay.var("x", shape=(2, 3), dtype="int8")
    with pytest.raises(IRError, match="qnn.softmax: output_scale must be finite and positive"):
        relay.qnn.op.softmax(x, relay.const(0.1), relay.const(0), relay.const(-1.0), relay.const(0))


def pack(w: np.ndarray, n: int, c: int) -> np.ndarray:
    """(N, C) -> (N/n, C/c, n, c), written independently of the operator."""
    big_n, big_c = w.shape
    out = np.empty((big_n // n, big_c // c, n, c), w.dtype)
    for i in range(big_n):
        for j in range(big_c):
            out[i // n, j // c, i % n, j % c] = w[i, j]
    return out


@pytest.mark.parametrize("layout", ["NC", "NC4n", "NC4n2c"])
def test_contrib_dense_pack_matches_int64_product(layout: str) -> None:
    data = RNG.integers(0, 256, size=(3, 8)).astype("uint8")
    w = RNG.integers(-128, 128, size=(8, 8)).astype("int8")
    kzp = RNG.integers(-5, 5, size=8).astype("int32")
    if layout == "NC":
        packed = w
    elif layout == "NC4n":
        packed = pack(w, 4, 1)[:, :, :, 0]  # (N/4, C, 4)
    else:
        packed = pack(w, 4, 2)
    x = relay.var("x", shape=data.shape, dtype="uint8")
    wv = relay.var("w", shape=packed.shape, dtype="int8")
    y = relay.qnn.op.contrib_dense_pack(
        x,
        wv,
        relay.const(7),
        relay.const(kzp),
        relay.const(0.5),
        relay.const(np.ones(8, "float32")),
        kernel_layout=layout,
        units=8,
    )
    got = both(y, [x, wv], [data, packed])
    want = (data.astype(np.int64) - 7) @ (w.astype(np.int64) - kzp[:, None]).T
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_contrib_dense_pack_refuses_bad_layout_and_shape() -> None:
    x = relay.var("x", shape=(2, 8), dtype="uint8")
    w = relay.var("w", shape=(2, 8, 4), dtype="int8")
    z, s = relay.const(0), relay.const(0.5)
    with pytest.raises(RelayTypeError, match="weight layout must be NC"):
        relay.qnn.op.contrib_dense_pack(x, w, z, z, s, s, kernel_layout="CN")
    y = relay.qnn.op.contrib_dense_pack(x, w, z, z, s, s, kernel_layout="NC4n4c")
    with pytest.raises(RelayTypeError, match="has 4 dimensions"):
        relay.transform.InferType()(IRModule.from_expr(relay.Function([x, w], y)))
    y = relay.qnn.op.contrib_dense_pack(x, w, z, z, s, s, kernel_layout="NC4n", units=16)
    with pytest.raises(RelayTypeError, match="units=16 but the weight has 8"):
        relay.transform.InferType()(IRModule.from_expr(relay.Function([x, w], y)))
