"""Properties on random graphs: partition and rewrite never change what is computed,
and every partitioned function holds exactly one disjoint match."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relaykit import relay
from relaykit.dataflow_pattern import (
    DFPatternCallback,
    PatternGrouper,
    dominates,
    is_constant,
    is_op,
    rewrite,
    wildcard,
)
from relaykit.execution.interpreter import evaluate
from relaykit.ir import Call, Function, post_order

SHAPE = (3,)
UNARY = [relay.nn.relu, relay.tanh, relay.sigmoid]
BINARY = [relay.add, relay.multiply, relay.subtract]


@st.composite
def graphs(draw):
    """A random DAG over two inputs and a constant, with fan-out and diamonds."""
    x = relay.var("x", shape=SHAPE)
    y = relay.var("y", shape=SHAPE)
    nodes = [x, y, relay.const(np.array([0.5, -1.0, 2.0], "float32"))]
    for _ in range(draw(st.integers(1, 14))):
        if draw(st.booleans()):
            fn = draw(st.sampled_from(UNARY))
            nodes.append(fn(draw(st.sampled_from(nodes))))
        else:
            fn = draw(st.sampled_from(BINARY))
            nodes.append(fn(draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))))
    out = nodes[-1]
    if draw(st.booleans()):  # a second output through a tuple
        out = relay.Tuple([out, draw(st.sampled_from(nodes[3:]))])
    return relay.Function([x, y], out)


def patterns():
    elemwise = wildcard().has_attr({"TOpPattern": 0})(wildcard())
    return st.sampled_from(
        [
            is_op("nn.relu")(wildcard()),
            is_op("add")(is_op("nn.relu")(wildcard()), wildcard()),
            is_op("tanh")(is_op("multiply")(wildcard(), is_constant())),
            is_op("sigmoid")(wildcard()).optional(lambda p: is_op("add")(p, wildcard())),
            is_op("add")(wildcard(), wildcard()) | is_op("subtract")(wildcard(), wildcard()),
            dominates(
                is_op("multiply")(wildcard(), wildcard()),
                elemwise,
                is_op("add")(wildcard(), wildcard()),
            ),
        ]
    )


def run(fn):
    x = np.array([1.0, -2.0, 3.0], "float32")
    y = np.array([-0.5, 0.25, 4.0], "float32")
    out = evaluate(fn, x, y)
    if isinstance(out, (list, tuple)):
        return [np.asarray(o.numpy()) for o in out]
    return [np.asarray(out.numpy())]


PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(graphs(), patterns())
def test_partition_preserves_results(fn, pattern):
    out = pattern.partition(fn, {"Composite": "test.p"})
    for got, want in zip(run(out), run(fn), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    grouper = PatternGrouper(pattern, fn)
    composites = [
        n
        for n in post_order(out)
        if isinstance(n, Call) and isinstance(n.op, Function) and "Composite" in n.op.attrs
    ]
    assert len(composites) == len(grouper.groups)
    seen: set = set()
    for group in grouper.groups:  # disjoint computing nodes
        computing = {n for n in group.nodes if isinstance(n, Call)}
        assert not computing & seen
        seen |= computing
        assert pattern.match(group.root)


@PROPERTY
@given(graphs())
def test_rewrite_commuting_adds_preserves_results(fn):
    class Swap(DFPatternCallback):
        def __init__(self):
            super().__init__(rewrite_once=True)
            self.a, self.b = wildcard(), wildcard()
            self.pattern = is_op("add")(self.a, self.b)

        def callback(self, pre, post, node_map):
            return relay.add(post.args[1], post.args[0])

    out = rewrite(Swap(), fn)
    for got, want in zip(run(out), run(fn), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
