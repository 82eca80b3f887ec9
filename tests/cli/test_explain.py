"""``relaykit explain MODEL --target ... [--html] [--dot] [--json]``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relaykit.cli import main
from relaykit.cli._models import load_model
from relaykit.ir import Call, Op, post_order

SMALL = ["--image-size", "32"]


def op_calls(model: str) -> list[str]:
    """The operator calls of ``model``'s main, counted by walking the module."""
    mod, _ = load_model(model, image_size=32)
    return [
        n.op.name
        for n in post_order(mod["main"].body)
        if isinstance(n, Call) and isinstance(n.op, Op)
    ]


def test_writes_html_dot_and_json(tmp_path, capsys):
    html, dot, js = tmp_path / "r.html", tmp_path / "r.dot", tmp_path / "r.json"
    args = ["explain", "vgg11", "--target", "byoc-target", *SMALL]
    assert main([*args, "--html", str(html), "--dot", str(dot), "--json", str(js)]) == 0
    out, err = capsys.readouterr()
    assert "using the built-in demo rules" in out
    assert f"wrote the HTML report to {html}" in err
    data = json.loads(js.read_text())
    ops = data["explain"]["ops"]
    assert [r["op"] for r in ops] == op_calls("vgg11")
    functions = sorted({r["function"] for r in ops if r["function"]})
    assert len(functions) == data["summary"]["targets"]["byoc-target"]["regions"] == 8
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>")
    for fn in functions:
        assert f"<code>{fn}</code>" in page
    assert page.count('<g class="node') == len(ops)
    text = dot.read_text()
    assert text.startswith('digraph "vgg11" {')
    assert len(re.findall(r"^\s*n\d+ \[label=", text, re.M)) == len(ops)
    assert len(re.findall(r'subgraph "cluster_\d+"', text)) == len(functions)
    # conv -> bias_add -> relu chains and the rest: one edge per operator argument
    assert len(re.findall(r"^\s*n\d+ -> n\d+;$", text, re.M)) == sum(len(r["inputs"]) for r in ops)


def test_prints_the_tables_without_output_files(capsys):
    assert main(["explain", "mlp", "--target", "byoc-target", "--pin", "nn.dense"]) == 0
    out = capsys.readouterr().out
    assert "Operator breakdown" in out
    assert re.search(r"^\d+\s+nn\.dense\s+host\s+-\s+pinned to host by user$", out, re.M)


def test_dot_to_stdout(capsys):
    assert main(["explain", "mlp", "--target", "byoc-target", "--dot", "-"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith('digraph "mlp" {') and out.rstrip().endswith("}")
    assert "note: byoc-target" in err  # notes go to stderr when stdout carries the DOT


def test_help_has_an_example(capsys):
    assert main(["explain", "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "relaykit explain resnet50 --target dnnl" in out
    assert "--html FILE" in out and "--dot FILE" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["explain", "no-such-model", "--target", "dnnl"], "unknown model 'no-such-model'"),
        (
            ["explain", "mlp", "--target", "dnnl", "--html", "/no/such/dir/r.html"],
            "the directory '/no/such/dir' does not exist",
        ),
        (["explain", "mlp", "--target", ","], "--target needs at least one backend name"),
        (
            ["explain", "mlp", "--target", "dnnl", "--dot", "-", "--json", "-"],
            "only one of --html, --dot and --json",
        ),
    ],
)
def test_usage_errors_exit_2_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("relaykit: error: ") and message in err
    assert "Traceback" not in err


def test_missing_option_is_a_usage_error(capsys):
    assert main(["explain", "mlp"]) == 2
    assert "--target" in capsys.readouterr().err
    assert main(["explain", "mlp", "--target", "dnnl", "--min-ops", "-1"]) == 2
    assert "-1 is not between 0 and" in capsys.readouterr().err
    assert main(["explain", "mlp", "--target", "dnnl", "--batch", "100000"]) == 2


def test_a_model_that_does_not_parse_fails_with_1(tmp_path, capsys):
    bad = tmp_path / "bad.rly"
    bad.write_text("def @main(%x: Tensor[(1, 4), float32]) {\n  nn.relu(%x,\n}\n")
    assert main(["explain", str(bad), "--target", "dnnl"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("relaykit: error: ") and "Traceback" not in err


def small_onnx(path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype("float32"), "W"),
        numpy_helper.from_array(rng.standard_normal((8,)).astype("float32"), "B"),
        numpy_helper.from_array(rng.standard_normal((288, 10)).astype("float32"), "M"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("MatMul", ["f", "M"], ["m"]),
        helper.make_node("Softmax", ["m"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_an_onnx_model_explained_to_html_renders_in_a_browser(tmp_path):
    model = tmp_path / "small.onnx"
    small_onnx(model)
    html, js = tmp_path / "small.html", tmp_path / "small.json"
    # a fresh process, as a user runs it: the command line entry point end to end
    proc = subprocess.run(
        [sys.executable, "-m", "relaykit.cli", "explain", str(model), "--target",
         "dnnl,ccompiler", "--pin", "nn.dense=ccompiler", "--html", str(html), "--json",
         str(js)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(js.read_text())
    placements = {r["placement"] for r in data["explain"]["ops"]}
    assert {"dnnl", "ccompiler"} <= placements
    functions = sorted({r["function"] for r in data["explain"]["ops"] if r["function"]})
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
         "--window-size=1000,760", "--dump-dom", html.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-ready="1"' in dom.stdout
    for fn in functions:
        assert f"<code>{fn}</code>" in dom.stdout
