"""Explaining failed matches: which sub-pattern, why, at which node."""

import pytest

from relaykit import relay
from relaykit.dataflow_pattern import (
    MatchResult,
    dominates,
    has_dtype,
    is_constant,
    is_op,
    is_tuple,
    is_var,
    match_explain,
    wildcard,
)


@pytest.fixture
def conv_bias_relu():
    x, w, b = relay.var("x"), relay.var("w"), relay.var("b")
    return relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w), b))


def test_wrong_op_names_the_pattern_the_op_and_the_printed_node(conv_bias_relu):
    pattern = is_op("nn.relu")(is_op("nn.relu")(wildcard()))
    result = pattern.match(conv_bias_relu, explain=True)
    assert isinstance(result, MatchResult) and not result
    assert result.reason == "is_op('nn.relu') expected op nn.relu but found nn.bias_add at %1"
    assert result.node is conv_bias_relu.args[0]
    assert result.path == "root.args[0]"
    assert result.failed_pattern is pattern.args[0].op
    assert "/* <-- here */" in result.render()
    assert str(result) == result.reason


def test_success_is_truthy_and_carries_the_node_map(conv_bias_relu):
    data = wildcard()
    pattern = is_op("nn.relu")(
        is_op("nn.bias_add")(is_op("nn.conv2d")(data, wildcard()), wildcard())
    )
    result = match_explain(pattern, conv_bias_relu)
    assert result and result.matched and result.reason == ""
    assert result.node_map[data][0] is conv_bias_relu.args[0].args[0].args[0]
    assert pattern.match(conv_bias_relu, explain=True).matched
    assert pattern.match(conv_bias_relu) is True


def test_the_furthest_alternative_is_reported(conv_bias_relu):
    deep = is_op("nn.relu")(
        is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), is_constant()), wildcard())
    )
    pattern = is_op("tanh")(wildcard()) | deep
    result = match_explain(pattern, conv_bias_relu)
    assert result.reason == "is_constant() expected a constant but found variable %w at %w"
    assert result.path == "root.args[0].args[0].args[1]"


def test_attribute_mismatch(conv_bias_relu):
    pattern = is_op("nn.relu")(wildcard()).has_attr({"data_layout": "NHWC"})
    assert match_explain(pattern, conv_bias_relu).reason == (
        "is_op('nn.relu')(wildcard()).has_attr({'data_layout': 'NHWC'}) expected attribute "
        "data_layout but the call to nn.relu has no attribute data_layout at root"
    )
    conv = conv_bias_relu.args[0].args[0]
    pattern = is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"data_layout": "NHWC"})
    result = match_explain(pattern, conv)
    assert "expected data_layout='NHWC' but found data_layout='NCHW' at root" in result.reason


def test_shared_pattern_bound_to_another_node():
    x, y = relay.var("x"), relay.var("y")
    a = wildcard()
    result = match_explain(a + a, x + y)
    assert "wildcard() appears more than once in the pattern and already matched variable %x" in (
        result.reason
    )
    assert result.node is y


def test_arity_type_and_root_failures():
    x = relay.var("x", shape=(2, 2))
    result = match_explain(is_op("add")(wildcard()), x + x)
    assert result.reason == "is_op('add')(wildcard()) expected 1 arguments but found 2 at root"
    result = match_explain(has_dtype("int32"), x)
    assert (
        result.reason
        == "wildcard().has_dtype('int32') expected dtype int32 but found float32 at root"
    )
    result = match_explain(is_op("add")(is_var("y"), wildcard()), x + x)
    assert result.reason == "is_var('y') expected variable %y but found %x at %x"
    result = match_explain(is_tuple([wildcard()]), relay.Tuple([x, x]))
    assert result.reason == "is_tuple([wildcard()]) expected 1 fields but found 2 at root"


def test_commutative_retry_reports_the_better_attempt():
    x, y = relay.var("x"), relay.var("y")
    pattern = is_op("multiply")(is_var("x"), is_op("nn.relu")(wildcard()))
    expr = relay.multiply(relay.tanh(y), x)  # the swapped order gets further
    result = match_explain(pattern, expr)
    assert result.reason == "is_op('nn.relu') expected op nn.relu but found tanh at %0"
    assert result.node is expr.args[0]


def test_dominator_failure_names_the_path_node_that_is_not_elementwise():
    elemwise = wildcard().has_attr({"TOpPattern": 0})(wildcard())
    diamond = dominates(
        is_op("nn.conv2d")(wildcard(), wildcard()), elemwise, is_op("add")(wildcard(), wildcard())
    )
    inp, weight = relay.var("input"), relay.var("weight")
    conv2d = relay.nn.conv2d(inp, weight)
    relu = relay.nn.relu(conv2d)
    inner = relu + relu
    result = match_explain(diamond, inner + relay.nn.leaky_relu(conv2d, alpha=0))
    assert result.reason == (
        "wildcard().has_attr({'TOpPattern': 0}) expected TOpPattern=0 but add has TOpPattern=1 "
        "at %2"
    )
    assert result.node is inner  # the call whose operator is not element-wise
