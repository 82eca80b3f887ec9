"""``relaykit tune`` and ``relaykit compile --tuning-log``: a tuned placement is built
and matches onnxruntime on the original model; a second tune measures nothing; bad
targets and logs are reported."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import relaykit as tvm
from relaykit.cli import main

from .conftest import build_conv_net

ort = pytest.importorskip("onnxruntime", reason="the placement targets include onnxruntime")


def _tune(model: Path, log: Path, capsys: pytest.CaptureFixture[str]) -> str:
    args = ["tune", str(model), "--targets", "onnxruntime,jsonref", "--log", str(log)]
    assert main([*args, "--host-max-units", "2", "--max-units", "3"]) == 0
    return capsys.readouterr().out


def test_tune_then_compile_with_the_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = build_conv_net(tmp_path / "net.onnx")
    log = tmp_path / "tune.jsonl"
    first = _tune(model, log, capsys)
    assert ", 0 measured," not in first and "placement total" in first
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert {r["backend"] for r in records} >= {"onnxruntime", "host"}
    second = _tune(model, log, capsys)
    assert ", 0 measured, " in second  # everything came from the log
    out = tmp_path / "net.rkmod"
    args = ["compile", str(model), "--targets", "onnxruntime,jsonref", "--tuning-log", str(log)]
    assert main([*args, "-o", str(out)]) == 0
    capsys.readouterr()
    x = np.random.default_rng(0).standard_normal((1, 3, 12, 12)).astype("float32")
    lib = tvm.runtime.load_module(str(out), allow_native=False)
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("image", x)
    m.run()
    (want,) = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(
        None, {"image": x}
    )
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-6)


def test_unknown_backend_in_targets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = build_conv_net(tmp_path / "net.onnx")
    code = main(["tune", str(model), "--targets", "onnxruntime,nowhere", "--log", "t.jsonl"])
    assert code == 2
    assert "unknown backend 'nowhere'" in capsys.readouterr().err
    assert not Path("t.jsonl").exists()


def test_compile_with_a_log_lacking_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = build_conv_net(tmp_path / "net.onnx")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    args = ["compile", str(model), "--targets", "onnxruntime", "--tuning-log", str(empty)]
    assert main([*args, "-o", str(tmp_path / "x.rkmod")]) == 1
    assert "run 'relaykit tune" in capsys.readouterr().err
    assert empty.read_text() == ""  # nothing was measured


def test_explain_shows_each_regions_alternatives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = build_conv_net(tmp_path / "net.onnx")
    log = tmp_path / "tune.jsonl"
    _tune(model, log, capsys)
    args = ["explain", str(model), "--target", "onnxruntime,jsonref", "--tuning-log", str(log)]
    assert main(args) == 0
    out = capsys.readouterr().out.split("measured placement", 1)[1]
    rows = [
        line for line in out.splitlines()[2:] if line and not line.startswith(("placement", " "))
    ]
    assert rows
    # Every region names its time on the other targets that could run it, or says why not.
    assert all("fastest of" in r or "the only target" in r for r in rows)
    assert "host" in out
