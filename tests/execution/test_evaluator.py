"""The one evaluation machine: the interpreter and the graph lowering are its subclasses."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit import op, relay
from relaykit.errors import BuildError, ExecutionError
from relaykit.execution.evaluator import (
    Activation,
    Closure,
    Environment,
    Evaluator,
    describe_call,
)
from relaykit.execution.interpreter import Interpreter
from relaykit.execution.lower import PlanLowering, lower_to_plan
from relaykit.ir import (
    Call,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    const,
    scalar_type,
)
from relaykit.transform.infer_type import infer_module

T = TensorType((2, 3))


def test_one_machine_two_subclasses():
    assert issubclass(Interpreter, Evaluator) and issubclass(PlanLowering, Evaluator)
    # Neither re-implements the walk: the stack machine exists once.
    assert Interpreter.run is Evaluator.run and PlanLowering.run is Evaluator.run
    assert Interpreter.apply_call is Evaluator.apply_call
    assert PlanLowering.apply_call is Evaluator.apply_call


class OpNames(Evaluator):
    """A symbolic evaluator: values are nested strings naming the computation."""

    def eval_constant(self, node):
        return "c"

    def apply_op(self, call, op, args):
        return f"{op.name}({', '.join(map(str, args))})"


def test_a_new_evaluator_needs_only_its_value_hooks():
    x, p, c = Var("x", T), Var("p", T), Var("c", scalar_type("bool"))
    v = Var("v", T)
    double = Function([p], op.add(p, p))
    body = Let(
        v,
        Call(double, [op.exp(x)]),
        TupleGetItem(Tuple([v, op.negative(v)]), 1),
    )
    act = Activation(Environment({x: "x", c: True}))
    assert OpNames(IRModule()).run(body, act) == "negative(add(exp(x), exp(x)))"
    # If takes the branch choose_branch picks.
    branchy = If(c, op.exp(x), const(np.zeros((2, 3), "float32")))
    assert OpNames(IRModule()).run(branchy, Activation(Environment({x: "x", c: True}))) == "exp(x)"
    assert OpNames(IRModule()).run(branchy, Activation(Environment({x: "x", c: False}))) == "c"


def test_shared_subexpressions_are_applied_once_per_activation():
    calls = []

    class Tracing(Interpreter):
        def apply_op(self, call, op, args):
            calls.append(op.name)
            return super().apply_op(call, op, args)

    x = Var("x", T)
    e = op.exp(x)
    body = op.add(op.add(e, e), e)
    mod = IRModule({GlobalVar("main"): Function([x], body)})
    infer_module(mod)
    out = Tracing(mod).run(mod["main"].body, Activation(Environment({x: np.ones((2, 3), "f4")})))
    np.testing.assert_allclose(out, 3 * np.e * np.ones((2, 3)), rtol=1e-6)
    assert calls == ["exp", "add", "add"]


def test_global_calls_closures_and_recursion_in_the_interpreter():
    # fact(n) = if n <= 0 then 1 else n * fact(n - 1), called through a closure value.
    n = Var("n", scalar_type("int32"))
    fact = GlobalVar("fact")
    body = If(
        op.less_equal(n, const(0)),
        const(1),
        op.multiply(n, Call(fact, [op.subtract(n, const(1))])),
    )
    mod = IRModule({fact: Function([n], body, ret_type=scalar_type("int32"))})
    f = Var("f")
    m = Var("m", scalar_type("int32"))
    main = Function([m], Let(f, fact, Call(f, [m])))
    out = relay.create_executor("debug", mod=mod).evaluate(main)(np.array(10, "int32"))
    assert int(out.numpy()) == 3628800
    c = Interpreter(mod).eval_global(fact)
    assert isinstance(c, Closure) and c.name == "fact"
    assert Interpreter(mod).eval_global(fact).func is mod["fact"]


def test_deep_let_chain_and_deep_closure_calls_do_not_recurse():
    x = Var("x", TensorType((4,)))
    p = Var("p", TensorType((4,)))
    inc = Function([p], op.add(p, const(np.ones(4, "float32"))))
    lets, cur = [], x
    for i in range(10_000):
        v = Var(f"v{i}", TensorType((4,)))
        lets.append((v, Call(inc, [cur])))
        cur = v
    body = cur
    for v, value in reversed(lets):
        body = Let(v, value, body)
    f = Function([x], body)
    out = relay.create_executor("debug").evaluate(f)(np.zeros(4, "float32"))
    np.testing.assert_array_equal(out.numpy(), np.full(4, 10_000, "float32"))
    plan, _ = lower_to_plan(infer_module(IRModule.from_expr(f)))
    assert sum(n.kind == "op" for n in plan.nodes) == 10_000


def test_100k_chain_lowers():
    x = relay.var("x", shape=(4,))
    y = x
    for _ in range(100_000):
        y = relay.nn.relu(y)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))
    plan, _ = lower_to_plan(mod)
    assert plan.num_steps == 100_000


def _extern_module():
    a = relay.var("a", shape=(3,))
    ext = relay.Function([a], relay.exp(a)).with_attr("Compiler", "mylib")
    ext = ext.with_attr("global_symbol", "mylib_0")
    mod = tvm.IRModule()
    gv = relay.GlobalVar("mylib_0")
    mod[gv] = ext
    x = relay.var("x", shape=(3,))
    mod["main"] = relay.Function([x], relay.nn.relu(gv(x)))
    return relay.transform.InferType()(mod)


def test_extern_calls_are_lowered_by_the_lowering_and_entered_by_the_interpreter():
    mod = _extern_module()
    plan, _ = lower_to_plan(mod)
    assert [(n.kind, n.name) for n in plan.nodes] == [
        ("input", "x"),
        ("extern", "mylib_0"),
        ("op", "nn.relu"),
    ]
    assert plan.nodes[1].compiler == "mylib" and plan.nodes[1].region_ops == ("exp",)
    gv = mod.get_global_var("mylib_0")
    assert PlanLowering(mod).is_extern(gv, mod["mylib_0"])
    assert not Interpreter(mod).is_extern(gv, mod["mylib_0"])
    data = np.array([-1.0, 0.0, 1.0], "float32")
    out = relay.create_executor("debug", mod=mod).evaluate()(data)
    np.testing.assert_allclose(out.numpy(), np.exp(data), rtol=1e-6)


def test_lowering_errors():
    # recursion
    n = relay.var("n", shape=(3,))
    g = relay.GlobalVar("g")
    mod = tvm.IRModule()
    mod[g] = relay.Function([n], g(n), ret_type=relay.TensorType((3,)))
    x = relay.var("x", shape=(3,))
    mod["main"] = relay.Function([x], g(x))
    mod = relay.transform.InferType()(mod)
    with pytest.raises(BuildError, match=r"@g is recursive; the graph executor cannot run"):
        lower_to_plan(mod)
    # a global function as a value
    h = relay.GlobalVar("h")
    mod = tvm.IRModule()
    mod[h] = relay.Function([n], relay.exp(n))
    f = relay.var("f")
    mod["main"] = relay.Function([x], relay.Let(f, h, relay.Call(f, [x])))
    mod = relay.transform.InferType()(mod)
    with pytest.raises(BuildError, match=r"@h is used as a value; the graph executor can only"):
        lower_to_plan(mod)


def test_machine_errors_have_the_subclass_error_type():
    x, y = Var("x", T), Var("y", T)
    unbound = op.add(x, y)
    with pytest.raises(BuildError, match=r"variable %y is not bound \(ill-formed program\)"):
        PlanLowering(IRModule()).run(unbound, Activation(Environment({x: 0})))
    with pytest.raises(ExecutionError, match=r"variable %y is not bound \(ill-formed program\)"):
        Interpreter(IRModule()).run(unbound, Activation(Environment({x: np.ones((2, 3))})))
    # a call with the wrong number of arguments (built without type inference)
    p = Var("p", T)
    bad = Call(Function([p], p), [x, x])
    with pytest.raises(BuildError, match="a function of 1 parameters is called with 2 arguments"):
        PlanLowering(IRModule()).run(bad, Activation(Environment({x: 0})))
    with pytest.raises(ExecutionError, match=r"while evaluating a closure\(.*function takes 1"):
        Interpreter(IRModule()).run(bad, Activation(Environment({x: np.ones((2, 3))})))
    # projecting a non-tuple
    proj = TupleGetItem(x, 0)
    with pytest.raises(BuildError, match=r"projection \.0 of a non-tuple value"):
        PlanLowering(IRModule()).run(proj, Activation(Environment({x: 0})))
    # calling a tensor
    v = Var("v")
    call_tensor = Call(v, [x])
    with pytest.raises(ExecutionError, match="cannot call a ndarray value"):
        Interpreter(IRModule()).run(call_tensor, Activation(Environment({x: 1, v: np.ones(2)})))
    with pytest.raises(BuildError, match="a call of something that is not a function"):
        PlanLowering(IRModule()).run(call_tensor, Activation(Environment({x: 1, v: 3})))
    # nodes a machine cannot evaluate
    with pytest.raises(ExecutionError, match="cannot evaluate a str node"):
        Interpreter(IRModule()).run("not a node", Activation(Environment()))
    with pytest.raises(BuildError, match="the graph executor cannot run a Op node"):
        PlanLowering(IRModule()).run(tvm.ir.get_op("exp"), Activation(Environment()))


def test_describe_call_names_callee_types_and_attrs():
    x = Var("x", T)
    untyped = op.nn.softmax(x, axis=0)
    assert describe_call(untyped) == "nn.softmax(Var, axis=0)"
    mod = infer_module(IRModule.from_expr(Function([x], op.nn.softmax(x, axis=0))))
    typed = mod["main"].body
    assert describe_call(typed) == "nn.softmax(Tensor[(2, 3), float32], axis=0)"
    assert describe_call(x) == "Var"
