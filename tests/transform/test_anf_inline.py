"""ToANormalForm / ToGraphNormalForm round trips, and Inline."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.ir import GlobalVar, IRModule, assert_structural_equal
from relaykit.transform import Inline, ToANormalForm, ToGraphNormalForm, to_a_normal_form


def _diamond():
    x = relay.var("x", shape=(3,))
    e = relay.exp(x)
    return relay.Function([x], relay.multiply(relay.add(e, x), e)), x


def test_anf_binds_each_call_once_in_order():
    fn, x = _diamond()
    v1, v2, v3 = (relay.Var(n, relay.IncompleteType()) for n in ("v1", "v2", "v3"))
    expected = relay.Function(
        [x],
        relay.Let(
            v1,
            relay.exp(x),
            relay.Let(v2, relay.add(v1, x), relay.Let(v3, relay.multiply(v2, v1), v3)),
        ),
    )
    assert_structural_equal(to_a_normal_form(fn), expected, map_free_vars=True)


def test_anf_then_graph_form_round_trips_and_computes_the_same():
    fn, _ = _diamond()
    mod = IRModule.from_expr(fn)
    anf = ToANormalForm()(mod)
    back = ToGraphNormalForm()(anf)
    assert_structural_equal(back["main"], mod["main"])
    data = np.array([0.0, 1.0, -2.0], "float32")
    run = lambda m: relay.create_executor("debug", mod=m).evaluate()(data).numpy()  # noqa: E731
    np.testing.assert_allclose(run(anf), run(mod))


def test_anf_keeps_branch_computations_in_their_branch():
    x = relay.var("x", shape=())
    c = relay.var("c", shape=(), dtype="bool")
    fn = relay.Function([c, x], relay.If(c, relay.exp(x), relay.negative(x)))
    out = to_a_normal_form(fn)
    ite = out.body.value  # the If itself is bound
    assert type(ite.true_branch).__name__ == "Let" and ite.true_branch.value.op.name == "exp"
    assert ite.false_branch.value.op.name == "negative"


def test_inline_substitutes_and_removes_callee():
    x = relay.var("x", shape=(2,))
    mod = IRModule()
    sq = GlobalVar("sq")
    mod[sq] = relay.Function([x], relay.multiply(x, x)).with_attr("Inline", 1)
    y = relay.var("y", shape=(2,))
    mod["main"] = relay.Function([y], relay.add(sq(y), sq(relay.exp(y))))
    out = Inline()(mod)
    assert [gv.name_hint for gv in out.get_global_vars()] == ["main"]
    e = relay.exp(y)
    expected = relay.Function(
        [y], relay.add(relay.multiply(y, y), relay.multiply(e, e)), relay.TensorType((2,))
    )
    assert_structural_equal(out["main"], expected, map_free_vars=True)


def test_inline_leaves_a_recursive_function_alone():
    x = relay.var("x", shape=(), dtype="int32")
    mod = IRModule()
    f = GlobalVar("f")
    body = relay.If(
        relay.equal(x, relay.const(0)), x, relay.add(x, f(relay.subtract(x, relay.const(1))))
    )
    mod[f] = relay.Function([x], body, ret_type=relay.TensorType((), "int32")).with_attr(
        "Inline", 1
    )
    y = relay.var("y", shape=(), dtype="int32")
    mod["main"] = relay.Function([y], f(y))
    out = Inline()(mod)
    assert [gv.name_hint for gv in out.get_global_vars()] == ["f", "main"]
    assert out["main"].body.op.name_hint == "f"
    run = relay.create_executor(mod=out).evaluate()
    assert int(run(np.array(4, "int32")).numpy()) == 4 + 3 + 2 + 1
