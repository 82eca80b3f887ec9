"""rewrite with DFPatternCallback, ported from TVM's tests, plus errors."""

import numpy as np
import pytest

from relaykit import relay
from relaykit.dataflow_pattern import (
    DFPatternCallback,
    FunctionPattern,
    PatternError,
    RewriteError,
    is_constant,
    is_expr,
    is_op,
    rewrite,
    wildcard,
)
from relaykit.ir import TensorType, structural_equal


class AddToSub(DFPatternCallback):
    def __init__(self):
        super().__init__()
        self.pattern = is_op("add")(wildcard(), wildcard())

    def callback(self, pre, post, node_map):
        return post.args[0] - post.args[1]


def test_rewrite():
    x, y = relay.var("x"), relay.var("y")
    out = rewrite(AddToSub(), x + y)
    assert structural_equal(out, x - y)
    assert AddToSub().rewrite(x * y) is not None


def test_rewrite_call_of_function():
    x, w, y = relay.var("x"), relay.var("w"), relay.var("y")
    inpf, weightf = relay.var("input"), relay.var("weight")
    func = relay.Function([inpf, weightf], relay.nn.relu(relay.nn.conv2d(inpf, weightf)))
    out = rewrite(AddToSub(), func(x, w) + y)
    assert is_op("subtract")(wildcard(), wildcard()).match(out)
    assert out.args[0].op is func  # unchanged subtrees are reused


