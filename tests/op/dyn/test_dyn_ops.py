"""Dynamic operators (relay.op.dyn), shape_of/arange/argwhere/one_hot and shape
functions, checked against NumPy (issue 12)."""

import numpy as np
import pytest

from relaykit import relay
from relaykit.op.shape_func import output_shapes


def run(params, body, *args):
    f = relay.Function(params, body)
    mod = relay.transform.InferType()(relay.IRModule.from_expr(f))
    out = relay.create_executor("debug", mod).evaluate()(*args)
    return out, mod["main"].body.checked_type


def iv(name, n, dtype="int64"):
    return relay.var(name, shape=(n,), dtype=dtype)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 4)).astype("float32")


def test_dyn_reshape_dispatch_type_and_value():
    x = relay.var("x", shape=(2, 3, 4))
    s = iv("s", 2)
    call = relay.reshape(x, s)
    assert call.op.name == "dyn.reshape"
    out, ty = run([x, s], call, X, np.array([4, -1]))
    assert ty == relay.TensorType((relay.Any(), relay.Any()))
    np.testing.assert_array_equal(out.numpy(), X.reshape(4, -1))


def test_constant_shape_builds_the_static_op():
    x = relay.var("x", shape=(2, 3, 4))
    call = relay.reshape(x, relay.const([6, 4]))
    assert call.op.name == "reshape" and tuple(call.attrs.newshape) == (6, 4)


@pytest.mark.parametrize(
    ("build", "values", "want"),
    [
        (
            lambda x, v: relay.broadcast_to(x, v),
            [np.array([5, 2, 3, 4])],
            lambda: np.broadcast_to(X, (5, 2, 3, 4)),
        ),
        (lambda x, v: relay.tile(x, v), [np.array([2, 1, 2])], lambda: np.tile(X, (2, 1, 2))),
        (lambda x, v: relay.squeeze(relay.expand_dims(x, 0), v), [np.array([0])], lambda: X),
        (
            lambda x, v: relay.nn.pad(x, v),
            [np.array([[0, 0], [1, 2], [0, 1]])],
            lambda: np.pad(X, ((0, 0), (1, 2), (0, 1))),
        ),
    ],
)
def test_dyn_ops_match_numpy(build, values, want):
    x = relay.var("x", shape=X.shape)
    vs = [relay.var(f"v{i}", shape=v.shape, dtype="int64") for i, v in enumerate(values)]
    body = build(x, vs[0])
    assert body.op.name.startswith("dyn.")
    out, _ = run([x, *vs], body, X, *values)
    np.testing.assert_allclose(out.numpy(), want())


def test_dyn_strided_slice():
    x = relay.var("x", shape=X.shape)
    b, e, s = iv("b", 3), iv("e", 3), iv("s", 3)
    call = relay.strided_slice(x, b, e, s)
    out, ty = run(
        [x, b, e, s], call, X, np.array([0, 1, 0]), np.array([2, 3, 4]), np.array([1, 1, 2])
    )
    assert len(ty.shape) == 3
    np.testing.assert_array_equal(out.numpy(), X[0:2, 1:3, 0:4:2])


def test_dyn_full_zeros_ones_and_topk():
    s = iv("s", 2)
    out, _ = run([s], relay.full(relay.const(2.5), s, "float32"), np.array([2, 3]))
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 2.5, "float32"))
    out, _ = run([s], relay.zeros(s, "int32"), np.array([4, 1]))
    assert out.numpy().shape == (4, 1) and out.numpy().dtype == np.int32
    x = relay.var("x", shape=(6,))
    k = relay.var("k", shape=(), dtype="int32")
    data = np.array([3, 1, 4, 1, 5, 9], "float32")
    out, _ = run([x, k], relay.topk(x, k, ret_type="values"), data, np.array(2, "int32"))
    np.testing.assert_array_equal(out.numpy(), [9, 5])


def test_one_hot_static_and_dynamic():
    idx = np.array([0, 2, 1])
    want = np.eye(3, dtype="float32")[idx]
    i = relay.var("i", shape=(3,), dtype="int32")
    out, ty = run([i], relay.one_hot(i, 1.0, 0.0, 3, -1, "float32"), idx.astype("int32"))
    assert ty == relay.TensorType((3, 3))
    np.testing.assert_array_equal(out.numpy(), want)
    d = relay.var("d", shape=(), dtype="int32")
    out, ty = run(
        [i, d],
        relay.one_hot(i, 1.0, 0.0, d, -1, "float32"),
        idx.astype("int32"),
        np.array(3, "int32"),
    )
    np.testing.assert_array_equal(out.numpy(), want)


