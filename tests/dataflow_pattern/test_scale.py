"""Deep graphs: no recursion on the graph's depth, and time linear in its size."""

import pytest

from relaykit import relay
from relaykit.dataflow_pattern import (
    DFPatternCallback,
    PatternGrouper,
    is_op,
    match,
    rewrite,
    wildcard,
)


def relu_chain(n):
    x = relay.var("x", shape=(4,))
    out = x
    for _ in range(n):
        out = relay.nn.relu(out)
    return x, out


PAIR = is_op("nn.relu")(is_op("nn.relu")(wildcard()))


@pytest.fixture(scope="module")
def chain_100k():
    """One immutable 100,000-relu chain shared by the tests of this module."""
    return relu_chain(100_000)


def test_partition_100k_chain_without_recursion(chain_100k):
    # Its time per op is reported by benchmarks/byoc_scaling.py, not asserted here.
    x, chain = chain_100k
    out = PAIR.partition(chain, {"Composite": "pair"})

    calls = 0
    node = out
    while node is not x:
        assert node.op.attrs["Composite"] == "pair"
        assert node.op.attrs["PartitionedFromPattern"] == "nn.relu_nn.relu_"
        calls += 1
        node = node.args[0]
    assert calls == 50_000


def test_rewrite_100k_chain_without_recursion(chain_100k):
    class ReluToTanh(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = is_op("nn.relu")(wildcard())

        def callback(self, pre, post, node_map):
            return relay.tanh(post.args[0])

    x, chain = chain_100k
    out = rewrite(ReluToTanh(), chain)
    count = 0
    node = out
    while node is not x:
        assert node.op.name == "tanh"
        count += 1
        node = node.args[0]
    assert count == 100_000


def test_match_at_the_top_of_a_deep_chain_only_looks_at_the_pattern(chain_100k):
    _x, chain = chain_100k
    assert match(PAIR, chain)
    assert not match(is_op("nn.relu")(is_op("tanh")(wildcard())), chain)


def test_residual_chain_groups_every_block():
    # out = add(relu(x), x) repeated: x has two users, so post-dominators matter.
    x = relay.var("x", shape=(4,))
    out = x
    for _ in range(30_000):
        out = relay.add(relay.nn.relu(out), out)
    pattern = is_op("add")(is_op("nn.relu")(wildcard()), wildcard())
    grouper = PatternGrouper(pattern, out)
    assert len(grouper.groups) == 30_000 and grouper.rejected == []
    assert all(len(g.args) == 1 for g in grouper.groups)  # the shared input is one parameter
