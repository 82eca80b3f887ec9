"""relay.op.debug: the function sees each evaluated value; folding keeps the call."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.ir import IRModule
from relaykit.testing import count_ops
from relaykit.transform import FoldConstant


def test_debug_sees_the_value_and_returns_it():
    seen = []
    x = relay.var("x", shape=(), dtype="int32")
    prog = relay.op.debug(x + x * x, debug_func=lambda v: seen.append(int(v.numpy())))
    out = relay.create_executor().evaluate(prog, {x: relay.const(3, "int32")})
    assert int(out.numpy()) == 12 and seen == [12]


def test_constant_folding_keeps_debug_calls():
    seen = []
    body = relay.op.debug(relay.const(2.0) * relay.const(4.0), debug_func=seen.append)
    mod = FoldConstant()(IRModule.from_expr(relay.Function([], body)))
    assert count_ops(mod["main"])["debug"] == 1 and seen == []
    out = relay.create_executor(mod=mod).evaluate()()
    assert float(out.numpy()) == 8.0 and len(seen) == 1
    np.testing.assert_array_equal(seen[0].numpy(), np.float32(8.0))