def test_shape_of_arange_argwhere():
    x = relay.var("x", shape=(relay.Any(), 3))
    out, ty = run([x], relay.shape_of(x), np.zeros((5, 3), "float32"))
    assert ty == relay.TensorType((2,), "int32")
    assert out.numpy().tolist() == [5, 3]
    assert relay.arange(relay.const(1), relay.const(7), relay.const(2), "int32").op.name == "arange"
    n = relay.var("n", shape=(), dtype="int32")
    out, ty = run([n], relay.arange(n, dtype="int32"), np.array(4, "int32"))
    assert ty == relay.TensorType((relay.Any(),), "int32")
    np.testing.assert_array_equal(out.numpy(), np.arange(4))
    c = relay.var("c", shape=(2, 3), dtype="bool")
    cond = np.array([[1, 0, 1], [0, 0, 1]], bool)
    out, _ = run([c], relay.argwhere(c), cond)
    np.testing.assert_array_equal(out.numpy(), np.argwhere(cond))


def test_shape_functions():
    assert output_shapes("nn.conv2d", {"padding": (1, 1)}, [(2, 3, 8, 8), (4, 3, 3, 3)]) == [
        (2, 4, 8, 8)
    ]
    assert output_shapes("add", {}, [(3, 1), (1, 4)]) == [(3, 4)]
    assert output_shapes("sum", {"axis": [1]}, [(3, 4, 5)]) == [(3, 5)]
    assert output_shapes("split", {"indices_or_sections": 2, "axis": 0}, [(4, 2)]) == [
        (2, 2),
        (2, 2),
    ]
    assert output_shapes("take", {"axis": 1}, [(3, 4), (5,)]) == [(3, 5)]
    assert output_shapes("dyn.reshape", {}, [X, np.array([3, -1])]) == [(3, 8)]
    assert output_shapes("dyn.arange", {}, [np.array(0), np.array(10), np.array(3)]) == [(4,)]
    assert output_shapes("argwhere", {}, [np.array([0, 3, 0, 1])]) == [(2, 1)]
    op = relay.op.get("dyn.tile")
    assert op.get_attr("TShapeDataDependent") is True
    assert relay.op.get("nn.dense").get_attr("TShapeDataDependent") is False


def test_derived_shape_functions_agree_with_inferred_types():
    """Every operator call of two real networks: the shape function applied to the
    argument shapes gives the shapes type inference gave the call."""
    from relaykit.ir.expr import Call, checked_type_or_none
    from relaykit.ir.functor import post_order
    from relaykit.ir.op import Op
    from relaykit.op.shape_func import shapes_of_type
    from relaykit.testing import mobilenet, resnet

    checked = 0
    for mod, _ in (resnet.get_workload(batch_size=3, num_layers=18), mobilenet.get_workload(2)):
        for node in post_order(mod["main"].body):
            if isinstance(node, Call) and isinstance(node.op, Op):
                args = [checked_type_or_none(a) for a in node.args]
                shapes = [
                    [f.shape for f in a.fields] if isinstance(a, relay.TupleType) else a.shape
                    for a in args
                ]
                got = output_shapes(node.op, node.attrs, shapes)
                assert got == shapes_of_type(node.checked_type), node.op.name
                checked += 1
    assert checked > 100


def test_dyn_tile_takes_float_reps_as_integers():
    import numpy as np

    from relaykit import relay

    x = relay.var("x", shape=(2, 3))
    r = relay.var("reps", shape=(3,), dtype="float32")
    f = relay.Function([x, r], relay.tile(x, r))
    xd = np.arange(6, dtype="float32").reshape(2, 3)
    out = relay.create_executor("debug").evaluate(f)(xd, np.array([3.0, 2.0, 1.0], "float32"))
    np.testing.assert_array_equal(out.numpy(), np.tile(xd, (3, 2, 1)))


def test_dyn_upsampling_with_run_time_scales_matches_repeat():
    import numpy as np

    from relaykit import relay

    x = relay.var("x", shape=(1, 2, 3, 4))
    sh = relay.var("sh", shape=(), dtype="float32")
    call = relay.nn.upsampling(x, sh, 2.0)
    assert call.op.name == "dyn.nn.upsampling"
    f = relay.Function([x, sh], call)
    xd = np.arange(24, dtype="float32").reshape(1, 2, 3, 4)
    for kind in ("debug", "vm"):
        out = relay.create_executor(kind).evaluate(f)(xd, np.array(3.0, "float32"))
        want = xd.repeat(3, axis=2).repeat(2, axis=3)  # nearest neighbour, integer scales
        np.testing.assert_array_equal(out.numpy(), want)
    d = relay.var("d", shape=(), dtype="float32")
    v = relay.var("v", shape=(1, 1, 2, 2, 2))
    f3 = relay.Function(
        [v, d], relay.nn.upsampling3d(v, d, 1.0, 2.0, coordinate_transformation_mode="asymmetric")
    )
    vd = np.arange(8, dtype="float32").reshape(1, 1, 2, 2, 2)
    out3 = relay.create_executor("debug").evaluate(f3)(vd, np.array(2.0, "float32"))
    np.testing.assert_array_equal(out3.numpy(), vd.repeat(2, axis=2).repeat(2, axis=4))
