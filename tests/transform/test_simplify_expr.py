"""SimplifyExpr: reshape chains and cast chains, checked by running both versions."""

from __future__ import annotations

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.transform import SimplifyExpr


def _run(mod, *arrays):
    return relay.create_executor("debug", mod=mod).evaluate()(*arrays).numpy()


def test_reshape_chain_becomes_one_reshape_with_the_same_result():
    x = relay.var("x", shape=(1, 16, 4, 4))
    y = relay.reshape(x, (1, 16, -1))
    y = relay.reshape(y, (4, 8, -1, 4))
    y = relay.reverse_reshape(y, (32, 0, -1))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    out = SimplifyExpr()(mod)
    body = out["main"].body
    assert body.op.name == "reshape" and body.args[0] is out["main"].params[0]
    data = np.arange(256, dtype="float32").reshape(1, 16, 4, 4)
    np.testing.assert_array_equal(_run(out, data), _run(mod, data))
    assert _run(out, data).shape == (32, 2, 4)


def test_widening_cast_chain_merges_and_narrowing_one_stays():
    x = relay.var("x", shape=(4,), dtype="int8")
    wide = relay.cast(relay.cast(x, "int32"), "float32")
    narrow = relay.cast(relay.cast(x, "bool"), "int32")
    same = relay.cast(x, "int8")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([wide, narrow, same])))
    out = SimplifyExpr()(mod)
    w, n, s = out["main"].body.fields
    assert w.op.name == "cast" and w.args[0] is out["main"].params[0]
    assert n.args[0].op.name == "cast"
    assert s is out["main"].params[0]
    data = np.array([-128, -1, 0, 127], "int8")
    got = relay.create_executor("debug", mod=out).evaluate()(data)
    want = relay.create_executor("debug", mod=mod).evaluate()(data)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.numpy(), e.numpy())
