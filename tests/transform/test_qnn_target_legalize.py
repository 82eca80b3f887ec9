"""relay.qnn.transform.Legalize per target: the rewritten qnn.dense / qnn.conv2d compute
the same integers (checked against NumPy int64)."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.ir import IRModule

RNG = np.random.default_rng(3)
TARGETS = [
    "llvm",
    "llvm -mcpu=cascadelake",
    "llvm -device=arm_cpu -mtriple=aarch64-linux-gnu",
    "llvm -device=arm_cpu -mtriple=aarch64-linux-gnu -mattr=+v8.2a,+dotprod",
    "cuda",
]
DTYPES = [("uint8", "uint8"), ("int8", "int8"), ("uint8", "int8"), ("int8", "uint8")]


def _values(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    lo, hi = (0, 255) if dtype == "uint8" else (-128, 127)
    return RNG.integers(lo, hi + 1, size=shape).astype(dtype)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("dtype_x", "dtype_w"), DTYPES)
def test_dense_legalized_for_a_target_computes_the_same(target: str, dtype_x: str, dtype_w: str):
    x = relay.var("x", shape=(3, 5), dtype=dtype_x)
    w = relay.var("w", shape=(4, 5), dtype=dtype_w)
    zx, zw = (3 if dtype_x == "uint8" else -2), (5 if dtype_w == "uint8" else 1)
    y = relay.qnn.dense(
        x, w, relay.const(zx), relay.const(zw), relay.const(0.5), relay.const(0.25), units=4
    )
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function([x, w], y)))
    with tvm.target.Target(target):
        out = relay.qnn.transform.Legalize()(mod)
    xv, wv = _values(dtype_x, (3, 5)), _values(dtype_w, (4, 5))
    want = (xv.astype("int64") - zx) @ (wv.astype("int64") - zw).T
    got = relay.create_executor("debug", mod=out).evaluate()(xv, wv).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", TARGETS[:3])
def test_conv2d_legalized_for_a_target_computes_the_same(target: str):
    d = relay.var("d", shape=(1, 3, 5, 5), dtype="int8")
    k = relay.var("k", shape=(2, 3, 3, 3), dtype="uint8")
    y = relay.qnn.conv2d(
        d, k, relay.const(-1), relay.const(7), relay.const(1.0), relay.const(1.0),
        kernel_size=(3, 3), channels=2,
    )  # fmt: skip
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function([d, k], y)))
    with tvm.target.Target(target):
        out = relay.qnn.transform.Legalize()(mod)
    dv, kv = _values("int8", (1, 3, 5, 5)), _values("uint8", (2, 3, 3, 3))
    dd, kk = dv.astype("int64") + 1, kv.astype("int64") - 7
    want = np.zeros((1, 2, 3, 3), dtype="int64")
    for i in range(3):
        for j in range(3):
            want[0, :, i, j] = np.einsum("chw,ochw->o", dd[0, :, i : i + 3, j : j + 3], kk)
    got = relay.create_executor("debug", mod=out).evaluate()(dv, kv).numpy()
    np.testing.assert_array_equal(got, want)


def test_no_target_keeps_the_operator():
    x = relay.var("x", shape=(3, 5), dtype="int8")
    w = relay.var("w", shape=(4, 5), dtype="uint8")
    y = relay.qnn.dense(
        x, w, relay.const(0), relay.const(0), relay.const(1.0), relay.const(1.0), units=4
    )
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function([x, w], y)))
    assert relay.qnn.transform.Legalize()(mod)["main"].body.op.name == "qnn.dense"
