"""``relaykit compile`` then ``relaykit run``, checked against onnxruntime and NumPy."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest

from relaykit.backends.status import AVAILABLE, describe
from relaykit.cli import main
from relaykit.cli._common import Progress
from relaykit.runtime import load_module
from relaykit.text.parser import parse

ort = pytest.importorskip("onnxruntime")


def _available(name: str) -> bool:
    return describe(name).status == AVAILABLE


TARGETS = [
    pytest.param(t, marks=pytest.mark.skipif(not _available(t.split(",")[0]), reason="n/a"))
    for t in ("dnnl", "ccompiler", "jsonref", "dnnl,ccompiler")
]


def _onnxruntime(path: Path, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return [np.asarray(o) for o in session.run(None, feed)]


def _timings(out: str) -> list[float]:
    lines = out.splitlines()
    i = lines.index("Execution time summary:")
    assert lines[i + 1].split() == ["mean", "(ms)", "median", "(ms)", "max", "(ms)", "min",
                                    "(ms)", "std", "(ms)"]  # fmt: skip
    return [float(v) for v in lines[i + 2].split()]


@pytest.mark.parametrize("target", TARGETS)
def test_compile_then_run_matches_onnxruntime(target, conv_net, tmp_path, capsys):
    artifact = tmp_path / "net.rkmod"
    assert main(["compile", str(conv_net), "--target", target, "-o", str(artifact)]) == 0
    out = capsys.readouterr().out
    first = target.split(",")[0]
    assert re.search(rf"regions \d+ on {first}", out), out  # something was offloaded
    assert "input  image: float32[1, 3, 12, 12]" in out
    assert "output probs: float32[1, 5]" in out  # the ONNX model's output name
    assert artifact.is_file()

    image = np.random.default_rng(3).standard_normal((1, 3, 12, 12)).astype("float32")
    np.savez(tmp_path / "in.npz", image=image)
    args = ["run", str(artifact), "--inputs", str(tmp_path / "in.npz"),
            "--outputs", str(tmp_path / "out.npz"), "--print-time", "--repeat", "4"]  # fmt: skip
    assert main(args) == 0
    captured = capsys.readouterr()
    assert f"wrote 1 output (probs) to {tmp_path / 'out.npz'}" in captured.out
    assert "random" not in captured.err
    mean, median, high, low, std = _timings(captured.out)
    assert 0 < low <= median <= high and low <= mean <= high and std >= 0

    with np.load(tmp_path / "out.npz", allow_pickle=False) as saved:
        got = saved["probs"]
        assert list(saved.keys()) == ["probs"]
    (want,) = _onnxruntime(conv_net, {"image": image})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_random_inputs_are_announced_and_top_k_printed(conv_net, tmp_path, capsys):
    artifact = tmp_path / "net.rkmod"
    assert main(["compile", str(conv_net), "--target", "jsonref", "-o", str(artifact)]) == 0
    capsys.readouterr()
    out_npz = tmp_path / "o.npz"
    assert main(["run", str(artifact), "--print-top", "3", "--seed", "5",
                 "--outputs", str(out_npz)]) == 0  # fmt: skip
    captured = capsys.readouterr()
    assert "no --inputs given: running on random inputs (seed 5)" in captured.err
    with np.load(out_npz) as saved:
        probs = saved["probs"]
    image = np.random.default_rng(5).standard_normal((1, 3, 12, 12)).astype("float32")
    (want,) = _onnxruntime(conv_net, {"image": image})
    np.testing.assert_allclose(probs, want, rtol=1e-4, atol=1e-5)
    top = np.argsort(-want.reshape(-1), kind="stable")[:3]
    rows = captured.out.split("probs: top 3\n", 1)[1].splitlines()[:3]
    assert [r.split(":")[0].strip() for r in rows] == [str((0, int(t))) for t in top]


def test_input_shapes_fix_a_symbolic_dimension(two_input_net, tmp_path, capsys):
    artifact = tmp_path / "mm.rkmod"
    assert main(["compile", str(two_input_net), "--target", "jsonref", "-o", str(artifact)]) == 2
    err = capsys.readouterr().err
    assert "graph input 'a' has a dynamic dimension" in err and "--input-shapes" in err
    assert not artifact.exists()
    args = ["compile", str(two_input_net), "--target", "jsonref", "-o", str(artifact),
            "--input-shapes", "a:3x4 b:[4,4]"]  # fmt: skip
    assert main(args) == 0
    assert "input  a: float32[3, 4]" in capsys.readouterr().out
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4), "float32"), rng.standard_normal((4, 4), "float32")
    np.savez(tmp_path / "in.npz", a=a, b=b)
    assert main(["run", str(artifact), "--inputs", str(tmp_path / "in.npz"),
                 "--outputs", str(tmp_path / "out.npz")]) == 0  # fmt: skip
    with np.load(tmp_path / "out.npz") as saved:
        np.testing.assert_allclose(saved["out"], a @ b + a, rtol=1e-5, atol=1e-6)


def test_run_checks_the_inputs_against_the_model(conv_net, tmp_path, capsys):
    artifact = tmp_path / "net.rkmod"
    assert main(["compile", str(conv_net), "--target", "jsonref", "-o", str(artifact)]) == 0
    capsys.readouterr()
    cases = {
        "typo.npz": ({"imgae": np.zeros((1, 3, 12, 12), "float32")},
                     "no array for input 'image'; arrays 'imgae' match no input"),
        "shape.npz": ({"image": np.zeros((1, 3, 8, 8), "float32")},
                      "input 'image' is float32[1, 3, 8, 8], the model expects "
                      "float32[1, 3, 12, 12]"),
        "dtype.npz": ({"image": np.zeros((1, 3, 12, 12), "complex64")},
                      "input 'image' has dtype complex64, the model expects float32"),
    }  # fmt: skip
    for name, (arrays, message) in cases.items():
        np.savez(tmp_path / name, **arrays)
        assert main(["run", str(artifact), "--inputs", str(tmp_path / name)]) == 2
        assert message in capsys.readouterr().err


def test_compile_a_workload_and_a_relay_text_file(tmp_path, capsys):
    text = tmp_path / "model.relay"
    text.write_text(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {\n"
        "  %0 = add(%x, %y);\n"
        "  multiply(%0, %x)\n"
        "}\n"
    )
    artifact = tmp_path / "t.rkmod"
    assert main(["compile", str(text), "--target", "jsonref", "-o", str(artifact)]) == 0
    assert "regions 1 on jsonref" in capsys.readouterr().out
    x = np.arange(6, dtype="float32").reshape(2, 3)
    y = np.full((2, 3), 0.5, "float32")
    np.savez(tmp_path / "in.npz", x=x, y=y)
    assert main(["run", str(artifact), "--inputs", str(tmp_path / "in.npz"),
                 "--outputs", str(tmp_path / "o.npz")]) == 0  # fmt: skip
    with np.load(tmp_path / "o.npz") as saved:
        np.testing.assert_allclose(saved["output_0"], (x + y) * x)

    assert main(["compile", "mlp", "--target", "jsonref", "-o", str(tmp_path / "m.rkmod")]) == 0
    out = capsys.readouterr().out
    assert "input  data: float32[1, 1, 28, 28]" in out
    assert "output output_0: float32[1, 10]" in out


def test_progress_is_shown_on_a_terminal_only(conv_net, tmp_path, monkeypatch, capsys):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    monkeypatch.setattr("sys.stderr", tty)
    assert main(["compile", str(conv_net), "--target", "jsonref",
                 "-o", str(tmp_path / "a.rkmod")]) == 0  # fmt: skip
    shown = tty.getvalue()
    assert re.search(r"^\[1\] import .*conv_net.onnx \.\.\. \d+\.\d\d s$", shown, re.M), shown
    assert "[2] partition for jsonref ..." in shown
    assert re.search(r"^    codegen jsonref: tvmgen_default_jsonref_main_0 \.\.\. ", shown, re.M)
    assert re.search(r"^\[4\] write .*a.rkmod \.\.\. ", shown, re.M)

    quiet = io.StringIO()  # not a terminal: nothing
    monkeypatch.setattr("sys.stderr", quiet)
    assert main(["compile", str(conv_net), "--target", "jsonref",
                 "-o", str(tmp_path / "b.rkmod")]) == 0  # fmt: skip
    assert quiet.getvalue() == ""
    assert (tmp_path / "a.rkmod").read_bytes()[:8] == (tmp_path / "b.rkmod").read_bytes()[:8]


def test_progress_nests_sub_steps():
    stream = io.StringIO()
    progress = Progress(stream, enabled=True)
    with progress.step("build"):
        with progress.step("codegen a"):
            pass
        with progress.step("codegen b"):
            pass
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[1] build ..."
    assert re.fullmatch(r"    codegen a \.\.\. \d+\.\d\d s", lines[1])
    assert re.fullmatch(r"\[1\] build: \d+\.\d\d s", lines[3])
    with pytest.raises(KeyError), progress.step("fails"):
        raise KeyError("x")
    assert stream.getvalue().endswith("[2] fails ... failed\n")


def _host_ops(artifact: Path) -> list[str]:
    plan = load_module(str(artifact)).plan
    return [n.name for n in plan.nodes if n.kind == "op"]


def test_pin_and_min_ops_move_the_region_boundaries(conv_net, tmp_path, capsys):
    image = np.random.default_rng(1).standard_normal((1, 3, 12, 12)).astype("float32")
    np.savez(tmp_path / "in.npz", image=image)
    (want,) = _onnxruntime(conv_net, {"image": image})
    cases = {
        "all": ([], lambda ops: "nn.conv2d" not in ops),
        "pinned": (["--pin", "nn.conv2d"], lambda ops: ops.count("nn.conv2d") == 2),
        "pruned": (["--min-ops", "1000"], lambda ops: "nn.conv2d" in ops and "nn.dense" in ops),
    }
    for name, (options, host_ok) in cases.items():
        artifact = tmp_path / f"{name}.rkmod"
        args = ["compile", str(conv_net), "--target", "jsonref", "-o", str(artifact), *options]
        assert main(args) == 0
        out = capsys.readouterr().out
        assert ("none offloaded" in out) == (name == "pruned"), out
        assert host_ok(_host_ops(artifact)), (name, _host_ops(artifact))
        outputs = tmp_path / f"{name}.npz"
        assert main(["run", str(artifact), "--inputs", str(tmp_path / "in.npz"),
                     "--outputs", str(outputs)]) == 0  # fmt: skip
        with np.load(outputs) as saved:
            np.testing.assert_allclose(saved["probs"], want, rtol=1e-4, atol=1e-5)


def test_dump_relay_and_fill_mode(two_input_net, tmp_path, capsys):
    artifact, text = tmp_path / "mm.rkmod", tmp_path / "mm.relay"
    args = ["compile", str(two_input_net), "--target", "jsonref", "-o", str(artifact),
            "--input-shapes", "a:2x4", "--dump-relay", str(text)]  # fmt: skip
    assert main(args) == 0
    dumped = parse(text.read_text())
    compilers = {str(f.attrs["Compiler"]) for _, f in dumped.items() if "Compiler" in f.attrs}
    assert compilers == {"jsonref"}
    capsys.readouterr()
    assert (
        main(["run", str(artifact), "--fill-mode", "ones", "--outputs", str(tmp_path / "o.npz")])
        == 0
    )
    assert (
        "running on inputs of ones for a: float32[2, 4], b: float32[4, 4]"
        in capsys.readouterr().err
    )
    with np.load(tmp_path / "o.npz") as saved:
        ones = np.ones((2, 4), "float32")
        np.testing.assert_allclose(saved["out"], ones @ np.ones((4, 4)) + ones)


def _two_output_model(path: Path) -> Path:
    """``scores = Relu(x)``, ``total = ReduceSum(x)``: two named outputs."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Relu", ["x"], ["scores"]),
        helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "two_outputs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("total", TensorProto.FLOAT, []),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.save(model, str(path))
    return path


