"""A graph plan read from an artifact is fully checked; what is wrong is a typed error."""

import json

import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ArtifactCorruptError, ArtifactError
from relaykit.execution.graph_plan import GraphPlan, attrs_from_json


def _plan_json() -> dict:
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.softmax(relay.exp(x))))
    return json.loads(relay.build(mod, target="llvm").plan.to_json())


def test_a_plan_round_trips():
    obj = _plan_json()
    assert json.loads(GraphPlan.from_json(json.dumps(obj)).to_json()) == obj


def test_a_non_integer_is_a_corrupt_artifact():
    obj = _plan_json()
    obj["heads"] = ["0"]
    with pytest.raises(ArtifactCorruptError, match=r"^malformed graph plan: expected an integer"):
        GraphPlan.from_json(json.dumps(obj))


def test_a_missing_field_is_a_corrupt_artifact():
    obj = _plan_json()
    del obj["heads"]
    with pytest.raises(ArtifactCorruptError, match=r"malformed graph plan: KeyError: 'heads'"):
        GraphPlan.from_json(json.dumps(obj))


def test_an_unknown_version_is_not_called_corrupt():
    obj = _plan_json()
    obj["version"] = 999
    with pytest.raises(ArtifactError, match=r"graph plan version 999 is not supported") as info:
        GraphPlan.from_json(json.dumps(obj))
    assert not isinstance(info.value, ArtifactCorruptError)


def test_bad_attributes_are_a_corrupt_artifact():
    with pytest.raises(ArtifactCorruptError, match="attributes must be an object"):
        attrs_from_json([1, 2])
    with pytest.raises(ArtifactCorruptError, match="unexpected attribute object"):
        attrs_from_json({"axis": {"what": 1}})
