"""Recursive patterns: ``wildcard().redirect_to(pattern)``."""

import numpy as np
import pytest

from relaykit import relay
from relaykit.dataflow_pattern import DFPatternCallback, is_op, rewrite, wildcard
from relaykit.dataflow_pattern.pattern import PatternError
from relaykit.ir import structural_equal


def _cast_chain(n):
    data = relay.var("data", relay.TensorType((2, 8), "float32"))
    feat = relay.nn.dense(data, relay.const(np.zeros((4, 8), "float32")))
    for _ in range(n):
        feat = relay.cast(feat, "float32")
    return feat


def _recursive_casts():
    inner = wildcard()
    casts = is_op("cast")(inner)
    inner.redirect_to(casts | is_op("nn.dense")(wildcard(), wildcard()))
    return casts


def test_recursive_pattern_matches_chains_of_any_length():
    pattern = _recursive_casts()
    for n in (1, 2, 5):
        assert pattern.match(_cast_chain(n))
    # a chain that does not end in dense does not match
    x = relay.var("x", relay.TensorType((2, 4), "float32"))
    assert not pattern.match(relay.cast(relay.cast(relay.nn.relu(x), "float32"), "float32"))


def test_recursive_pattern_rewrites_the_whole_chain_once():
    class WrapInRelu(DFPatternCallback):
        def __init__(self, pattern):
            super().__init__(rewrite_once=True)
            self.pattern = pattern

        def callback(self, pre, post, node_map):
            return relay.nn.relu(post)

    chain = _cast_chain(4)
    actual = rewrite(WrapInRelu(_recursive_casts()), chain)
    assert structural_equal(actual, relay.nn.relu(chain))


def test_redirect_twice_is_an_error():
    w = wildcard()
    w.redirect_to(is_op("nn.relu")(wildcard()))
    with pytest.raises(PatternError, match="already redirected"):
        w.redirect_to(is_op("tanh")(wildcard()))


def test_too_deep_recursion_is_a_pattern_error():
    with pytest.raises(PatternError, match="recursion limit"):
        _recursive_casts().match(_cast_chain(2000))
