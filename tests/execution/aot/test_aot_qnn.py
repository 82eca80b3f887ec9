"""QNN operators in ahead-of-time C: lowered to integer Relay (as TVM does), compiled,
and compared with the quantized arithmetic written in NumPy."""

from __future__ import annotations

import numpy as np

import relaykit as tvm
from relaykit import relay


def test_quantized_dense_chain(aot, tmp_path):
    rng = np.random.default_rng(0)
    wq = rng.integers(-100, 100, (4, 8)).astype("int8")
    x = relay.var("x", shape=(2, 8))
    q = relay.qnn.op.quantize(x, relay.const(0.05), relay.const(3, "int32"), out_dtype="int8")
    d = relay.qnn.op.dense(q, relay.const(wq), relay.const(3, "int32"), relay.const(0, "int32"),
                           relay.const(0.05), relay.const(0.01), units=4)  # fmt: skip
    r = relay.qnn.op.requantize(
        d, relay.const(0.0005), relay.const(0, "int32"), relay.const(0.1),
        relay.const(-2, "int32"), out_dtype="int8",
    )  # fmt: skip
    y = relay.qnn.op.dequantize(r, relay.const(0.1), relay.const(-2, "int32"))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    # inputs a fifth of a step off the grid: no rounding ties
    data = ((rng.integers(-60, 60, (2, 8)) + 0.2) * 0.05).astype("float32")
    (got,), *_ = aot(mod, None, [data], [((2, 4), "float32")], tmp_path)

    xq = np.clip(np.round(data.astype(np.float64) / 0.05) + 3, -128, 127).astype(np.int64)
    acc = (xq - 3) @ wq.astype(np.int64).T
    rq = np.clip(np.round(acc * (0.0005 / 0.1)) - 2, -128, 127)
    want = (rq + 2) * 0.1
    # one quantization step of slack for a rounding tie in the requantize
    assert np.max(np.abs(got - want)) <= 0.1 + 1e-6
    assert np.mean(np.abs(got - want) < 1e-5) >= 0.75
    assert len(set(np.round(got.ravel(), 4))) > 3  # not a constant output


def test_int8_convolution_and_dense_accumulate_in_int32(aot, tmp_path):
    rng = np.random.default_rng(3)
    x = relay.var("x", shape=(1, 4, 6, 6), dtype="int8")
    w = rng.integers(-128, 128, (6, 2, 3, 3)).astype("int8")
    wd = rng.integers(-128, 128, (5, 6 * 3 * 3)).astype("int8")
    c = relay.nn.conv2d(x, relay.const(w), strides=(2, 2), padding=(1, 1), groups=2,
                        out_dtype="int32")  # fmt: skip
    flat = relay.cast(relay.clip(relay.nn.batch_flatten(c), -128, 127), "int8")
    y = relay.nn.dense(flat, relay.const(wd), out_dtype="int32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([c, y])))
    data = rng.integers(-128, 128, (1, 4, 6, 6)).astype("int8")
    got, *_ = aot(mod, None, [data], [((1, 6, 3, 3), "int32"), ((1, 5), "int32")], tmp_path)

    xp = np.pad(data.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 6, 3, 3), np.int64)
    for o in range(6):
        g = o // 3
        for i in range(3):
            for j in range(3):
                win = xp[0, 2 * g : 2 * g + 2, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3]
                want[0, o, i, j] = int((win * w[o].astype(np.int64)).sum())
    np.testing.assert_array_equal(got[0], want)
    f = np.clip(want.reshape(1, -1), -128, 127)
    np.testing.assert_array_equal(got[1], f @ wd.astype(np.int64).T)
