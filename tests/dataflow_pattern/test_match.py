"""Matching semantics, ported from TVM's test_dataflow_pattern.py."""

import numpy as np
import pytest

from relaykit import relay
from relaykit.dataflow_pattern import (
    FunctionPattern,
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
    match,
    wildcard,
)
from relaykit.errors import TypeNotInferredError
from relaykit.transform import infer_type

K_ELEMWISE = 0
K_BROADCAST = 1


def test_match_op():
    assert is_op("add").match(relay.op.get("add"))
    assert not is_op("add").match(relay.op.get("subtract"))
    alt = is_op("add") | is_op("subtract")
    assert alt.match(relay.op.get("add")) and alt.match(relay.op.get("subtract"))


def test_match_call_commutative_for_add_and_multiply_only():
    x, y = relay.var("x"), relay.var("y")
    add_pattern = is_op("add")(is_var("x"), is_var("y"))
    assert add_pattern.match(x + y) and add_pattern.match(y + x)
    mul_pattern = is_op("multiply")(is_var("x"), is_var("y"))
    assert mul_pattern.match(x * y) and mul_pattern.match(y * x)
    sub_pattern = is_op("subtract")(is_var("x"), is_var("y"))
    assert sub_pattern.match(x - y) and not sub_pattern.match(y - x)
    div_pattern = is_op("divide")(is_var("x"), is_var("y"))
    assert div_pattern.match(x / y) and not div_pattern.match(y / x)


def test_match_call():
    x, y = relay.var("x"), relay.var("y")
    add_pattern = is_op("add")(wildcard(), wildcard())
    assert add_pattern.match(x + y)
    assert not add_pattern.match(x - y)
    call_pattern = wildcard()(None)  # any callee, any number of arguments
    assert call_pattern.match(relay.nn.relu(x))
    assert call_pattern.match(relay.add(x, y))
    assert not call_pattern.match(x)


def test_match_func():
    x, y = relay.var("x"), relay.var("y")
    wc1, wc2 = wildcard(), wildcard()
    func_pattern = FunctionPattern([wc1, wc2], wc1 + wc2)
    assert func_pattern.match(relay.Function([x, y], x + y))
    assert not func_pattern.match(relay.Function([x, y], x - y))
    any_params = FunctionPattern(None, wildcard())
    assert any_params.match(relay.Function([x], x))
    assert any_params.match(relay.Function([x, y], x + y))


def test_match_if():
    x, y = is_var("x"), is_var("y")
    pat = is_if(is_op("less")(x, y), x, y)
    xv, yv = relay.var("x"), relay.var("y")
    assert pat.match(relay.If(xv < yv, xv, yv))
    assert not pat.match(relay.If(xv > yv, xv, yv))
    assert not pat.match(relay.If(xv < yv, yv, xv))


def test_match_let():
    x, y, let_var = is_var("x"), is_var("y"), is_var("let")
    pat = is_let(let_var, is_op("less")(x, y), let_var)
    xv, yv, lv = relay.var("x"), relay.var("y"), relay.var("let")
    assert pat.match(relay.Let(lv, xv < yv, lv))
    assert not pat.match(relay.Let(lv, xv > yv, lv))
    assert not pat.match(relay.Let(lv, xv < yv, lv * xv))


def test_match_option():
    x, w, b = relay.var("x"), relay.var("w"), relay.var("b")
    pattern = is_op("nn.relu")(
        is_op("nn.conv2d")(wildcard(), wildcard()).optional(
            lambda x: is_op("nn.bias_add")(x, wildcard())
        )
    )
    conv2d = relay.nn.conv2d(x, w)
    assert pattern.match(relay.nn.relu(conv2d))
    assert pattern.match(relay.nn.relu(relay.nn.bias_add(conv2d, b)))
    assert not pattern.match(relay.tanh(conv2d))
    assert not pattern.match(relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w), b)))
    assert not pattern.match(relay.nn.relu(conv2d + w))

    chained = is_op("nn.conv2d")(wildcard(), wildcard())
    chained = chained.optional(is_op("nn.relu")).optional(is_op("tanh"))
    relu = relay.nn.relu(conv2d)
    tanh = relay.tanh(conv2d)
    assert chained.match(conv2d)
    assert chained.match(relu)
    assert chained.match(tanh)
    assert chained.match(relay.tanh(relu))
    assert not chained.match(relay.nn.relu(tanh))


