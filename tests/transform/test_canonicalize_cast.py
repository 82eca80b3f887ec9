"""CanonicalizeCast: widening casts copied per elementwise consumer; values unchanged."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.ir import IRModule
from relaykit.transform import CanonicalizeCast


def test_each_elementwise_consumer_gets_its_own_upcast() -> None:
    x = relay.var("x", shape=(4,), dtype="int8")
    b1 = relay.var("b1", shape=(4,), dtype="int32")
    b2 = relay.var("b2", shape=(4,), dtype="int32")
    up = relay.cast(x, "int32")
    f = relay.Function([x, b1, b2], relay.multiply(relay.add(up, b1), relay.subtract(up, b2)))
    out = CanonicalizeCast()(IRModule.from_expr(f))
    body = out["main"].body
    first, second = body.args[0].args[0], body.args[1].args[0]
    assert first.op.name == second.op.name == "cast" and first is not second
    xv = np.array([-128, -1, 5, 127], dtype="int8")
    b1v = np.array([1, 2, 3, 4], dtype="int32")
    b2v = np.array([4, 3, 2, 1], dtype="int32")
    got = relay.create_executor("debug", mod=out).evaluate()(xv, b1v, b2v).numpy()
    wide = xv.astype("int64")
    np.testing.assert_array_equal(got, (wide + b1v) * (wide - b2v))


def test_a_narrowing_cast_stays_shared() -> None:
    x = relay.var("x", shape=(4,), dtype="int32")
    down = relay.cast(x, "int8")
    f = relay.Function([x], relay.add(down + relay.const(1, "int8"), down))
    mod = IRModule.from_expr(f)
    body = CanonicalizeCast()(mod)["main"].body
    assert body.args[0].args[0] is body.args[1]
