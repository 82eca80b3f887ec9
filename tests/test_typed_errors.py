"""The raises that were bare builtins are relaykit.errors classes now, each still an
instance of the builtin that callers may catch."""

from __future__ import annotations

import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.dataflow_pattern import is_tuple, wildcard
from relaykit.dataflow_pattern.pattern import PatternIndexError
from relaykit.errors import (
    ArgumentError,
    ArtifactCorruptError,
    AttrError,
    IRError,
    ParseError,
    RelayKitError,
)
from relaykit.op.nn import get_pad_tuple2d
from relaykit.runtime.json_runtime import JSONGraph


def test_expression_shape_builds_the_dynamic_op():
    x = relay.var("x", shape=(2, 3))
    assert relay.reshape(x, newshape=relay.shape_of(x)).op.name == "dyn.reshape"
    assert relay.zeros(relay.shape_of(x), "float32").op.name == "dyn.zeros"


@pytest.mark.parametrize("bad", ["abc", 1.5, object(), [2, "x"], [2.5, 3]])
def test_bad_shape_literal_is_an_argument_error(bad):
    x = relay.var("x", shape=(2, 3))
    with pytest.raises(ArgumentError, match="newshape must be") as info:
        relay.reshape(x, newshape=bad)
    assert isinstance(info.value, TypeError) and isinstance(info.value, RelayKitError)
    with pytest.raises(ArgumentError, match="shape must be"):
        relay.zeros(bad, "float32")


def test_empty_concatenation_is_an_ir_error():
    with pytest.raises(IRError, match="needs at least one tensor") as info:
        relay.concatenate([], axis=0)
    assert isinstance(info.value, ValueError)


def test_bad_padding_is_an_attr_error():
    with pytest.raises(AttrError, match="1, 2 or 4 values"):
        get_pad_tuple2d((1, 2, 3))


def test_tuple_pattern_index_past_the_end_stops_iteration():
    pat = is_tuple([wildcard(), wildcard()])
    with pytest.raises(PatternIndexError, match="out of range") as info:
        pat[2]
    assert isinstance(info.value, IndexError)
    assert len(list(pat)) == 2


def test_bad_string_escape_is_a_parse_error_with_position():
    text = 'def @main(%x: Tensor[(1, 1, 2, 2), float32]) { nn.relu(%x, layout="N\\qCHW") }'
    with pytest.raises(ParseError, match=r"bad escape \\q") as info:
        tvm.parser.parse(text)
    assert ":1:" in str(info.value)


def test_malformed_json_graph_says_what_is_wrong_once():
    with pytest.raises(ArtifactCorruptError) as info:
        JSONGraph.parse('{"format": "nope", "version": 1, "nodes": [], "heads": []}')
    assert str(info.value).count("malformed JSON graph") == 1
    assert "format 'nope'" in str(info.value)
