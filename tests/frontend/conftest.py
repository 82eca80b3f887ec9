"""Helpers to build small ONNX models in tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402


def build_model(
    nodes: Sequence,
    inputs: Sequence[tuple[str, int, Sequence]],
    outputs: Sequence[tuple[str, int, Sequence | None]],
    initializers: Sequence = (),
    opset: int = 17,
):
    """A ModelProto from nodes and (name, elem_type, shape) inputs/outputs."""
    graph = helper.make_graph(
        list(nodes),
        "test",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8  # readable by the pinned onnxruntime
    return model


@pytest.fixture
def make_model():
    """``make_model(nodes, inputs, outputs, initializers=(), opset=17)``."""
    return build_model


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` run only when asked for (``-m slow``); the benchmark scripts
    cover them otherwise."""
    if "slow" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow or benchmarks/onnx_conformance.py")
    here = Path(__file__).parent
    for item in items:
        if "slow" in item.keywords and here in Path(str(item.fspath)).parents:
            item.add_marker(skip)