def test_rewrite_func_with_attr():
    x, y = relay.var("x"), relay.var("y")
    f = relay.Function([x, y], x + y).with_attr("Composite", "add")
    a, b = relay.var("a"), relay.var("b")
    c_abs = relay.abs(relay.Call(f, [a, b]))

    class Inline(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = wildcard().has_attr({"Composite": "add"})(wildcard(), wildcard())

        def callback(self, pre, post, node_map):
            return post.args[0] + post.args[1]

    out = rewrite(Inline(), c_abs)
    assert structural_equal(out, relay.abs(a + b))


def test_nested_rewrite_returning_post_is_a_fixed_point():
    class Keep(DFPatternCallback):
        def __init__(self, pattern):
            super().__init__()
            self.pattern = pattern

        def callback(self, pre, post, node_map):
            return post

    x, y = relay.var("x"), relay.var("y")
    n0 = relay.add(x, relay.add(y, y))
    out = relay.add(relay.add(x, n0), n0)
    a, b = wildcard(), wildcard()
    p0 = is_op("add")(a, b)
    pat = is_op("add")(p0, is_op("add")(p0, a))
    assert rewrite(Keep(pat), out) is out


# The callback reads epsilon back from a float32 constant. (TVM's structural equality
# compares float attributes with a 1e-9 tolerance; relaykit's compares them exactly.)
EPS = float(np.float32(1e-5))


class BatchnormCallback(DFPatternCallback):
    def __init__(self):
        super().__init__()
        self.x = wildcard()
        self.var = wildcard()
        self.mean = wildcard()
        self.beta = wildcard()
        self.gamma = wildcard()
        self.eps = is_constant()
        self.pattern = (
            self.gamma * (self.x - self.mean) / is_op("sqrt")(self.var + self.eps) + self.beta
        )

    def callback(self, pre, post, node_map):
        x = node_map[self.x][0]
        var = node_map[self.var][0]
        mean = node_map[self.mean][0]
        beta = node_map[self.beta][0]
        gamma = node_map[self.gamma][0]
        eps = node_map[self.eps][0]
        return relay.nn.batch_norm(x, gamma, beta, mean, var, epsilon=eps.data.numpy().item())[0]


def bn_vars():
    return [relay.var(n) for n in ("x", "var", "mean", "beta", "gamma")]


def test_fuse_batchnorm():
    x, var, mean, beta, gamma = bn_vars()
    bn = gamma * (x - mean) / relay.sqrt(var + relay.const(1e-5)) + beta
    out = rewrite(BatchnormCallback(), bn)
    expected = relay.nn.batch_norm(x, gamma, beta, mean, var, epsilon=EPS)[0]
    assert structural_equal(out, expected)


def test_no_fuse_batchnorm():
    x, var, mean, beta, gamma = bn_vars()
    fake_bn = gamma * (x - mean) / relay.sqrt(var + relay.const(1e-5)) - beta
    assert rewrite(BatchnormCallback(), fake_bn) is fake_bn


def test_fuse_double_and_partial_batchnorm():
    x, var, mean, beta, gamma = bn_vars()
    eps = relay.const(1e-5)
    bn = gamma * (x - mean) / relay.sqrt(var + eps) + beta
    bn2 = gamma * (bn - mean) / relay.sqrt(var + eps) + beta
    first = relay.nn.batch_norm(x, gamma, beta, mean, var, epsilon=EPS)[0]
    expected = relay.nn.batch_norm(first, gamma, beta, mean, var, epsilon=EPS)[0]
    assert structural_equal(rewrite(BatchnormCallback(), bn2), expected)

    partial = gamma * (x - mean) / relay.sqrt(var + eps) - beta
    partial2 = gamma * (partial - mean) / relay.sqrt(var + eps) + beta
    expected = relay.nn.batch_norm(partial, gamma, beta, mean, var, epsilon=EPS)[0]
    assert structural_equal(rewrite(BatchnormCallback(), partial2), expected)


def test_fuse_batchnorm_commutation_and_association():
    x, var, mean, beta, gamma = bn_vars()
    eps = relay.const(1e-5)
    expected = relay.nn.batch_norm(x, gamma, beta, mean, var, epsilon=EPS)[0]
    for bn in [
        beta + gamma * (x - mean) / relay.sqrt(var + eps),
        (gamma * (x - mean)) / relay.sqrt(var + eps) + beta,
        gamma * ((x - mean) / relay.sqrt(var + eps)) + beta,
    ]:
        assert structural_equal(rewrite(BatchnormCallback(), bn), expected)


def algebraic_simplify(expr):
    zero = is_expr(relay.const(0)) | is_expr(relay.const(0.0))
    one = is_expr(relay.const(1)) | is_expr(relay.const(1.0))

    class Null(DFPatternCallback):
        def __init__(self, build):
            super().__init__()
            self.x = wildcard()
            self.pattern = build(self.x)

        def callback(self, pre, post, node_map):
            return node_map[self.x][0]

    class NullZero(Null):
        def __init__(self, build):
            DFPatternCallback.__init__(self)
            self.x = zero
            self.pattern = build(self.x)

    return rewrite(
        [
            Null(lambda x: x + zero),
            Null(lambda x: x - zero),
            Null(lambda x: x * one),
            Null(lambda x: x / one),
            NullZero(lambda z: z * wildcard()),
            NullZero(lambda z: z / wildcard()),
        ],
        expr,
    )


def test_algebraic_simplify():
    x, y = relay.var("x"), relay.var("y")
    one, zero, onef, zerof = relay.const(1), relay.const(0), relay.const(1.0), relay.const(0.0)
    assert algebraic_simplify(x + zero) is x
    assert algebraic_simplify(zerof + x) is x
    assert algebraic_simplify(x - zero) is x
    assert algebraic_simplify(x * one) is x
    assert algebraic_simplify(onef * x) is x
    assert algebraic_simplify(x * zero) is zero
    assert algebraic_simplify(x * zerof) is zerof
    assert algebraic_simplify(x / onef) is x
    assert algebraic_simplify(zero / x) is zero
    assert structural_equal(algebraic_simplify((x + zero * y) / one + (y * one) - zero / x), x + y)


class ConcatRewriter(DFPatternCallback):
    """Drops the last field of a concatenate each time it applies."""

    def __init__(self, rewrite_once):
        super().__init__(rewrite_once=rewrite_once)
        self.pattern = is_op("concatenate")(None)

    def callback(self, pre, post, node_map):
        fields = post.args[0].fields
        if len(fields) > 1:
            return relay.concatenate(relay.Tuple(fields[:-1]), axis=0)
        return fields[0]


class OneMoreRelu(DFPatternCallback):
    def __init__(self, rewrite_once):
        super().__init__(rewrite_once=rewrite_once)
        self.pattern = is_op("nn.softmax")(None)

    def callback(self, pre, post, node_map):
        return relay.nn.relu(post)


def test_rewrite_once():
    x, y, z = relay.var("x"), relay.var("y"), relay.var("z")
    concat = relay.concatenate(relay.Tuple([x, y, z]), axis=0)
    assert rewrite(ConcatRewriter(False), concat) is x
    once = rewrite(ConcatRewriter(True), concat)
    assert structural_equal(once, relay.concatenate(relay.Tuple([x, y]), axis=0))

    before = relay.nn.softmax(concat)
    out = rewrite([OneMoreRelu(True), ConcatRewriter(True)], before)
    xy = relay.concatenate(relay.Tuple([x, y]), axis=0)
    assert structural_equal(out, relay.nn.relu(relay.nn.softmax(xy)))
    out = rewrite([OneMoreRelu(True), ConcatRewriter(False)], before)
    assert structural_equal(out, relay.nn.relu(relay.nn.softmax(x)))


def test_rewrite_function_with_fuzzy_body():
    x, w, b = relay.var("x"), relay.var("w"), relay.var("b")
    x1, w1 = relay.var("x1"), relay.var("w1")
    pattern = (
        FunctionPattern([wildcard(), wildcard()], wildcard())(wildcard(), wildcard()) + wildcard()
    )
    func = relay.Function([x1, w1], relay.nn.conv2d(x1, w1))
    expr = func(x, w) + b + b

    class Replace(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = pattern

        def callback(self, pre, post, node_map):
            return x + w

    assert structural_equal(rewrite(Replace(), expr), x + w + b)


def test_require_type_runs_inference_before_matching():
    seen = []

    class TypedRelu(DFPatternCallback):
        def __init__(self):
            super().__init__(require_type=True)
            self.pattern = is_op("nn.relu")(wildcard()).has_shape((2, 3))

        def callback(self, pre, post, node_map):
            seen.append(pre.checked_type)
            return relay.tanh(post.args[0])

    x = relay.var("x", shape=(2, 3))
    out = rewrite(TypedRelu(), relay.nn.relu(relay.nn.relu(x)))
    assert structural_equal(out, relay.tanh(relay.tanh(x)))
    assert seen == [TensorType((2, 3))] * 2


def test_callbacks_see_rewritten_inputs_in_node_map():
    class Collect(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.inp = wildcard()
            self.pattern = is_op("nn.relu")(self.inp)

        def callback(self, pre, post, node_map):
            assert node_map[self.inp][0] is post.args[0]
            return relay.tanh(post.args[0])

    x = relay.var("x")
    out = rewrite(Collect(), relay.nn.relu(relay.nn.relu(x)))
    assert structural_equal(out, relay.tanh(relay.tanh(x)))


def test_callback_without_pattern_is_an_error():
    class NoPattern(DFPatternCallback):
        def callback(self, pre, post, node_map):
            return post

    with pytest.raises(PatternError, match="set self.pattern"):
        rewrite(NoPattern(), relay.var("x"))


def test_callback_returning_non_expression_is_an_error():
    class Bad(AddToSub):
        def callback(self, pre, post, node_map):
            return None

    x = relay.var("x")
    with pytest.raises(RewriteError, match="must return a relay expression"):
        rewrite(Bad(), x + x)


def test_rewrite_that_never_settles_is_reported():
    class Increment(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.x = wildcard()
            self.c = is_constant()
            self.pattern = self.x + self.c

        def callback(self, pre, post, node_map):
            value = node_map[self.c][0].data.numpy().item()
            return node_map[self.x][0] + relay.const(value + 1.0)

    with pytest.raises(RewriteError, match="fixed point after 100"):
        rewrite(Increment(), relay.var("x") + relay.const(0.0))


def test_converged_rewrite_with_many_callbacks_is_not_an_error():
    # TVM aborts whenever 100 callback passes were made, even after converging.
    callbacks = [AddToSub() for _ in range(60)]
    x, y = relay.var("x"), relay.var("y")
    assert structural_equal(rewrite(callbacks, x + y), x - y)
