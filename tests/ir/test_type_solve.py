"""Type inference that solves unknown types: unannotated variables take the type
their uses determine (TVM's weight-shape deduction, unification of incomplete types)."""

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import RelayTypeError
from relaykit.ir import (
    FuncType,
    IncompleteType,
    TensorType,
    TupleType,
    assert_structural_equal,
    scalar_type,
)
from relaykit.transform import InferType, InferTypeLocal, infer_type


def _infer(fn):
    return InferType()(relay.IRModule.from_expr(fn))["main"]


def _param_types(fn):
    return {p.name_hint: p.checked_type for p in fn.params}


def _conv_nchw_oihw(x, w, pad):
    """Direct NumPy 2-D cross-correlation (stride 1), independent of relaykit's kernel."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, h - kh + 1, wd - kw + 1), x.dtype)
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            patch = x[:, :, i : i + kh, j : j + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


def test_conv2d_weight_and_bias_are_deduced_and_the_program_runs():
    x = relay.var("x", shape=(1, 3, 6, 6))
    w, b = relay.var("weight"), relay.var("bias")
    y = relay.nn.bias_add(relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1)), b)
    main = _infer(relay.Function([x, w, b], y))
    types = _param_types(main)
    assert types["weight"] == TensorType((4, 3, 3, 3))
    assert types["bias"] == TensorType((4,))
    assert main.checked_type.ret_type == TensorType((1, 4, 6, 6))

    rng = np.random.default_rng(0)
    xv = rng.standard_normal((1, 3, 6, 6)).astype("float32")
    wv = rng.standard_normal(types["weight"].shape).astype("float32")
    bv = rng.standard_normal(types["bias"].shape).astype("float32")
    mod = relay.IRModule.from_expr(main)
    got = relay.create_executor("graph", mod=mod).evaluate()(xv, wv, bv)
    want = _conv_nchw_oihw(xv, wv, 1) + bv.reshape(1, 4, 1, 1)
    np.testing.assert_allclose(np.asarray(got.numpy()), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("data_layout", "kernel_layout", "shape", "groups", "want"),
    [
        ("NCHW", "OIHW", (1, 4, 8, 8), 1, (6, 4, 3, 5)),
        ("NHWC", "HWIO", (1, 8, 8, 4), 1, (3, 5, 4, 6)),
        ("NCHW", "OIHW", (1, 4, 8, 8), 2, (6, 2, 3, 5)),
    ],
)
def test_conv2d_weight_follows_layout_and_groups(data_layout, kernel_layout, shape, groups, want):
    x, w = relay.var("x", shape=shape), relay.var("w")
    y = relay.nn.conv2d(
        x,
        w,
        channels=6,
        kernel_size=(3, 5),
        groups=groups,
        data_layout=data_layout,
        kernel_layout=kernel_layout,
    )
    assert _param_types(_infer(relay.Function([x, w], y)))["w"] == TensorType(want)


def test_dense_batch_norm_and_conv2d_transpose_deduce_their_inputs():
    x = relay.var("x", shape=(2, 5), dtype="float64")
    w = relay.var("w")
    d = relay.nn.dense(x, w, units=7)
    g, be, m, v = (relay.var(n) for n in ("gamma", "beta", "mean", "var"))
    bn = relay.nn.batch_norm(d, g, be, m, v)[0]
    t = relay.var("t", shape=(1, 3, 4, 4))
    tw = relay.var("tw")
    ct = relay.nn.conv2d_transpose(t, tw, channels=2, kernel_size=(3, 3))
    main = _infer(relay.Function([x, w, g, be, m, v, t, tw], relay.Tuple([bn, ct])))
    types = _param_types(main)
    assert types["w"] == TensorType((7, 5), "float64")
    for n in ("gamma", "beta", "mean", "var"):
        assert types[n] == TensorType((7,), "float64")
    assert types["tw"] == TensorType((3, 2, 3, 3))
    assert main.checked_type.ret_type == TupleType(
        [TensorType((2, 7), "float64"), TensorType((1, 2, 6, 6))]
    )


def test_a_use_later_in_the_program_solves_an_earlier_one():
    # relu(w) alone cannot say what w is; the conv2d after it does.
    x = relay.var("x", shape=(1, 2, 5, 5))
    w = relay.var("w")
    conv = relay.nn.conv2d(x, w, channels=3, kernel_size=(1, 1))
    y = relay.Tuple([relay.nn.relu(w), conv])
    main = _infer(relay.Function([x, w], y))
    assert _param_types(main)["w"] == TensorType((3, 2, 1, 1))
    assert main.checked_type.ret_type.fields[0] == TensorType((3, 2, 1, 1))


def test_unknown_function_is_unified_with_its_call_and_return_annotation():
    tt = scalar_type("int32")
    x, f = relay.var("x", tt), relay.var("f")
    main = _infer(relay.Function([x, f], relay.Call(f, [x]), tt))
    assert main.checked_type == FuncType([tt, FuncType([tt], tt)], tt)


def test_let_bound_and_incomplete_annotation_unify():
    x = relay.var("x", shape=(2, 2))
    w = relay.var("w", IncompleteType())
    v = relay.var("v")
    body = relay.Let(v, w, relay.nn.dense(x, v, units=3))
    main = _infer(relay.Function([x, w], body))
    assert _param_types(main)["w"] == TensorType((3, 2))


def test_unsolvable_unknown_points_at_the_call_that_needs_it():
    x, z = relay.var("x", shape=(2, 3)), relay.var("z")
    call = relay.nn.relu(z)
    with pytest.raises(RelayTypeError, match=r"cannot infer the type of %z.*nn\.relu") as info:
        _infer(relay.Function([x, z], relay.add(x, call)))
    assert "<-- here" in str(info.value) and "nn.relu(%z)" in str(info.value)
    # No node keeps a half-solved type.
    assert call._checked_type is None


def test_unused_unannotated_parameter_is_reported():
    x, z = relay.var("x", shape=(2, 3)), relay.var("z")
    with pytest.raises(RelayTypeError, match="cannot infer the type of %z"):
        _infer(relay.Function([x, z], x))


def test_conv2d_without_channels_says_what_to_give():
    x, w = relay.var("x", shape=(1, 3, 4, 4)), relay.var("w")
    with pytest.raises(RelayTypeError, match=r"channels= and kernel_size="):
        _infer(relay.Function([x, w], relay.nn.conv2d(x, w)))


def test_deduced_type_conflicting_with_another_use_is_an_error():
    x, w = relay.var("x", shape=(1, 3, 4, 4)), relay.var("w")
    conv = relay.nn.conv2d(x, w, channels=2, kernel_size=(1, 1))
    bad = relay.nn.bias_add(relay.var("d", shape=(1, 5)), w)
    with pytest.raises(RelayTypeError, match=r"nn\.bias_add.*bias"):
        _infer(relay.Function([x, w], relay.Tuple([conv, bad])))


def test_infer_type_local_solves_too():
    x, w = relay.var("x", shape=(4, 6)), relay.var("w")
    assert InferTypeLocal(relay.nn.dense(x, w, units=2)) == TensorType((4, 2))
    assert w.checked_type == TensorType((2, 6))


def test_infer_type_annotates_the_solved_parameters_as_tvm_does():
    x, w = relay.var("x", shape=(3, 4)), relay.var("w")
    y = relay.nn.dense(x, w, units=5)
    main = _infer(relay.Function([x, w], y))
    new_w = main.params[1]
    assert new_w.name_hint == "w" and new_w.type_annotation == TensorType((5, 4))
    assert main.body.args[1] is new_w  # every use refers to the annotated variable
    assert main.params[0] is x  # annotated ones are kept
    wa = relay.var("w", shape=(5, 4))
    expected = _infer(relay.Function([x, wa], relay.nn.dense(x, wa, units=5)))
    assert_structural_equal(main, expected)


def test_polymorphic_functions_are_instantiated_at_each_use():
    a, b = relay.TypeVar("a"), relay.TypeVar("b")
    xa = relay.Var("x", a)
    id_func = relay.Function([xa], xa, a, [a])
    f, y = relay.Var("f", FuncType([b], b)), relay.Var("y", b)
    apply = relay.Function([f, y], f(y), b, [b])
    i32 = scalar_type("int32")
    assert infer_type(apply(id_func, relay.const(0, "int32"))) == i32
    # let-bound polymorphism: one identity used at two types
    idv = relay.Var("id")
    body = relay.Let(
        idv, id_func, relay.Tuple([idv(relay.const(1)), idv(relay.const(2.0, "float64"))])
    )
    assert infer_type(body) == TupleType([i32, scalar_type("float64")])
    # a polymorphic function where a monomorphic one is expected; the annotation
    # also solves the unannotated %z of the other branch
    z = relay.Var("z")
    choice = relay.Var("c", FuncType([], scalar_type("bool")))
    top = relay.Function(
        [choice], relay.If(choice(), id_func, relay.Function([z], z)), FuncType([b], b), [b]
    )
    assert infer_type(top) == FuncType([FuncType([], scalar_type("bool"))], FuncType([b], b), [b])
    assert z.checked_type == b


def test_self_recursive_global_without_return_annotation():
    f = relay.GlobalVar("f")
    n, data = relay.var("n", shape=(), dtype="int32"), relay.var("data", shape=())
    step = f(relay.subtract(n, relay.const(1, "int32")), relay.log(data))
    body = relay.If(relay.equal(n, relay.const(0, "int32")), data, step)
    mod = relay.IRModule()
    mod[f] = relay.Function([n, data], body)
    mod = InferType()(mod)
    assert mod["f"].checked_type == FuncType(
        [scalar_type("int32"), scalar_type("float32")], scalar_type("float32")
    )
    got = relay.create_executor("debug", mod=mod).evaluate(f)(np.int32(2), np.float32(50.0))
    np.testing.assert_allclose(np.asarray(got.numpy()), np.log(np.log(np.float32(50.0))), rtol=1e-6)
