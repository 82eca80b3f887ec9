"""``--input-shapes`` checked against the ONNX model's declared inputs: a name that is no
input, a wrong rank, a size below 1 or one that contradicts a static size exits 2 with
one line naming the input and its declared shape; hints use the model's own names."""

from __future__ import annotations

from pathlib import Path

import pytest

from relaykit.cli import main


def _error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run ``relaykit ARGS``, expect exit 2, and return its one error line."""
    assert main(list(args)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("relaykit: error:")]
    assert len(lines) == 1, err
    return lines[0]


def _build_ids_model(path: Path) -> Path:
    """``token_ids`` int64[batch, seq] and ``mask`` float32[batch, seq]: Cast, Mul."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Cast", ["token_ids"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["f", "mask"], ["masked"]),
    ]
    graph = helper.make_graph(
        nodes,
        "ids",
        [
            helper.make_tensor_value_info("token_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("masked", TensorProto.FLOAT, ["batch", "seq"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("command", ["compile", "partition", "explain", "bench"])
def test_a_name_that_is_no_input_is_refused(command, conv_net, tmp_path, capsys):
    extra = ["-o", str(tmp_path / "x.rkmod")] if command == "compile" else []
    line = _error(capsys, command, str(conv_net), "--target", "jsonref", *extra,
                  "--input-shapes", "imag:1x3x12x12")  # fmt: skip
    assert "--input-shapes imag:1x3x12x12: the model has no input 'imag'" in line
    assert "its inputs are image: float32[1, 3, 12, 12]" in line
    assert not (tmp_path / "x.rkmod").exists()


def test_a_wrong_rank_is_refused(conv_net, two_input_net, capsys):
    line = _error(capsys, "compile", str(conv_net), "--target", "jsonref",
                  "--input-shapes", "image:1x3x12")  # fmt: skip
    assert line.endswith(
        "--input-shapes image:1x3x12: input 'image' is declared float32[1, 3, 12, 12], "
        "4 dimensions, not 3"
    )
    line = _error(capsys, "partition", str(two_input_net), "--target", "jsonref",
                  "--input-shapes", "a:[2,4,1]")  # fmt: skip
    assert "input 'a' is declared float32[N, 4], 2 dimensions, not 3" in line


def test_a_size_contradicting_a_static_one_is_refused(conv_net, two_input_net, capsys):
    line = _error(capsys, "compile", str(conv_net), "--target", "jsonref",
                  "--input-shapes", "image:1x3x224x224")  # fmt: skip
    assert "input 'image' is declared float32[1, 3, 12, 12]; dimension 2 is 12, not 224" in line
    line = _error(capsys, "compile", str(two_input_net), "--target", "jsonref",
                  "--input-shapes", "a:2x4 b:4x5")  # fmt: skip
    assert "input 'b' is declared float32[4, 4]; dimension 1 is 4, not 5" in line


@pytest.mark.parametrize("size", ["0", "-3"])
def test_sizes_below_one_are_refused(size, two_input_net, capsys):
    line = _error(capsys, "compile", str(two_input_net), "--target", "jsonref",
                  "--input-shapes", f"a:{size}x4")  # fmt: skip
    assert (
        f"input 'a' is declared float32[N, 4]; dimension 0 (N) must be at least 1, not {size}"
        in line
    )


def test_shapes_for_a_workload_or_a_text_file_are_refused(tmp_path, capsys):
    line = _error(capsys, "compile", "mlp", "--target", "jsonref", "--input-shapes", "data:1x784")
    assert "--input-shapes applies to ONNX models" in line and "--batch" in line
    text = tmp_path / "m.relay"
    text.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) { %x }\n')
    line = _error(capsys, "explain", str(text), "--target", "jsonref", "--input-shapes", "x:2")
    assert "--input-shapes applies to ONNX models; a Relay text file has its types" in line


def test_the_dynamic_dimension_hint_uses_the_model_inputs(tmp_path, capsys):
    pytest.importorskip("onnx")
    model = _build_ids_model(tmp_path / "ids.onnx")
    line = _error(capsys, "compile", str(model), "--target", "jsonref")
    assert "graph input 'token_ids' has a dynamic dimension 0 ('batch')" in line
    assert "e.g. --input-shapes 'token_ids:1x1 mask:1x1'" in line
    assert "data:1x3x224x224" not in line
    # with one input given, the hint lists the other
    line = _error(capsys, "compile", str(model), "--target", "jsonref",
                  "--input-shapes", "token_ids:2x8")  # fmt: skip
    assert "graph input 'mask'" in line and "e.g. --input-shapes mask:1x1" in line


def test_valid_shapes_still_build(tmp_path, capsys):
    pytest.importorskip("onnx")
    model = _build_ids_model(tmp_path / "ids.onnx")
    out = tmp_path / "ids.rkmod"
    args = ["compile", str(model), "--target", "jsonref", "-o", str(out),
            "--input-shapes", "token_ids:2x8 mask:[2,8]"]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "input  token_ids: int64[2, 8]" in printed
    assert "output masked: float32[2, 8]" in printed