def test_outputs_keep_the_onnx_model_s_names(tmp_path, capsys):
    from relaykit.contrib.graph_executor import GraphModule

    model = _two_output_model(tmp_path / "two.onnx")
    artifact = tmp_path / "two.rkmod"
    assert main(["compile", str(model), "--target", "jsonref", "-o", str(artifact)]) == 0
    out = capsys.readouterr().out
    assert "  output scores: float32[2, 3]\n  output total: float32[]\n" in out
    x = np.array([[-1, 2, -3], [4, -5, 6]], "float32")
    np.savez(tmp_path / "in.npz", x=x)
    assert main(["run", str(artifact), "--inputs", str(tmp_path / "in.npz"),
                 "--outputs", str(tmp_path / "out.npz")]) == 0  # fmt: skip
    assert "wrote 2 outputs (scores, total) to" in capsys.readouterr().out
    with np.load(tmp_path / "out.npz") as saved:
        assert list(saved.keys()) == ["scores", "total"]
        np.testing.assert_array_equal(saved["scores"], np.maximum(x, 0))
        np.testing.assert_allclose(saved["total"], x.sum())
    # TVM's get_output(i) by index is unchanged, in the model's order
    factory = load_module(str(artifact))
    assert factory.plan.output_names == ["scores", "total"]
    module = GraphModule(factory["default"]())
    module.set_input(x=x)
    module.run()
    np.testing.assert_array_equal(module.get_output(0).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(module.get_output(1).numpy(), x.sum())
    assert main(["run", str(artifact), "--inputs", str(tmp_path / "in.npz")]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("scores: float32[2, 3]") and "\ntotal: float32[]" in printed
