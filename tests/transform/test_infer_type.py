import pytest

from relaykit import op, relay
from relaykit.errors import RelayTypeError, TypeNotInferredError
from relaykit.ir import (
    Function,
    FuncType,
    GlobalVar,
    If,
    IRModule,
    Let,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    const,
    scalar_type,
)
from relaykit.transform import InferType, infer_type

T = TensorType((2, 3))


def test_checked_type_before_inference_says_what_to_do():
    x = Var("x", T)
    y = op.add(x, x)
    with pytest.raises(TypeNotInferredError, match=r"run relay.transform.InferType\(\)"):
        _ = y.checked_type


def test_infer_fills_every_node():
    x = Var("x", T)
    t = Tuple([op.exp(x), op.sum(x, axis=1)])
    g = TupleGetItem(t, 1)
    f = Function([x], g)
    mod = InferType()(IRModule.from_expr(f))
    main = mod["main"]
    assert main.checked_type == FuncType([T], TensorType((2,)))
    assert t.checked_type == TupleType([T, TensorType((2,))])
    assert g.checked_type == TensorType((2,))


def test_type_error_names_op_argument_types_and_shows_ir():
    x = Var("x", TensorType((2, 3)))
    w = Var("w", TensorType((4, 5)))
    f = Function([x, w], op.nn.relu(op.nn.dense(x, w)))
    with pytest.raises(RelayTypeError) as info:
        InferType()(IRModule.from_expr(f))
    msg = str(info.value)
    assert "nn.dense" in msg
    assert "Tensor[(2, 3), float32], Tensor[(4, 5), float32]" in msg
    assert "in:" in msg and "nn.dense(%x, %w" in msg


def test_unannotated_variable_gets_a_clear_error():
    x = relay.var("x")
    with pytest.raises(RelayTypeError, match="cannot infer the type of %x"):
        infer_type(Function([x], op.exp(x)))


def test_let_if_closures_and_call_site_parameter_types():
    x = Var("x", T)
    v = Var("v")
    c = Var("c", scalar_type("bool"))
    p = Var("p")  # takes its type from the call site
    inner = Function([p], op.negative(p))
    body = Let(v, op.exp(x), If(c, inner(v), v))
    f = Function([x, c], body)
    assert infer_type(f) == FuncType([T, scalar_type("bool")], T)
    assert v.checked_type == T


def _call(fn, *args):
    from relaykit.ir import Call

    return Call(fn, list(args))


def test_if_branches_must_agree_and_cond_must_be_bool():
    x = Var("x", T)
    c = Var("c", scalar_type("bool"))
    with pytest.raises(RelayTypeError, match="if branches have different types"):
        infer_type(Function([x, c], If(c, x, op.sum(x))))
    with pytest.raises(RelayTypeError, match="if condition must be a scalar bool"):
        infer_type(Function([x], If(x, x, x)))


def test_recursive_global_with_annotations():
    n = Var("n", scalar_type("int32"))
    f = GlobalVar("f")
    body = If(
        op.less_equal(n, const(0)),
        const(1),
        op.multiply(n, _call(f, op.subtract(n, const(1)))),
    )
    mod = IRModule({f: Function([n], body, ret_type=scalar_type("int32"))})
    mod = InferType()(mod)
    assert mod["f"].checked_type == FuncType([scalar_type("int32")], scalar_type("int32"))


def test_recursive_global_without_return_type_is_reported():
    n = Var("n", scalar_type("int32"))
    f = GlobalVar("f")
    mod = IRModule({f: Function([n], _call(f, n))})
    with pytest.raises(RelayTypeError, match="@f"):
        InferType()(mod)


def test_100k_chain_type_checks():
    x = Var("x", T)
    y = x
    for _ in range(100_000):
        y = op.nn.relu(y)
    assert infer_type(Function([x], y)) == FuncType([T], T)


def test_ret_type_annotation_is_checked():
    x = Var("x", T)
    with pytest.raises(RelayTypeError, match="annotated to return"):
        infer_type(Function([x], x, ret_type=TensorType((3,))))


def test_infer_type_local_is_exported_and_keeps_existing_types():
    from relaykit.transform import InferTypeLocal

    x = Var("x", T)
    y = op.add(x, x)
    infer_type(y)
    before = y.checked_type
    z = op.multiply(y, const(2.0))
    assert InferTypeLocal(z) == T
    assert y.checked_type is before  # the typed subexpression was not re-typed


def test_infer_type_annotates_untyped_parameters_and_let_vars():
    """As TVM's InferType: variables without annotation get their inferred type."""
    x = relay.var("x", shape=(4,), dtype="float32")
    y = relay.var("y")
    v = relay.var("v")
    inner = relay.Function([y], relay.Let(v, relay.abs(y), relay.nn.relu(v)))
    mod = IRModule.from_expr(relay.Function([x], inner(x)))
    out = InferType()(mod)["main"].body.op
    assert tuple(out.params[0].type_annotation.shape) == (4,)
    assert tuple(out.body.var.type_annotation.shape) == (4,)
    assert tuple(out.ret_type.shape) == (4,)
