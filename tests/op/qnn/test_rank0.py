"""QNN kernels on rank-0 (scalar) tensors run on every executor: they return arrays, not
NumPy scalars (a BERT-like model quantizes the scalar sqrt(head size))."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay


@pytest.mark.parametrize("executor", ["graph", "debug"])
def test_quantize_requantize_dequantize_of_a_scalar(executor):
    x = relay.var("x", shape=(), dtype="float32")
    q = relay.qnn.op.quantize(x, relay.const(0.5), relay.const(3), out_dtype="int8")
    r = relay.qnn.op.requantize(
        q, relay.const(0.5), relay.const(3), relay.const(0.25), relay.const(-1), out_dtype="int8"
    )
    d = relay.qnn.op.dequantize(r, relay.const(0.25), relay.const(-1))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([q, r, d])))
    value = np.array(2.6, np.float32)
    q_out, r_out, d_out = relay.create_executor(executor, mod=mod).evaluate()(value)
    want_q = np.clip(np.rint(2.6 / 0.5) + 3, -128, 127)  # 8
    want_r = np.rint((want_q - 3) * 0.5 / 0.25) - 1  # 9
    assert q_out.numpy().shape == () and int(q_out.numpy()) == want_q
    assert int(r_out.numpy()) == want_r
    np.testing.assert_allclose(d_out.numpy(), (want_r + 1) * 0.25)
