"""FoldConstant: before/after structure, and what it must leave alone."""

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.ir import assert_structural_equal
from relaykit.transform import FoldConstant, InferType


def fold(f):
    return FoldConstant()(tvm.IRModule.from_expr(f))["main"]


def expected(f):
    return InferType()(tvm.IRModule.from_expr(f))["main"]


def test_folds_a_constant_subgraph_into_one_constant():
    x = relay.var("x", shape=(2, 2))
    c = relay.const(np.array([[1.0, 2.0], [3.0, 4.0]], "float32"))
    before = relay.Function([x], relay.add(x, relay.exp(relay.multiply(c, relay.const(0.0)))))
    after = relay.Function([x], relay.add(x, relay.const(np.ones((2, 2), "float32"))))
    assert_structural_equal(fold(before), expected(after))


def test_leaves_variables_and_partial_constants():
    x = relay.var("x", shape=(3,))
    before = relay.Function([x], relay.multiply(relay.add(x, relay.const(1.0)), relay.const(2.0)))
    assert_structural_equal(fold(before), expected(before))


def test_multi_output_operators_and_projections():
    x = relay.var("x", shape=(1, 2, 3))
    ones = np.ones(2, "float32")
    bn = relay.nn.batch_norm(
        relay.const(np.full((1, 2, 3), 3.0, "float32")),
        relay.const(ones),
        relay.const(ones * 0),
        relay.const(ones),
        relay.const(ones * 4),
        epsilon=0.0,
    )
    before = relay.Function([x], relay.add(x, bn[0]))
    after = relay.Function([x], relay.add(x, relay.const(np.ones((1, 2, 3), "float32"))))
    assert_structural_equal(fold(before), expected(after))
    tup = relay.Tuple([relay.const(1.0), x])
    assert_structural_equal(
        fold(relay.Function([x], relay.add(x, relay.TupleGetItem(tup, 0)))),
        expected(relay.Function([x], relay.add(x, relay.const(1.0)))),
    )


def test_tuple_arguments_fold_too():
    a, b = relay.const(np.zeros((1, 2), "float32")), relay.const(np.ones((1, 2), "float32"))
    x = relay.var("x", shape=(2, 2))
    before = relay.Function([x], relay.add(x, relay.concatenate([a, b], axis=0)))
    after = relay.Function([x], relay.add(x, relay.const(np.array([[0, 0], [1, 1]], "float32"))))
    assert_structural_equal(fold(before), expected(after))


def test_annotations_nullary_ops_and_composites_are_left_alone():
    x = relay.var("x", shape=(2,))
    z = relay.zeros((2,), "float32")
    begin = relay.annotation.compiler_begin(relay.const(np.ones(2, "float32")), "lib")
    p = relay.var("p", shape=(2,))
    comp = relay.Function([p], relay.add(relay.const(1.0), relay.const(2.0)) + p)
    comp = comp.with_attr("Composite", "lib.add")
    before = relay.Function([x], relay.add(relay.add(x, z), begin) + comp(x))
    assert_structural_equal(fold(before), expected(before))


def test_backend_functions_are_skipped():
    a = relay.var("a", shape=(2,))
    region = relay.Function([a], relay.add(a, relay.exp(relay.const(np.zeros(2, "float32")))))
    region = region.with_attrs({"Compiler": "lib", "global_symbol": "lib_0", "Primitive": 1})
    mod = tvm.IRModule()
    gv = relay.GlobalVar("lib_0")
    mod[gv] = region
    x = relay.var("x", shape=(2,))
    mod["main"] = relay.Function(
        [x], gv(relay.add(x, relay.exp(relay.const(np.zeros(2, "float32")))))
    )
    out = FoldConstant()(mod)
    assert_structural_equal(out["lib_0"], mod["lib_0"])
    assert out["main"].body.args[0].args[1].data.numpy().tolist() == [1.0, 1.0]


def test_scalars_stay_scalars():
    out = fold(relay.Function([], relay.add(relay.const(1.0), relay.const(2.0))))
    assert out.body.data.shape == () and float(out.body.data.numpy()) == 3.0


def _fold(body, params=()):
    mod = tvm.IRModule.from_expr(relay.Function(list(params), body))
    return FoldConstant()(InferType()(mod))["main"]


def test_fold_if_with_constant_condition_takes_the_branch():
    a = np.array([[1.0, 2.0, 3.0]], "float32")
    for cond, want in ((True, a + a), (False, a - a)):
        x, y = relay.const(a), relay.const(a)
        out = _fold(relay.If(relay.const(np.array(cond)), x + y, x - y)).body
        assert isinstance(out, relay.Constant)
        np.testing.assert_array_equal(out.data.numpy(), want)


def test_fold_inlines_constant_lets_and_folds_their_uses():
    c = np.array([1.5], "float32")
    x = relay.var("x", shape=(1,))
    t1, t2 = relay.var("t1"), relay.var("t2")
    t3 = relay.var("t3")
    body = relay.Let(
        t1, relay.const(c), relay.Let(t2, relay.add(t1, t1), relay.Let(t3, relay.add(t2, x), t3))
    )
    out = _fold(body, [x]).body
    assert isinstance(out, relay.Let) and out.var.name_hint == "t3"
    folded = out.value.args[0]
    assert isinstance(folded, relay.Constant)
    np.testing.assert_array_equal(folded.data.numpy(), c + c)


def test_fold_leaves_dropout():
    d = relay.nn.dropout(relay.const(np.arange(4, dtype="float32")))
    out = _fold(d + relay.const(1.0)).body
    assert isinstance(out, relay.Call) and out.op.name == "add"
    assert out.args[0].tuple_value.op.name == "nn.dropout"


def test_shape_queries_of_static_tensors_fold_to_constants():
    """shape_of / ndarray_size read only a static shape: they fold even though the
    tensor's value is unknown (checked against NumPy's shape and size)."""
    x = relay.var("x", shape=(8, 9, 10))
    ref = np.zeros((8, 9, 10))
    for dtype in ("int32", "int64", "float32"):
        body = relay.Tuple([relay.shape_of(x + x, dtype), relay.ndarray_size(x, dtype)])
        out = FoldConstant()(tvm.IRModule.from_expr(relay.Function([x], body)))["main"].body
        shape, size = (f.data.numpy() for f in out.fields)
        assert shape.dtype == dtype and shape.tolist() == list(ref.shape)
        assert size.dtype == dtype and size.shape == () and int(size) == ref.size
    d = relay.var("d", shape=(relay.Any(), 3))
    kept = FoldConstant()(tvm.IRModule.from_expr(relay.Function([d], relay.shape_of(d))))
    assert kept["main"].body.op.name == "shape_of"


def test_constants_placed_by_on_device_fold_and_travel_with_their_annotation():
    c = np.array([1.0, 2.0], dtype="float32")
    x = relay.var("x", shape=(2,))

    def placed(e):
        return relay.annotation.on_device(e, tvm.cpu(), constrain_result=True)

    t1 = relay.var("t1")
    t2 = relay.var("t2")
    body = relay.Let(t1, placed(relay.const(c)), relay.Let(t2, placed(t1 + t1), placed(t2 * x)))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    got = relay.transform.FoldConstant()(relay.transform.InferType()(mod))["main"].body
    # the lets are gone; the folded constant keeps the on_device of its binding
    assert got.op.name == "on_device"
    mul = got.args[0]
    placed_const = mul.args[0]
    assert placed_const.op.name == "on_device"
    np.testing.assert_array_equal(placed_const.args[0].data.numpy(), c.astype("float64") * 2)
