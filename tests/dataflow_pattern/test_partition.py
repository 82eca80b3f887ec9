"""partition: function extraction, names, parameters, constants, check, overlaps, cycles."""

import warnings

import numpy as np
import pytest

from relaykit import relay
from relaykit.dataflow_pattern import (
    FunctionPattern,
    PatternGrouper,
    TupleGetItemPattern,
    is_constant,
    is_expr,
    is_op,
    is_tuple,
    is_var,
    partition,
    wildcard,
)
from relaykit.ir import structural_equal
from relaykit.transform import infer_type


def conv_bias_relu(x, w, b):
    return relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w), b))


def conv_bias_relu_pattern(weight=None):
    conv = is_op("nn.conv2d")(wildcard(), wildcard() if weight is None else weight)
    return is_op("nn.relu")(is_op("nn.bias_add")(conv, wildcard()))


def composite(params, body, name, **attrs):
    fn = relay.Function(params, body).with_attr("PartitionedFromPattern", name)
    for key, value in attrs.items():
        fn = fn.with_attr(key, value)
    return fn


def test_double_partition_with_composite_attrs():
    conv2d_p = is_op("nn.conv2d")(wildcard(), wildcard())
    bias_add_p = is_op("nn.bias_add")(conv2d_p, wildcard())
    relu_p = is_op("nn.relu")(bias_add_p)
    x, w, b = relay.var("input"), relay.var("weight"), relay.var("bias")
    w2, b2 = relay.var("weight"), relay.var("bias")
    relu = conv_bias_relu(x, w, b)
    out = relay.nn.bias_add(relay.nn.conv2d(relu, w2), b2)

    partitioned = out
    for pat, label in [(relu_p, "conv_bias_relu"), (bias_add_p, "conv_bias")]:
        partitioned = pat.partition(partitioned, {"Composite": label})

    i, k, c = relay.var("input"), relay.var("weight"), relay.var("bias")
    func0 = composite(
        [i, k, c],
        conv_bias_relu(i, k, c),
        "nn.conv2d_nn.bias_add_nn.relu_",
        Composite="conv_bias_relu",
    )
    i, k, c = relay.var("input"), relay.var("weight"), relay.var("bias")
    func1 = composite(
        [i, k, c],
        relay.nn.bias_add(relay.nn.conv2d(i, k), c),
        "nn.conv2d_nn.bias_add_",
        Composite="conv_bias",
    )
    assert structural_equal(partitioned, func1(func0(x, w, b), w2, b2))


def bn_pattern():
    gamma, x, mean, var, beta = (wildcard() for _ in range(5))
    return gamma * (x - mean) / is_op("sqrt")(var + is_constant()) + beta


def test_partition_params_follow_the_pattern_leaf_order():
    x, var, mean, beta, gamma = (relay.var(n) for n in ("x", "var", "mean", "beta", "gamma"))
    eps = relay.const(1e-5)

    def bn(x, var, mean, beta, gamma):
        return gamma * (x - mean) / relay.sqrt(var + eps) + beta

    xf, varf, meanf, betaf, gammaf = (relay.var(n) for n in ("x", "var", "mean", "beta", "gamma"))
    f = composite(
        [gammaf, xf, meanf, varf, betaf],
        bn(xf, varf, meanf, betaf, gammaf),
        "subtract_multiply_add_sqrt_divide_add_",
    )
    partitioned = bn_pattern().partition(bn(x, var, mean, beta, gamma))
    assert structural_equal(partitioned, f(gamma, x, mean, var, beta))


def test_partition_double_batchnorm_makes_two_functions():
    x, var, mean, beta, gamma = (relay.var(n) for n in ("x", "var", "mean", "beta", "gamma"))
    eps = relay.const(1e-5)
    bn = gamma * (x - mean) / relay.sqrt(var + eps) + beta
    bn2 = gamma * (bn - mean) / relay.sqrt(var + eps) + beta
    partitioned = bn_pattern().partition(bn2)
    assert partitioned.op is not partitioned.args[1].op  # one function per match
    assert partitioned.args[1].args == (gamma, x, mean, var, beta)
    assert partitioned.args[0] is gamma and partitioned.args[2:] == (mean, var, beta)


def test_overlapping_matches_are_rejected():
    bn_node = is_op("nn.batch_norm")(wildcard(), wildcard(), wildcard(), wildcard(), wildcard())
    pattern = TupleGetItemPattern(bn_node, 0)
    x, var, mean, beta, gamma = (relay.var(n) for n in ("x", "var", "mean", "beta", "gamma"))
    bn = relay.nn.batch_norm(x, gamma, beta, mean, var)
    add = bn[0] + bn[0]  # two projections of one batch_norm
    assert pattern.partition(add) is add
    # Each projection's match would cut the shared batch_norm out from under the other.
    grouper = PatternGrouper(pattern, add)
    assert grouper.groups == [] and len(grouper.rejected) == 2
    assert all("also used by tuple projection" in r.reason for r in grouper.rejected)


