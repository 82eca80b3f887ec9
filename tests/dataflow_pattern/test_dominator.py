"""Dominator patterns: matching, rewriting and partitioning diamonds (TVM's tests)."""

from relaykit import relay
from relaykit.dataflow_pattern import DFPatternCallback, dominates, is_op, wildcard
from relaykit.ir import structural_equal

K_ELEMWISE = 0


def elemwise():
    return wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())


def diamond_pattern(path=None):
    return dominates(
        is_op("nn.conv2d")(wildcard(), wildcard()),
        path if path is not None else elemwise(),
        is_op("add")(wildcard(), wildcard()),
    )


def fuzzy_diamond_pattern():
    return diamond_pattern(elemwise() | is_op("add")(wildcard(), wildcard()))


def classic_diamond(inp, weight):
    conv2d = relay.nn.conv2d(inp, weight)
    relu = relay.nn.relu(relay.nn.relu(conv2d))
    return relu + relay.nn.leaky_relu(conv2d, alpha=0)


def deeper_diamond(inp, weight):
    conv2d = relay.nn.conv2d(inp, weight)
    relu = relay.tanh(relay.nn.relu(relay.nn.relu(conv2d)))
    return relu + relay.nn.leaky_relu(conv2d, alpha=0)


def single_branch(inp, weight):
    conv2d = relay.nn.conv2d(inp, weight)
    relu = relay.nn.relu(relay.nn.relu(conv2d))
    return relu + relay.tanh(relu)


def nested_diamond(inp, weight):
    conv2d = relay.nn.conv2d(inp, weight)
    relu = relay.nn.relu(conv2d)
    relu = relu + relu
    return relay.tanh(relu) + relay.nn.leaky_relu(conv2d, alpha=0)


def test_match_dominator():
    inp, weight = relay.var("input"), relay.var("weight")
    assert diamond_pattern().match(classic_diamond(inp, weight))
    assert diamond_pattern().match(deeper_diamond(inp, weight))
    assert diamond_pattern().match(single_branch(inp, weight))
    assert fuzzy_diamond_pattern().match(nested_diamond(inp, weight))


def test_not_match_dominator():
    # Fake diamond: two convolutions.
    conv1 = relay.nn.conv2d(relay.var("input1"), relay.var("weight1"))
    conv2 = relay.nn.conv2d(relay.var("input2"), relay.var("weight2"))
    assert not diamond_pattern().match(relay.nn.relu(conv1) + relay.nn.leaky_relu(conv2, alpha=0))
    # An add on the path is not element-wise.
    inp, weight = relay.var("input"), relay.var("weight")
    conv2d = relay.nn.conv2d(inp, weight)
    relu = relay.nn.relu(conv2d)
    assert not diamond_pattern().match((relu + relu) + relay.nn.leaky_relu(conv2d, alpha=0))
    # The relu reads the input, not the convolution.
    out = relay.nn.relu(inp) + relay.nn.leaky_relu(conv2d, alpha=0)
    assert not diamond_pattern().match(out)
    # No convolution at all.
    relu = relay.nn.relu(relay.nn.relu(inp))
    assert not diamond_pattern().match(relu + relay.tanh(relu))


def test_at_most_one_parent():
    pattern = dominates(
        is_op("nn.conv2d")(wildcard(), wildcard()),
        is_op("nn.relu")(wildcard()),
        is_op("add")(wildcard(), wildcard()),
    )
    x, w = relay.var("x"), relay.var("w")
    n6 = relay.nn.conv2d(x, w)
    n7 = relay.tanh(n6)
    n8 = relay.nn.conv2d(n7, w)
    # The parent pattern cannot match both n6 and n8.
    assert not pattern.match(relay.add(relay.nn.relu(n8), relay.nn.relu(n6)))
    assert not pattern.match(relay.add(n8, relay.nn.relu(n6)))


def test_match_typed_dominator():
    inp = relay.var("input", relay.TensorType((1, 3, 12, 12), "float32"))
    weight = relay.var("weight", relay.TensorType((3, 3, 3, 3), "float32"))
    out = classic_diamond(inp, weight)

    def typed(dtype, shape):
        return dominates(
            is_op("nn.conv2d")(wildcard(), wildcard()),
            elemwise().has_dtype(dtype),
            is_op("add")(wildcard(), wildcard()).has_shape(shape),
        )

    assert typed("float32", [1, 3, 10, 10]).match(out)
    assert not typed("float32", [1, 1, 10, 10]).match(out)
    assert not typed("float16", [1, 3, 10, 10]).match(out)


def test_quadruple_rewrite_dominator():
    class DominatorRemovalCallback(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.inp = wildcard()
            self.weight = wildcard()
            self.pattern = dominates(
                is_op("nn.conv2d")(self.inp, self.weight),
                elemwise() | is_op("add")(wildcard(), wildcard()),
                is_op("add")(wildcard(), wildcard()),
            )

        def callback(self, pre, post, node_map):
            return relay.nn.conv2d(node_map[self.inp][0], node_map[self.weight][0])

    inp, weight = relay.var("input"), relay.var("weight")
    out = nested_diamond(
        single_branch(deeper_diamond(classic_diamond(inp, weight), weight), weight), weight
    )
    four = inp
    for _ in range(4):
        four = relay.nn.conv2d(four, weight)
    assert structural_equal(DominatorRemovalCallback().rewrite(out), four)


def test_partition_dominator():
    inp, weight = relay.var("input"), relay.var("weight")
    out = classic_diamond(inp * inp, weight * weight)
    partitioned = diamond_pattern().partition(out)
    i, w = relay.var("input"), relay.var("weight")
    f = relay.Function([i, w], classic_diamond(i, w)).with_attr(
        "PartitionedFromPattern", "nn.conv2d_nn.relu_nn.relu_nn.leaky_relu_add_"
    )
    assert structural_equal(partitioned, f(inp * inp, weight * weight))


def test_quadruple_partition_dominator():
    inp, weight = relay.var("input"), relay.var("weight")
    partitioned = fuzzy_diamond_pattern().partition(
        nested_diamond(
            single_branch(deeper_diamond(classic_diamond(inp, weight), weight), weight), weight
        )
    )
    names = [
        "nn.conv2d_nn.relu_nn.relu_nn.leaky_relu_add_",
        "nn.conv2d_nn.relu_nn.relu_tanh_nn.leaky_relu_add_",
        "nn.conv2d_nn.relu_nn.relu_tanh_add_",
        "nn.conv2d_nn.relu_add_tanh_nn.leaky_relu_add_",
    ]
    functions = []
    for name, build in zip(
        names, [classic_diamond, deeper_diamond, single_branch, nested_diamond], strict=True
    ):
        i, w = relay.var("input"), relay.var("weight")
        functions.append(
            relay.Function([i, w], build(i, w)).with_attr("PartitionedFromPattern", name)
        )
    reference = functions[3](
        functions[2](functions[1](functions[0](inp, weight), weight), weight), weight
    )
    assert structural_equal(partitioned, reference)


def test_long_dominator_path_is_iterative():
    """A 20,000-op element-wise path between the parent and the child."""
    inp, weight = relay.var("input"), relay.var("weight")
    conv2d = relay.nn.conv2d(inp, weight)
    path = conv2d
    for _ in range(20_000):
        path = relay.nn.relu(path)
    out = path + relay.nn.leaky_relu(conv2d, alpha=0)
    assert diamond_pattern().match(out)
    partitioned = diamond_pattern().partition(out)
    assert partitioned.op.attrs["PartitionedFromPattern"].count("nn.relu_") == 20_000
    assert [a for a in partitioned.args] == [inp, weight]
