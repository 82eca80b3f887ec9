"""Fixtures of the command-line tests.

Every test runs inside ``scoped_registries()``, so the rules a command registers (the demo
target's) are gone when it ends. The ONNX models are built here, small, and used by no
other test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from relaykit.byoc import scoped_registries


@pytest.fixture(autouse=True)
def _scoped() -> Iterator[None]:
    with scoped_registries():
        yield


def build_conv_net(path: Path, seed: int = 7) -> Path:
    """Conv(3->8, 3x3) + bias, Relu, a residual Add of a 1x1 Conv, GlobalAveragePool,
    Flatten, Gemm(8->5), Softmax: input ``image`` float32[1, 3, 12, 12], output
    ``probs`` float32[1, 5]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)

    def init(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype("float32") * 0.3, name)

    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"]),
        helper.make_node("Add", ["r1", "c2"], ["s"]),
        helper.make_node("GlobalAveragePool", ["s"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "cli_conv_net",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 12, 12])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 5])],
        [init("w1", 8, 3, 3, 3), init("b1", 8), init("w2", 8, 8, 1, 1), init("w3", 5, 8),
         init("b3", 5)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def build_two_input_net(path: Path) -> Path:
    """``out = MatMul(a, b) + a`` on a symbolic batch dimension: a float32[N, 4],
    b float32[4, 4]; needs --input-shapes."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("MatMul", ["a", "b"], ["m"]),
        helper.make_node("Add", ["m", "a"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "cli_two_inputs",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 4]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.save(model, str(path))
    return path


@pytest.fixture
def conv_net(tmp_path: Path) -> Path:
    pytest.importorskip("onnx")
    return build_conv_net(tmp_path / "conv_net.onnx")


@pytest.fixture
def two_input_net(tmp_path: Path) -> Path:
    pytest.importorskip("onnx")
    return build_two_input_net(tmp_path / "two_inputs.onnx")
