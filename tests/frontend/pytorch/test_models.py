"""The five models of issue 14 (small versions) through TorchScript (``from_pytorch``)
and ``torch.export`` (``from_exported_program``): outputs within 1e-4 of torch's,
parameters named by their state-dict paths."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from relaykit import relay  # noqa: E402
from relaykit.frontend import from_exported_program, from_pytorch  # noqa: E402

FAST = ("resnet18", "vgg11", "bert")
SLOW = ("resnet50", "mobilenet_v2")  # -m slow (each path has a fast test of every layer kind)
MODELS = [*FAST, *(pytest.param(n, marks=pytest.mark.slow) for n in SLOW)]


@pytest.mark.parametrize("name", MODELS)
def test_from_pytorch_matches_torch(name, zoo, relay_run, close):
    model, args = zoo.small(name)
    with torch.no_grad():
        want = model(*args)
        traced = torch.jit.trace(model, args)
    infos = [
        (f"input{i}", (list(a.shape), str(a.dtype).removeprefix("torch.")))
        for i, a in enumerate(args)
    ]
    mod, params = relay.frontend.from_pytorch(traced, infos)
    names = [p.name_hint for p in mod["main"].params]
    assert names[: len(args)] == [f"input{i}" for i in range(len(args))]
    assert set(names[len(args) :]) == set(params)
    state = model.state_dict()
    for key, value in params.items():  # state-dict names, the tensors themselves
        np.testing.assert_array_equal(value.numpy(), state[key].numpy())
    got = relay_run(mod, params, {f"input{i}": a.numpy() for i, a in enumerate(args)})
    close(got, want)


@pytest.mark.parametrize("name", MODELS)
def test_from_exported_program_matches_torch(name, zoo, relay_run, close):
    model, args = zoo.small(name)
    with torch.no_grad():
        want = model(*args)
    ep = torch.export.export(model, args)
    mod, params = from_exported_program(ep)
    user = [p.name_hint for p in mod["main"].params][: len(args)]
    assert user == [
        s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"
    ]
    assert set(params) <= set(model.state_dict())
    got = relay_run(mod, params, {n: a.numpy() for n, a in zip(user, args, strict=True)})
    close(got, want)


def test_parameter_names_follow_tvm(zoo):
    model, args = zoo.small("resnet18")
    _, params = from_pytorch(torch.jit.trace(model, args), [("input0", (1, 3, 32, 32))])
    assert "layer1.0.conv1.weight" in params and "bn1.running_mean" in params
    assert "fc.bias" in params
    friendly, _ = from_pytorch(
        torch.jit.trace(model, args), [("input0", (1, 3, 32, 32))], use_parser_friendly_name=True
    )
    assert "layer1_0_conv1_weight" in [p.name_hint for p in friendly["main"].params]


def test_input_dtype_from_the_trace_or_input_infos(zoo):
    model, args = zoo.small("bert")
    traced = torch.jit.trace(model, args)
    mod, _ = from_pytorch(traced, [("ids", (1, 8)), ("mask", (1, 8))])
    assert [p.type_annotation.dtype for p in mod["main"].params[:2]] == ["int64", "int64"]
    mod, _ = from_pytorch(traced, [("ids", ((1, 8), "int32")), ("mask", ((1, 8), "int64"))])
    assert mod["main"].params[0].type_annotation.dtype == "int32"
