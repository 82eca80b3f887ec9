"""EliminateCommonSubexpr and DeadCodeElimination: before/after IR and numbers."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.ir import IRModule, assert_structural_equal
from relaykit.transform import (
    DeadCodeElimination,
    EliminateCommonSubexpr,
    PassContext,
    dead_code_elimination,
    eliminate_common_subexpr,
)


def _run(fn, *args):
    return relay.create_executor("debug", mod=IRModule.from_expr(fn)).evaluate()(*args).numpy()


def test_cse_merges_duplicate_subgraphs():
    x = relay.var("x", shape=(2, 3))
    before = relay.Function(
        [x], relay.add(relay.exp(relay.negative(x)), relay.exp(relay.negative(x)))
    )
    e = relay.exp(relay.negative(x))
    expected = relay.Function([x], relay.add(e, e))
    assert_structural_equal(eliminate_common_subexpr(before), expected)
    data = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_allclose(_run(eliminate_common_subexpr(before), data), _run(before, data))


def test_cse_keeps_different_attrs_and_skips():
    x = relay.var("x", shape=(2, 3))
    before = relay.Function(
        [x], relay.add(relay.sum(x, axis=0), relay.sum(x, axis=0, keepdims=True))
    )
    assert eliminate_common_subexpr(before) is before
    same = relay.Function([x], relay.add(relay.exp(x), relay.exp(x)))
    assert eliminate_common_subexpr(same, fskip=lambda call: call.op.name == "exp") is same


def test_cse_pass_runs_at_opt_level_3():
    x = relay.var("x", shape=(2,))
    mod = IRModule.from_expr(relay.Function([x], relay.add(relay.exp(x), relay.exp(x))))
    with PassContext(opt_level=3):
        body = EliminateCommonSubexpr()(mod)["main"].body
    assert body.args[0] is body.args[1]


def test_dce_removes_unused_lets_and_inlines_once():
    x = relay.var("x", shape=(2,))
    a, b, c = relay.var("a"), relay.var("b"), relay.var("c")
    before = relay.Function(
        [x],
        relay.Let(
            a, relay.exp(x), relay.Let(b, relay.negative(x), relay.Let(c, relay.add(a, a), c))
        ),
    )
    expected = relay.Function([x], relay.Let(a, relay.exp(x), relay.Let(c, relay.add(a, a), c)))
    assert_structural_equal(dead_code_elimination(before), expected, map_free_vars=True)
    inlined = relay.Function([x], relay.Let(a, relay.exp(x), relay.add(a, a)))
    assert_structural_equal(
        dead_code_elimination(before, inline_once=True), inlined, map_free_vars=True
    )
    data = np.array([0.5, -1.0], "float32")
    np.testing.assert_allclose(_run(dead_code_elimination(before, True), data), _run(before, data))


def test_dce_long_let_chain_is_iterative():
    x = relay.var("x", shape=(1,))
    body = x
    for i in range(20000):
        body = relay.Let(relay.var(f"t{i}"), relay.exp(x), body)
    out = DeadCodeElimination()(IRModule.from_expr(relay.Function([x], body)))
    assert out["main"].body is out["main"].params[0]


def test_cse_merges_equal_scalar_constants_and_tuples():
    x = relay.var("x", shape=(1, 4))
    c = relay.const(np.ones((1, 4), "float32"))
    a1 = relay.add(relay.nn.relu(x), relay.const(1.0))
    a2 = relay.add(relay.nn.relu(x), relay.const(1.0))
    body = relay.add(relay.concatenate([a1, c], 0), relay.concatenate([a2, c], 0))
    out = eliminate_common_subexpr(relay.Function([x], body))
    assert out.body.args[0] is out.body.args[1]
    # different scalar values, or tensor constants that are distinct nodes, stay apart
    b = relay.add(relay.add(x, relay.const(1.0)), relay.add(x, relay.const(2.0)))
    out = eliminate_common_subexpr(relay.Function([x], b))
    assert out.body.args[0] is not out.body.args[1]
    t = relay.add(relay.add(x, relay.const(np.ones((1, 4), "float32"))), relay.add(x, c))
    out = eliminate_common_subexpr(relay.Function([x], t))
    assert out.body.args[0] is not out.body.args[1]
    data = np.arange(4, dtype="float32").reshape(1, 4) - 2
    ref = 2 * np.concatenate([np.maximum(data, 0) + 1, np.ones((1, 4))], 0)
    np.testing.assert_allclose(_run(eliminate_common_subexpr(relay.Function([x], body)), data), ref)