def test_a_match_overlapping_an_earlier_one_is_rejected():
    # g = add(c, k), c = relu(k), k = exp(x): g's match takes k (computing it again inside,
    # since c flows back into g only); c's match would need k too.
    x = relay.var("x")
    k = relay.exp(x)
    c = relay.nn.relu(k)
    g = relay.add(c, k)
    pattern = is_op("add")(wildcard(), is_op("exp")(wildcard())) | is_op("nn.relu")(
        is_op("exp")(wildcard())
    )
    grouper = PatternGrouper(pattern, g)
    assert [grp.root for grp in grouper.groups] == [g]
    assert grouper.groups[0].args == [c, x]
    assert [r.root for r in grouper.rejected] == [c]
    assert "overlaps an earlier match at call to add" in grouper.rejected[0].reason


def test_interior_node_used_outside_rejects_the_match():
    pattern = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))
    x, w = relay.var("input"), relay.var("weight")
    conv2d = relay.nn.conv2d(x, w)
    out = relay.nn.relu(conv2d) + conv2d
    assert pattern.partition(out) is out
    rejected = PatternGrouper(pattern, out).rejected
    assert rejected[0].node is conv2d and "used by call to add" in rejected[0].reason


def test_matched_outside_but_dominated_duplicates_the_interior_node():
    """The add is also read by a sigmoid, whose only user is the match's root (TVM's
    test_matched_outside_but_dominated): no cycle, the add is computed twice."""
    data = relay.var("data", shape=(1, 4, 8, 8))
    weight = relay.var("weight", shape=(4, 4, 3, 3))
    bias = relay.var("bias", shape=(1, 4, 1, 1))
    conv = relay.nn.conv2d(data, weight, padding=(1, 1))
    add = conv + bias
    out = relay.multiply(add, relay.sigmoid(add))
    pattern = is_op("multiply")(
        is_op("add")(is_op("nn.conv2d")(wildcard(), wildcard()), wildcard()), wildcard()
    )
    partitioned = pattern.partition(out)
    a, b, c, d = (relay.var(f"FunctionVar_0_{i}") for i in range(4))
    f = composite(
        [a, b, c, d],
        relay.multiply(relay.nn.conv2d(a, b, padding=(1, 1)) + c, d),
        "nn.conv2d_add_multiply_",
    )
    assert structural_equal(partitioned, f(data, weight, bias, relay.sigmoid(add)))


def test_partition_parallel_branches_share_one_parameter():
    pattern = is_op("add")(
        is_op("multiply")(wildcard(), wildcard()), is_op("add")(wildcard(), wildcard())
    )
    i, w, l, r = relay.var("input"), relay.var("weight"), relay.var("left"), relay.var("right")
    conv2d = relay.nn.conv2d(i, w)
    out = relay.add(relay.multiply(l, conv2d), relay.add(conv2d, r))
    lf, mf, rf = relay.var("leftf"), relay.var("midf"), relay.var("rightf")
    f = composite([lf, mf, rf], (lf * mf) + (mf + rf), "multiply_add_add_")
    assert structural_equal(pattern.partition(out), f(l, conv2d, r))


def test_partition_fuzzy_tuple():
    x, y = relay.var("x"), relay.var("y")
    z = x + y
    concat_pattern = is_op("concatenate")(is_tuple(None))

    def concat(*args):
        return relay.concatenate(relay.Tuple(args), axis=0)

    for args in [(x,), (x, y), (x, y, z)]:
        params = [relay.var(f"p{i}") for i in range(len(args))]
        expected = composite(params, concat(*params), "Tuple_concatenate_")(*args)
        assert structural_equal(concat_pattern.partition(concat(*args)), expected)


def test_partition_fuzzy_function_args():
    func_pattern = FunctionPattern(None, wildcard() + wildcard())(None) + wildcard()
    x, y, z, b = relay.var("x"), relay.var("y"), relay.var("z"), relay.var("b")
    xp, yp, zp = relay.var("xp"), relay.var("yp"), relay.var("zp")

    def expected(call):
        n = len(call.op.params)
        params = [relay.var(str(i)) for i in range(n + 1)]
        label = "add_FunctionCall_add_" if n < 3 else "add_add_FunctionCall_add_"
        body = relay.Call(call.op, params[:-1]) + params[-1]
        return composite(params, body, label)(*([*[x, y, z][:n], b]))

    for call in [
        relay.Function([xp], xp + xp)(x),
        relay.Function([xp, yp], xp + yp)(x, y),
        relay.Function([xp, yp, zp], xp + yp + zp)(x, y, z),
    ]:
        assert structural_equal(func_pattern.partition(call + b), expected(call))


