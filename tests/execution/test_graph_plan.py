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


def _two_outputs(attrs_on: str, names: object) -> tvm.IRModule:
    x = relay.var("x", shape=(2,))
    func = relay.Function([x], relay.Tuple([relay.exp(x), relay.negative(x)]))
    if attrs_on == "function":
        func = func.with_attr("output_tensor_names", names)
    mod = tvm.IRModule.from_expr(func)
    return mod.with_attr("output_tensor_names", names) if attrs_on == "module" else mod


@pytest.mark.parametrize("attrs_on", ["function", "module"])
def test_output_names_reach_the_plan_and_round_trip(attrs_on):
    plan = relay.build(_two_outputs(attrs_on, ["e", "n"]), target="llvm").plan
    assert plan.output_names == ["e", "n"]
    assert [plan.output_name(i) for i in range(2)] == ["e", "n"]
    again = GraphPlan.from_json(plan.to_json())
    assert again.output_names == ["e", "n"]


@pytest.mark.parametrize("names", [["only_one"], ["same", "same"], "en"])
def test_output_names_that_do_not_fit_are_left_out(names):
    plan = relay.build(_two_outputs("module", names), target="llvm").plan
    assert plan.output_names == [] and plan.output_name(1) == "output_1"
    assert "output_names" not in json.loads(plan.to_json())  # the format of before


@pytest.mark.parametrize("bad", [["a"], [1, 2], "ab"])
def test_bad_output_names_are_a_corrupt_artifact(bad):
    obj = json.loads(relay.build(_two_outputs("module", ["e", "n"]), target="llvm").plan.to_json())
    obj["output_names"] = bad
    with pytest.raises(ArtifactCorruptError, match="output_names must be one string per head"):
        GraphPlan.from_json(json.dumps(obj))