def test_match_const():
    pattern = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), is_constant()), wildcard())
    x = relay.var("x", shape=(1, 3, 224, 224))
    w = relay.var("w", shape=(3, 3, 3, 3))
    b = relay.var("b", shape=(3,))
    assert not pattern.match(relay.nn.bias_add(relay.nn.conv2d(x, w), b))
    wc = relay.const(np.ones((3, 3, 3, 3), "float32"))
    assert pattern.match(relay.nn.bias_add(relay.nn.conv2d(x, wc), b))


def test_match_expr_is_structural():
    assert is_expr(relay.const(1.0)).match(relay.const(1.0))
    assert not is_expr(relay.const(1.0)).match(relay.const(1))  # float32 vs int32
    x = relay.var("x")
    assert is_expr(x).match(x) and not is_expr(x).match(relay.var("x"))


def test_match_tuple():
    x, y, z = relay.var("x"), relay.var("y"), relay.op.get("add")
    tuple_pattern = is_tuple((is_var("x"), wildcard(), is_op("add")))
    assert tuple_pattern.match(relay.Tuple((x, y, z)))
    assert not is_tuple((is_var("x"), wildcard(), is_op("add"), wildcard())).match(
        relay.Tuple((x, y, z))
    )
    item = is_tuple_get_item(tuple_pattern, 1)
    assert item.match(relay.TupleGetItem(relay.Tuple((x, y, z)), 1))
    assert not item.match(relay.TupleGetItem(relay.Tuple((x, y, z)), 2))
    any_item = is_tuple_get_item(tuple_pattern)
    for i in range(3):
        assert any_item.match(relay.TupleGetItem(relay.Tuple((x, y, z)), i))
    concat_pattern = is_op("concatenate")(is_tuple(None))
    for fields in [(x,), (x, y), (x, y, x)]:
        assert concat_pattern.match(relay.concatenate(relay.Tuple(fields), axis=0))


def test_match_type_dtype_shape_of_annotated_vars():
    x = relay.var("x", shape=(10, 10), dtype="float32")
    xi = relay.var("x", shape=(10, 10), dtype="int32")
    assert has_type(relay.TensorType((10, 10), "float32")).match(x)
    assert not has_type(relay.TensorType((10, 10), "float32")).match(xi)
    assert has_dtype("float32").match(x) and not has_dtype("float32").match(xi)
    assert has_shape((10, 10)).match(x) and not has_shape((10, 5)).match(x)


def test_type_patterns_infer_missing_types_in_place():
    x = relay.var("x", shape=(1, 3, 12, 12))
    w = relay.var("w", shape=(3, 3, 3, 3))
    conv = relay.nn.conv2d(x, w)
    assert not conv.has_checked_type
    assert is_op("nn.conv2d")(wildcard(), wildcard()).has_shape([1, 3, 10, 10]).match(conv)
    assert conv.checked_type == relay.TensorType((1, 3, 10, 10), "float32")


def test_type_pattern_on_untypable_expression_says_run_infer_type():
    x = relay.var("x")  # no type annotation
    with pytest.raises(TypeNotInferredError, match="InferType"):
        has_dtype("float32").match(relay.nn.relu(x))


def test_match_op_attr():
    x, y = relay.var("x"), relay.var("y")
    add = is_op("add").has_attr({"TOpPattern": K_BROADCAST})(wildcard(), wildcard())
    assert add.match(x + y)
    assert not add.match(x - y)
    assert not add.match(relay.Let(relay.var("z"), x + y, relay.var("z")))
    dense = is_op("nn.dense").has_attr({"TOpPattern": K_ELEMWISE})(wildcard(), wildcard())
    assert not dense.match(relay.nn.dense(x, y))
    assert not is_op("add").has_attr({"NoSuchOpAttr": 1}).match(relay.op.get("add"))


def test_match_func_attr():
    pattern = wildcard().has_attr({"Composite": "add"})
    x, y = relay.var("x"), relay.var("y")
    assert pattern.match(relay.Function([x, y], x + y).with_attr("Composite", "add"))
    assert not pattern.match(relay.Function([x, y], x + y).with_attr("RandomTest", "add"))
    assert not pattern.match(relay.Function([x, y], x + y).with_attr("Composite", "conv_bias"))