def test_partition_check():
    pattern = is_op("nn.relu")(is_op("nn.conv2d")(is_var("input"), wildcard()))

    def check(pre):
        return pre.args[0].attrs.data_layout == "NCHW"

    x, w = relay.var("input"), relay.var("weight")
    relu = relay.nn.relu(relay.nn.conv2d(x, w))
    xf, wf = relay.var("input"), relay.var("weight")
    func = composite([xf, wf], relay.nn.relu(relay.nn.conv2d(xf, wf)), "nn.conv2d_nn.relu_")
    assert structural_equal(pattern.partition(relu, check=check), func(x, w))
    relu = relay.nn.relu(relay.nn.conv2d(x, w, data_layout="NHWC"))
    assert pattern.partition(relu, check=check) is relu


def test_partition_check_with_types():
    pattern = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))

    def check(pre):
        conv = pre.args[0]
        return conv.attrs.data_layout == "NCHW" and conv.checked_type.shape[0] == 1

    def build(batch):
        x = relay.var("input", shape=(batch, 10, 10, 10))
        w = relay.var("weight", shape=(10, 10, 3, 3))
        relu = relay.nn.relu(relay.nn.conv2d(x, w))
        infer_type(relu)
        return relu

    partitioned = pattern.partition(build(1), check=check)
    assert partitioned.op.attrs["PartitionedFromPattern"] == "nn.conv2d_nn.relu_"
    unchanged = build(2)
    assert pattern.partition(unchanged, check=check) is unchanged


def test_partition_option():
    x, w, b = relay.var("x"), relay.var("w"), relay.var("b")
    conv2d = is_op("nn.conv2d")(wildcard(), wildcard())
    pattern1 = is_op("nn.relu")(conv2d.optional(lambda x: is_op("nn.bias_add")(x, wildcard())))
    bias = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()), wildcard())
    pattern2 = bias.optional(lambda x: is_op("nn.relu")(x))
    relu = conv_bias_relu(x, w, b)
    xf, wf, bf = relay.var("x"), relay.var("w"), relay.var("b")
    func = composite([xf, wf, bf], conv_bias_relu(xf, wf, bf), "nn.conv2d_nn.bias_add_nn.relu_")
    for pattern in (pattern1, pattern2):
        assert pattern.match(relu)
        assert structural_equal(pattern.partition(relu), func(x, w, b))


def test_partition_function_patterns():
    x, w, b = relay.var("x"), relay.var("w"), relay.var("b")
    x1, w1 = relay.var("x1"), relay.var("w1")
    wc_x1, wc_w1 = wildcard(), wildcard()
    func = relay.Function([x1, w1], relay.nn.conv2d(x1, w1))
    expr = func(x, w) + b + b
    x2, w2, b2 = relay.var("x2"), relay.var("w2"), relay.var("b2")
    func2 = composite([x2, w2, b2], func(x2, w2) + b2, "nn.conv2d_FunctionCall_add_")
    for body in (is_op("nn.conv2d")(wc_x1, wc_w1), wildcard()):
        pattern = FunctionPattern([wc_x1, wc_w1], body)(wildcard(), wildcard()) + wildcard()
        assert structural_equal(pattern.partition(expr), func2(x, w, b) + b)


def test_partition_optional_function():
    x, w, b = relay.var("x"), relay.var("w"), relay.var("b")
    x1, w1 = relay.var("x1"), relay.var("w1")
    wc_x, wc_w, wc_x1, wc_w1 = wildcard(), wildcard(), wildcard(), wildcard()
    fp0 = FunctionPattern([wc_x1, wc_w1], is_op("sigmoid")(is_op("nn.conv2d")(wc_x1, wc_w1)))
    fp1 = FunctionPattern([wc_x1, wc_w1], is_op("nn.relu")(is_op("nn.conv2d")(wc_x1, wc_w1)))
    pattern = fp0(wc_x, wc_w) | fp1(wc_x, wc_w)
    func = relay.Function([x1, w1], relay.nn.relu(relay.nn.conv2d(x1, w1)))
    x2, w2 = relay.var("x2"), relay.var("w2")
    func2 = composite([x2, w2], func(x2, w2), "nn.conv2d_nn.relu_FunctionCall_")
    assert structural_equal(pattern.partition(func(x, w) + b), func2(x, w) + b)


def test_partition_of_function_pattern_alone_warns_and_does_nothing():
    x = relay.var("x")
    f = relay.Function([x], x)
    with pytest.warns(UserWarning, match="isn't called"):
        assert FunctionPattern(None, wildcard()).partition(f) is f


