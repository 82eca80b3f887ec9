import numpy as np
import pytest

import relaykit as tvm
from relaykit import op, relay
from relaykit.errors import ExecutionError
from relaykit.ir import (
    Call,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    TensorType,
    Tuple,
    Var,
    const,
    scalar_type,
)

T = TensorType((2, 3))


def run(f, *args, mod=None, **kw):
    return relay.create_executor("debug", mod=mod or IRModule()).evaluate(f)(*args, **kw)


def test_positional_inputs_and_keyword_params():
    x, w = Var("x", TensorType((1, 4))), Var("w", TensorType((3, 4)))
    f = Function([x, w], op.nn.dense(x, w))
    a = np.arange(4, dtype="float32").reshape(1, 4)
    b = np.ones((3, 4), "float32")
    out = run(f, a, w=tvm.nd.array(b))
    np.testing.assert_allclose(out.numpy(), a @ b.T)
    assert out.asnumpy().dtype == np.float32


def test_closures_let_if_and_tuples():
    x = Var("x", T)
    c = Var("c", scalar_type("bool"))
    p = Var("p", T)
    k = Var("k", T)
    double = Function([p], op.add(p, p))
    v = Var("v", T)
    body = Let(v, Call(double, [x]), If(c, Tuple([v, x]), Tuple([x, v])))
    f = Function([x, c], body)
    a = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    t1 = run(f, a, np.array(True))
    np.testing.assert_allclose(t1[0].numpy(), 2 * a)
    t2 = run(f, a, np.array(False))
    np.testing.assert_allclose(t2[1].numpy(), 2 * a)
    assert k is not None


def test_recursion_through_a_global_var_is_not_limited_by_python_stack():
    # sum(n) = n + sum(n-1), 5000 levels deep.
    n = Var("n", scalar_type("int32"))
    f = GlobalVar("sum_to")
    body = If(
        op.less_equal(n, const(0)),
        const(0),
        op.add(n, Call(f, [op.subtract(n, const(1))])),
    )
    mod = IRModule({f: Function([n], body, ret_type=scalar_type("int32"))})
    out = relay.create_executor("debug", mod=mod).evaluate(mod.get_global_var("sum_to"))(
        np.array(5000, "int32")
    )
    assert int(out.numpy()) == 5000 * 5001 // 2


def test_closed_expression_evaluates_to_a_value():
    out = relay.create_executor().evaluate(op.add(const(1.0), const(2.0)))
    assert float(out.numpy()) == 3.0


def test_input_errors_are_clear():
    x = Var("x", T)
    f = Function([x], op.exp(x))
    with pytest.raises(
        ExecutionError,
        match=r"input %x expects Tensor\[\(2, 3\), float32\], got an array of shape \(3,\)",
    ):
        run(f, np.ones(3, "float32"))
    with pytest.raises(ExecutionError, match="missing inputs: x"):
        run(f)
    with pytest.raises(ExecutionError, match="unknown input 'y'"):
        run(f, y=1)


def test_kernel_failure_names_the_node():
    from relaykit.ir.op import default_registry

    x = Var("x", T)
    f = Function([x], op.nn.relu(x))
    relu = default_registry.get("nn.relu")
    with default_registry.scoped():

        def broken(args, attrs):
            raise ValueError("boom")

        default_registry.set_attr("nn.relu", "FCompute", broken, level=99)
        with pytest.raises(
            ExecutionError,
            match=r"while evaluating nn.relu\(Tensor\[\(2, 3\), float32\]\): ValueError: boom",
        ):
            run(f, np.ones((2, 3), "float32"))
    assert relu.get_attr("FCompute") is not broken


def test_100k_chain_evaluates():
    x = Var("x", TensorType((4,)))
    y = x
    for _ in range(100_000):
        y = op.nn.relu(y)
    out = run(Function([x], y), np.array([-1, 0, 1, 2], "float32"))
    np.testing.assert_array_equal(out.numpy(), [0, 0, 1, 2])


def test_an_int_input_takes_whole_floats_and_refuses_fractions():
    x = relay.var("x", shape=(3,), dtype="int32")
    mod = tvm.IRModule.from_expr(relay.Function([x], x + x))
    run = relay.create_executor("debug", mod=mod).evaluate()
    got = run(np.array([1.0, -2.0, 3.0])).numpy()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [2, -4, 6])
    with pytest.raises(ExecutionError, match="got an array of dtype float64"):
        run(np.array([1.0, 2.5, 3.0]))
    # a Python list is held to the same rule (it used to be truncated to [1, 2, 3])
    with pytest.raises(ExecutionError, match="got an array of dtype float64"):
        run([1.0, 2.5, 3.0])
    with pytest.raises(ExecutionError, match="got an array of dtype int64"):
        run([1, 2**40, 3])  # would wrap around in int32
    np.testing.assert_array_equal(run([1, -2, 3]).numpy(), [2, -4, 6])
