"""Building patterns: node kinds, sugar, printing, identity and construction errors."""

import dataclasses

import pytest

from relaykit import relay
from relaykit.dataflow_pattern import (
    AltPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataTypePattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    IfPattern,
    LetPattern,
    PatternError,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
    dominates,
    has_attr,
    has_dtype,
    has_shape,
    has_type,
    is_constant,
    is_expr,
    is_if,
    is_let,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    wildcard,
)
from relaykit.errors import OpNotFoundError, RelayKitError

K_ELEMWISE = 0


def test_leaf_patterns():
    ep = is_expr(relay.var("x", shape=(4, 1)))
    assert isinstance(ep, ExprPattern) and isinstance(ep.expr, relay.Var)
    v = is_var("x")
    assert isinstance(v, VarPattern) and v.name == "x" and v.name_hint == "x"
    assert isinstance(is_constant(), ConstantPattern)
    assert isinstance(wildcard(), WildcardPattern)


def test_call_function_tuple_patterns():
    wc1, wc2 = wildcard(), wildcard()
    c = is_op("add")(wc1, wc2)
    assert isinstance(c, CallPattern) and c.args == (wc1, wc2)
    f = FunctionPattern([wc1, wc2], c)
    assert f.params == (wc1, wc2) and f.body is c
    t = is_tuple([wc1, wc2])
    assert isinstance(t, TuplePattern) and t[1] is wc2 and len(t) == 2
    tgi = is_tuple_get_item(t, 1)
    assert isinstance(tgi, TupleGetItemPattern) and tgi.tuple is t and tgi.index == 1
    assert is_tuple_get_item(t).index is None
    assert wildcard()(None).args is None
    assert is_tuple(None).fields is None


def test_alt_type_attr_if_let_patterns():
    assert isinstance(is_op("add") | is_op("subtract"), AltPattern)
    ttype = relay.TensorType((10, 10), "float32")
    assert isinstance(has_type(ttype), TypePattern) and has_type(ttype).type == ttype
    assert (
        isinstance(has_dtype("float16"), DataTypePattern)
        and has_dtype("float16").dtype == "float16"
    )
    assert isinstance(has_shape([10, 10]), ShapePattern) and has_shape([10, 10]).shape == (10, 10)
    op = is_op("add").has_attr({"TOpPattern": K_ELEMWISE})
    assert isinstance(op, AttrPattern) and op.attrs["TOpPattern"] == K_ELEMWISE
    assert isinstance(has_attr({"a": 1}).pattern, WildcardPattern)
    x, y = is_var("x"), is_var("y")
    pat = is_if(is_op("less")(x, y), x, y)
    assert isinstance(pat, IfPattern) and pat.true_branch is x and pat.false_branch is y
    let_var = is_var("let")
    let = is_let(let_var, is_op("less")(x, y), let_var)
    assert isinstance(let, LetPattern) and let.var is let_var and let.body is let_var


def test_sugar_builds_op_calls():
    a, b = wildcard(), wildcard()
    for pat, name in [(a + b, "add"), (a - b, "subtract"), (a * b, "multiply"), (a / b, "divide")]:
        assert isinstance(pat, CallPattern)
        assert pat.op.expr is relay.op.get(name)
        assert pat.args == (a, b)


def test_optional_and_dominates_sugar():
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    opt = conv.optional(lambda x: is_op("nn.relu")(x))
    assert isinstance(opt, AltPattern) and opt.left is conv and opt.right.args == (conv,)
    # A pattern is callable, so it can be the option constructor itself.
    opt2 = conv.optional(is_op("nn.relu"))
    assert opt2.right.args == (conv,)
    parent, child = wildcard(), wildcard()
    dom = child.dominates(parent)
    assert isinstance(dom, DominatorPattern) and isinstance(dom.path, WildcardPattern)
    assert dominates(parent, dom.path, child).child is child


def test_patterns_are_frozen_and_compared_by_identity():
    a, b = wildcard(), wildcard()
    assert a != b and a == a
    assert len({a, b, is_var("x"), is_var("x")}) == 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.foo = 1  # type: ignore[attr-defined]
    call = is_op("add")(a, b)
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.args = ()  # type: ignore[misc]


def test_expressions_become_expr_patterns():
    x = relay.var("x")
    pat = is_op("add")(x, wildcard())
    assert isinstance(pat.args[0], ExprPattern) and pat.args[0].expr is x


def test_printing_uses_the_building_sugar():
    pat = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), is_constant()).has_attr({"groups": 1}))
    assert str(pat) == (
        "is_op('nn.relu')(is_op('nn.conv2d')(wildcard(), is_constant()).has_attr({'groups': 1}))"
    )
    assert str(is_tuple_get_item(is_tuple(None), 2)) == "is_tuple_get_item(is_tuple(None), 2)"
    assert (
        str(has_dtype("float32") | is_var("x")) == "(wildcard().has_dtype('float32') | is_var('x'))"
    )


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: is_op("add")(1, 2), "must be a pattern"),
        (lambda: is_tuple(wildcard()), "list of patterns"),
        (lambda: has_type("float32"), "relay type"),
        (lambda: has_shape(["a"]), "list of ints"),
        (lambda: has_attr(["a"]), "dict of attributes"),
        (lambda: wildcard().optional(lambda x: 3), "returning a pattern"),
        (lambda: is_tuple_get_item(wildcard(), -2), "non-negative"),
    ],
)
def test_construction_errors_are_typed_and_say_what_is_wrong(build, message):
    with pytest.raises(PatternError, match=message) as info:
        build()
    assert isinstance(info.value, RelayKitError)


def test_unknown_op_suggests_close_names():
    with pytest.raises(OpNotFoundError, match="nn.relu"):
        is_op("nn.rleu")
