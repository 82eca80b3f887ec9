"""DynamicToStatic folds dynamic operators with constant inputs (issue 12)."""

import numpy as np

from relaykit import relay
from relaykit.ir import IRModule


def d2s(body, *params):
    mod = IRModule.from_expr(relay.Function(list(params), body))
    return relay.transform.DynamicToStatic()(mod)["main"]


def run(fn, *args):
    return relay.create_executor("debug", IRModule.from_expr(fn)).evaluate()(*args).numpy()


def test_reshape_of_shape_of_static_tensor_becomes_static():
    x = relay.var("x", shape=(2, 6))
    y = relay.var("y", shape=(3, 4))
    fn = d2s(relay.reshape(x, relay.shape_of(y)), x, y)
    assert fn.body.op.name == "reshape"
    assert fn.body.checked_type == relay.TensorType((3, 4))
    v = np.arange(12, dtype="float32").reshape(2, 6)
    np.testing.assert_array_equal(run(fn, v, np.zeros((3, 4), "float32")), v.reshape(3, 4))


def test_every_dyn_op_with_constants_folds():
    x = relay.var("x", shape=(2, 3))
    c = lambda v: relay.const(np.array(v, dtype="int64"))  # noqa: E731
    cases = [
        relay.op.dyn.broadcast_to(x, c([4, 2, 3])),
        relay.op.dyn.tile(x, c([2, 1])),
        relay.op.dyn.strided_slice(x, c([0, 1]), c([2, 3]), c([1, 1])),
        relay.op.dyn.zeros(c([2, 2])),
        relay.op.dyn.full(relay.const(1.0), c([3])),
        relay.op.dyn.expand_dims(x, relay.const(1)),
        relay.op.dyn.squeeze(relay.op.dyn.expand_dims(x, relay.const(0)), c([0])),
        relay.op.dyn.nn.pad(x, c([[1, 0], [0, 2]])),
        relay.op.dyn.topk(x, relay.const(2), ret_type="values"),
        relay.arange(relay.const(0), relay.const(5) + relay.const(1), relay.const(2), "int32"),
    ]
    v = np.arange(6, dtype="float32").reshape(2, 3)
    for body in cases:
        dyn_fn = relay.Function([x], body)
        want = run(dyn_fn, v)
        fn = d2s(body, x)
        if isinstance(fn.body, relay.Call):  # constant-only bodies fold to a Constant
            assert not fn.body.op.name.startswith("dyn."), fn.body.op.name
        assert fn.body.checked_type.shape == want.shape  # static again
        np.testing.assert_array_equal(run(fn, v), want)


def test_runtime_shape_input_stays_dynamic():
    x = relay.var("x", shape=(2, 6))
    s = relay.var("s", shape=(2,), dtype="int64")
    fn = d2s(relay.reshape(x, s), x, s)
    assert fn.body.op.name == "dyn.reshape"


def test_build_runs_dynamic_ops_with_constant_shapes_on_the_graph_executor():
    import relaykit as tvm
    from relaykit.contrib import graph_executor

    x = relay.var("x", shape=(2, 6))
    body = relay.nn.relu(relay.reshape(x, relay.shape_of(relay.zeros((3, 4), "float32"))))
    lib = relay.build(IRModule.from_expr(relay.Function([x], body)), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    v = np.arange(-6, 6, dtype="float32").reshape(2, 6)
    m.set_input("x", v)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), np.maximum(v, 0).reshape(3, 4))
