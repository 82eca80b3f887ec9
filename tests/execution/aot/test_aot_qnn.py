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