def test_match_call_attr():
    x, y = relay.var("x"), relay.var("y")
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    assert conv.has_attr({"data_layout": "NCHW"}).match(relay.nn.conv2d(x, y))
    assert not conv.has_attr({"data_layout": "NHWC"}).match(relay.nn.conv2d(x, y))
    assert not conv.has_attr({"RandomAttr": "NCHW"}).match(relay.nn.conv2d(x, y))
    out = relay.nn.conv2d(x, y, kernel_size=[3, 3])
    assert conv.has_attr({"kernel_size": [3, 3]}).match(out)
    assert not conv.has_attr({"kernel_size": [3, 3]}).match(
        relay.nn.conv2d(x, y, kernel_size=[2, 1])
    )
    assert is_op("cast")(wildcard()).has_attr({"dtype": "float32"}).match(relay.cast(x, "float32"))


def test_match_non_operator_call_attrs():
    a, b = relay.var("a"), relay.var("b")
    call_has_attr = wildcard()(wildcard()).has_attr({"call_attr": "attr"})
    assert call_has_attr.match(relay.Call(a, [b], attrs={"call_attr": "attr"}))
    assert not call_has_attr.match(relay.Call(a, [b]))
    assert not call_has_attr.match(relay.Call(a, [b], attrs={"wrong": "attr"}))
    assert not call_has_attr.match(relay.Call(a, [b], attrs={"call_attr": "wrong"}))
    empty = wildcard()(wildcard()).has_attr({})
    assert empty.match(relay.Call(a, [b])) and empty.match(relay.Call(a, [b], attrs={"c": 1}))
    assert not wildcard().has_attr({}).match(a)  # attributes belong to calls and functions


def test_match_diamond_requires_the_same_node():
    is_conv2d = is_op("nn.conv2d")(wildcard(), wildcard())
    diamond = is_op("add")(is_op("nn.relu")(is_conv2d), is_op("nn.leaky_relu")(is_conv2d))
    inp, weight = relay.var("input"), relay.var("weight")
    conv2d = relay.nn.conv2d(inp, weight)
    relu = relay.nn.relu(conv2d)
    leaky_relu = relay.nn.leaky_relu(conv2d, alpha=0)
    assert diamond.match(relu + leaky_relu)
    assert not diamond.match(leaky_relu) and not diamond.match(relu)
    assert not diamond.match(relu + leaky_relu + conv2d)
    # A "fake" diamond: two different convolutions.
    conv2d_b = relay.nn.conv2d(relay.var("input2"), relay.var("weight2"))
    assert not diamond.match(relu + relay.nn.leaky_relu(conv2d_b, alpha=0))


def test_shared_wildcard_means_same_node():
    a = wildcard()
    x, y = relay.var("x"), relay.var("y")
    assert (a + a).match(x + x)
    assert not (a + a).match(x + y)
    assert (wildcard() + wildcard()).match(x + y)


def test_associative_divide_multiply_as_tvm():
    x, g, s = relay.var("x"), relay.var("g"), relay.var("s")
    pat_a, pat_g, pat_s = wildcard(), wildcard(), wildcard()
    pattern = pat_g * pat_a / pat_s
    assert pattern.match(g * x / s)
    assert pattern.match(g * (x / s))  # multiply of a divide matched by divide of a multiply
    assert (pat_g * (pat_a / pat_s)).match(g * x / s)


def test_match_node_map_through_matcher():
    from relaykit.dataflow_pattern import DFPatternMatcher

    x, w = relay.var("x"), relay.var("w")
    data, weight = wildcard(), wildcard()
    conv = is_op("nn.conv2d")(data, weight)
    expr = relay.nn.relu(relay.nn.conv2d(x, w))
    matcher = DFPatternMatcher(expr)
    assert matcher.match(is_op("nn.relu")(conv), expr)
    node_map = matcher.node_map()
    assert node_map[data] == [x] and node_map[weight] == [w]
    assert node_map[conv] == [expr.args[0]]


def test_match_rejects_non_expressions():
    from relaykit.dataflow_pattern import PatternError

    with pytest.raises(PatternError, match="relay expressions"):
        match(wildcard(), 3)
    with pytest.raises(PatternError, match="expected a pattern"):
        match("add", relay.var("x"))


def test_typed_expressions_use_checked_type():
    x = relay.var("x", shape=(2, 3))
    y = relay.nn.relu(x)
    infer_type(y)
    assert has_shape((2, 3)).match(y)
    assert not has_dtype("int32").match(y)
