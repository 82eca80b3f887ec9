"""tvm.driver.tvmc: load an ONNX model, compile, tune, run (Python API and command line);
outputs checked against onnxruntime."""

import os

import numpy as np
import pytest

from relaykit.driver import tvmc
from relaykit.driver.tvmc.main import main

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


@pytest.fixture
def model_path(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype("float32"), "w")
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    return path


def _reference(path, x):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def test_python_api_load_tune_compile_run(model_path, tmp_path):
    model = tvmc.load(model_path)
    records = tvmc.tune(model, target="llvm", tuning_records=str(tmp_path / "r.json"), number=1)
    assert os.path.getsize(records) > 0
    package = tvmc.compile(
        model, target="llvm", tuning_records=records, package_path=str(tmp_path / "p.rkmod")
    )
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype("float32")
    result = tvmc.run(
        tvmc.TVMCPackage(package.package_path),
        device="cpu",
        inputs={"x": x},
        benchmark=True,
        repeat=2,
        number=1,
    )
    np.testing.assert_allclose(
        result.get_output("output_0"), _reference(model_path, x), rtol=1e-4, atol=1e-5
    )
    assert len(result.times) == 2 and "Output Names" in str(result)
    with pytest.raises(tvmc.TVMCException, match="its inputs are"):
        tvmc.run(package, inputs={"nope": x})
    with pytest.raises(tvmc.TVMCException, match="device"):
        tvmc.run(package, device="cuda")


def test_saved_model_round_trips(model_path, tmp_path):
    model = tvmc.load(model_path)
    model.save(str(tmp_path / "m.relay"))
    again = tvmc.load(str(tmp_path / "m.relay"))
    assert str(again.mod) == str(model.mod)


def test_command_line_compile_and_run(model_path, tmp_path, capsys):
    package = str(tmp_path / "m.rkmod")
    assert main(["compile", "--target", "llvm", "--output", package, model_path]) == 0
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype("float32")
    np.savez(tmp_path / "in.npz", x=x)
    out = str(tmp_path / "out.npz")
    assert (
        main(
            ["run", "--inputs", str(tmp_path / "in.npz"), "--output", out, "--print-time", package]
        )
        == 0
    )
    assert "Execution time summary" in capsys.readouterr().out
    np.testing.assert_allclose(
        np.load(out)["output_0"], _reference(model_path, x), rtol=1e-4, atol=1e-5
    )
    assert main(["run", str(tmp_path / "missing.rkmod")]) == 2
    assert "no compiled package" in capsys.readouterr().err