def test_partition_constant_embedding():
    x, w, b = relay.var("x"), relay.var("w"), relay.var("b")
    wc = relay.const(1)
    xf, bf = relay.var("x"), relay.var("b")
    embedded = composite([xf, bf], conv_bias_relu(xf, wc, bf), "nn.conv2d_nn.bias_add_nn.relu_")
    xf, wf, bf = relay.var("x"), relay.var("w"), relay.var("b")
    lifted = composite([xf, wf, bf], conv_bias_relu(xf, wf, bf), "nn.conv2d_nn.bias_add_nn.relu_")
    relu = conv_bias_relu(x, w, b)
    reluc = conv_bias_relu(x, wc, b)

    # wildcard() lifts whatever it matched, constants included.
    pattern = conv_bias_relu_pattern()
    assert structural_equal(pattern.partition(relu), lifted(x, w, b))
    assert structural_equal(pattern.partition(reluc), lifted(x, wc, b))
    # is_var() does not match constants.
    pattern = conv_bias_relu_pattern(is_var())
    assert structural_equal(pattern.partition(relu), lifted(x, w, b))
    assert pattern.partition(reluc) is reluc
    # is_constant() and is_expr(const) embed the constant.
    for weight in (is_constant(), is_expr(wc)):
        pattern = conv_bias_relu_pattern(weight)
        assert pattern.partition(relu) is relu
        assert structural_equal(pattern.partition(reluc), embedded(x, b))
    # Alternatives embed when the constant side matched, in either order.
    for weight in (is_var() | is_constant(), is_constant() | is_var()):
        pattern = conv_bias_relu_pattern(weight)
        assert structural_equal(pattern.partition(relu), lifted(x, w, b))
        assert structural_equal(pattern.partition(reluc), embedded(x, b))


def test_embedded_constant_keeps_its_value():
    x, b = relay.var("x"), relay.var("b")
    weight = relay.const(np.arange(12, dtype="float32").reshape(1, 3, 2, 2))
    out = conv_bias_relu_pattern(is_constant()).partition(conv_bias_relu(x, weight, b))
    body = out.op.body
    assert body.args[0].args[0].args[1] is weight
    assert len(out.op.params) == 2 and out.args == (x, b)


def test_partition_greedy_from_the_output():
    # relu(relu(relu(x))): the pair nearest the output is taken first.
    x = relay.var("x")
    chain = relay.nn.relu(relay.nn.relu(relay.nn.relu(x)))
    pattern = is_op("nn.relu")(is_op("nn.relu")(wildcard()))
    out = pattern.partition(chain)
    assert out.op.attrs["PartitionedFromPattern"] == "nn.relu_nn.relu_"
    assert out.args[0].op.name == "nn.relu" and out.args[0].args[0] is x


def test_already_partitioned_functions_are_not_entered():
    x = relay.var("x")
    pattern = is_op("nn.relu")(wildcard())
    once = pattern.partition(relay.nn.relu(x), {"Composite": "relu"})
    twice = pattern.partition(once, {"Composite": "relu"})
    assert twice is once


def test_partition_inside_a_function_and_with_attrs():
    x = relay.var("x", shape=(2, 2))
    main = relay.Function([x], relay.tanh(relay.nn.relu(x)))
    out = is_op("nn.relu")(wildcard()).partition(main, {"Composite": "t.relu", "Extra": 1})
    call = out.body.args[0]
    assert call.op.attrs["Composite"] == "t.relu" and call.op.attrs["Extra"] == 1
    assert call.args == (x,)


def test_no_match_returns_the_same_object():
    x = relay.var("x")
    expr = relay.nn.relu(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert partition(is_op("tanh")(wildcard()), expr) is expr


def test_root_op_prefilter_is_exact_about_what_can_match():
    from relaykit.dataflow_pattern.grouper import root_op_names

    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    assert root_op_names(is_op("nn.relu")(conv)) == {"nn.relu"}
    assert root_op_names(conv.optional(is_op("nn.relu"))) == {"nn.conv2d", "nn.relu"}
    assert root_op_names(conv.has_attr({"groups": 1}).has_dtype("float32")) == {"nn.conv2d"}
    assert root_op_names((is_op("add") | is_op("subtract"))(wildcard(), wildcard())) == {
        "add",
        "subtract",
    }
    # Unknown callee, association of divide/multiply, non-call roots: no filter.
    assert root_op_names(wildcard()(None)) is None
    assert root_op_names(wildcard() / wildcard()) is None
    assert root_op_names(conv | wildcard()) is None
    assert root_op_names(is_tuple(None)) is None
