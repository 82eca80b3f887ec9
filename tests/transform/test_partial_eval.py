"""PartialEvaluate, to_cps/un_cps and Defunctionalization: each rewritten program is run
and compared with NumPy arithmetic written here (or checked for what must be gone)."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.ir import GlobalVar, IRModule
from relaykit.ir.functor import post_order
from relaykit.relay.prelude import Prelude
from relaykit.relay.testing import count, make_nat_expr
from relaykit.transform import (
    DeadCodeElimination,
    Defunctionalization,
    InferType,
    PartialEvaluate,
    to_cps,
    un_cps,
)


def _pe(fn: relay.Function, mod: IRModule | None = None) -> IRModule:
    mod = mod if mod is not None else IRModule()
    mod["main"] = fn
    mod = PartialEvaluate()(mod)
    # the reference writes left behind are effects DCE keeps unless told otherwise (TVM's
    # PartialEvaluate tests tidy with ignore_impurity=True too)
    return InferType()(DeadCodeElimination(inline_once=True, ignore_impurity=True)(mod))


def test_known_recursion_folds_to_a_constant():
    x = relay.var("x", shape=(), dtype="int32")
    f = relay.Var("f")
    body = relay.If(
        relay.equal(x, relay.const(0)),
        relay.const(0),
        relay.add(x, relay.Call(f, [relay.subtract(x, relay.const(1))])),
    )
    main = relay.Function(
        [], relay.Let(f, relay.Function([x], body), relay.Call(f, [relay.const(10)]))
    )
    out = _pe(main)["main"].body
    assert isinstance(out, relay.Constant)
    assert int(out.data.numpy()) == sum(range(11))


def test_unknown_inputs_stay_and_compute_the_same():
    x = relay.var("x", shape=(3,))
    y = relay.var("y", shape=(3,))
    k = relay.const(np.array([1.0, 2.0, 3.0], "float32"))
    scale = relay.Function([y], relay.multiply(y, relay.add(k, k)))
    main = relay.Function([x], relay.Call(scale, [relay.exp(x)]))
    out = _pe(main)
    data = np.array([0.0, 1.0, -1.0], "float32")
    got = relay.create_executor(mod=out).evaluate()(data).numpy()
    np.testing.assert_allclose(got, np.exp(data) * np.array([2.0, 4.0, 6.0]), rtol=1e-6)
    assert not any(isinstance(n, relay.Function) for n in post_order(out["main"].body))


def test_reference_cells_with_known_contents_disappear():
    d = relay.var("d", shape=())
    r = relay.Var("r")
    body = relay.Let(
        r,
        relay.RefCreate(d),
        relay.Let(
            relay.Var("u"),
            relay.RefWrite(r, relay.multiply(relay.RefRead(r), relay.RefRead(r))),
            relay.RefRead(r),
        ),
    )
    out = _pe(relay.Function([d], body))
    assert "RefCreate" not in {type(n).__name__ for n in post_order(out["main"])}
    got = relay.create_executor(mod=out).evaluate()(np.float32(3.0)).numpy()
    assert float(got) == 9.0


def test_an_unknown_branch_keeps_reference_semantics():
    c = relay.var("c", shape=(), dtype="bool")
    r = relay.Var("r")
    bump = relay.Function([], relay.RefWrite(r, relay.add(relay.RefRead(r), relay.const(5))))
    u = relay.Var("u")
    body = relay.Let(
        r,
        relay.RefCreate(relay.const(1)),
        relay.Let(
            u,
            bump,
            relay.Let(
                relay.Var("e"),
                relay.If(c, relay.Call(u, []), relay.Tuple([])),
                relay.RefRead(r),
            ),
        ),
    )
    main = relay.Function([c], body)
    mod = IRModule.from_expr(main)
    out = PartialEvaluate()(mod)
    for flag, want in ((True, 6), (False, 1)):
        got = relay.create_executor(mod=out).evaluate()(np.array(flag))
        assert int(got.numpy()) == want


def test_prelude_calls_on_known_lists_are_evaluated():
    mod = IRModule()
    p = Prelude(mod)
    mod.import_from_std("nat.rly")
    _, cons, nil = mod.get_type("List")
    xs = cons(relay.const(4), cons(relay.const(5), cons(relay.const(6), nil())))
    main = relay.Function([], relay.Call(p.sum, [xs]))
    out = _pe(main, mod)["main"].body
    assert isinstance(out, relay.Constant) and int(out.data.numpy()) == 15
    double = mod.get_global_var("nat_double")
    out = _pe(relay.Function([], double(make_nat_expr(p, 3))), mod)["main"].body
    assert count(p, relay.create_executor(mod=mod).evaluate(out)) == 6


def test_a_call_that_never_ends_is_left_as_a_call():
    mod = IRModule()
    loop = GlobalVar("loop")
    x = relay.var("x", shape=(), dtype="int32")
    mod[loop] = relay.Function([x], relay.Call(loop, [x]), relay.TensorType((), "int32"))
    out = _pe(relay.Function([], relay.Call(loop, [relay.const(1)])), mod)["main"].body
    assert isinstance(out, relay.Call) and out.op.name_hint == "loop"


def test_cps_round_trip_computes_the_same():
    mod = IRModule()
    p = Prelude(mod)
    mod.import_from_std("nat.rly")
    iterate = mod.get_global_var("nat_iterate")
    t = relay.TensorType((4,), "float32")
    x = relay.var("x", t)
    i = relay.var("i", t)
    mod["main"] = relay.Function(
        [i], relay.Call(iterate(relay.Function([x], x + x), make_nat_expr(p, 3)), [i])
    )
    mod = InferType()(mod)
    mod["main"] = to_cps(mod["main"], mod=mod)
    mod = InferType()(mod)
    assert len(mod["main"].params) == 2  # the continuation
    mod["main"] = un_cps(mod["main"])
    data = np.array([1.0, -2.0, 0.5, 3.0], "float32")
    got = relay.create_executor(mod=mod).evaluate()(data).numpy()
    np.testing.assert_allclose(got, data * 8)


def test_defunctionalized_map_has_no_function_values_and_the_same_result():
    base = IRModule()
    p = Prelude(base)
    _, cons, nil = base.get_type("List")
    v = relay.var("v", shape=(), dtype="float32")
    s = relay.var("s", shape=(), dtype="float32")
    lst = relay.var("l", relay.TypeCall(p.l, [relay.TensorType((), "float32")]))
    base["main"] = relay.Function([lst, s], p.map(relay.Function([v], v * s), lst))
    base = InferType()(base)
    base["main"] = Defunctionalization(base["main"], base)
    base = InferType()(base)
    for node in relay.analysis.free_vars(base["main"]):
        raise AssertionError(f"free variable {node}")
    values = [1.0, 2.0, -3.0]
    data = nil()
    for value in reversed(values):
        data = cons(relay.const(np.float32(value)), data)
    arg = relay.create_executor(mod=base).evaluate(data)
    out = relay.create_executor(mod=base).evaluate()(arg, np.float32(2.0))
    got = []
    while out.constructor.name_hint == "Cons":
        got.append(float(out.fields[0].numpy()))
        out = out.fields[1]
    assert got == [2.0, 4.0, -6.0]
    fn_types = [a for a in base["main"].params if isinstance(a.type_annotation, relay.FuncType)]
    assert not fn_types
    assert base.get_global_type_var("Func0") is not None
