"""``relaykit demo`` (the whole flow on a real backend) and ``relaykit bench``."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

from relaykit.backends.status import AVAILABLE, PREFERRED, describe
from relaykit.cli import main
from relaykit.cli.bench import Engine, measure
from relaykit.cli.demo import best_target


def test_demo_partitions_builds_runs_and_times(tmp_path, capsys):
    report = tmp_path / "report.txt"
    args = ["demo", "--model", "mlp", "--report", str(report), "--runs", "2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    target, _ = best_target()
    assert f"2. backend: {target}" in out
    assert re.search(rf"3\. partition: \d+ regions? on {target} with \d+ operators?", out)
    assert re.search(rf"4\. build: [1-9]\d* regions? compiled by {target}", out), out
    diff = float(re.search(r"max abs difference from the host build (\S+)", out).group(1))
    assert diff <= 1e-4
    times = re.search(rf"6\. time: {target} (\S+) ms, host (\S+) ms \(median of 4 runs\)", out)
    assert times and float(times.group(1)) > 0 and float(times.group(2)) > 0
    text = report.read_text()
    assert f"Target {target}:" in text  # the partition summary
    assert "nn.dense" in text and "Operator breakdown" in text  # and where each op went


def test_demo_picks_the_first_available_backend():
    target, skipped = best_target()
    statuses = {name: describe(name).status for name in PREFERRED}
    first = next(n for n in PREFERRED if statuses[n] == AVAILABLE)
    assert target == first
    assert ("not available" in skipped) == (first != PREFERRED[0])


def test_demo_with_a_chosen_backend(tmp_path, capsys):
    args = ["demo", "--model", "mlp", "--target", "jsonref", "--runs", "1",
            "--report", str(tmp_path / "r.txt")]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2. backend: jsonref" in out
    assert "Target jsonref:" in (tmp_path / "r.txt").read_text()


def test_bench_compares_relaykit_host_and_onnxruntime(conv_net, capsys):
    pytest.importorskip("onnxruntime")
    args = ["bench", str(conv_net), "--target", "jsonref", "--bursts", "2", "--runs", "2",
            "--pause", "0"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2 bursts x 2 runs per engine" in out
    rows = {}
    for line in out.splitlines():
        m = re.fullmatch(r"(relaykit jsonref|relaykit host|onnxruntime)\s+(\S+)\s+(\S+)x\s+(\S+)",
                         line)  # fmt: skip
        if m:
            rows[m.group(1)] = (float(m.group(2)), float(m.group(3)), m.group(4))
    assert set(rows) == {"relaykit jsonref", "relaykit host", "onnxruntime"}, out
    base = rows["relaykit jsonref"][0]
    assert rows["relaykit jsonref"][1:] == (1.0, "-")
    for name in ("relaykit host", "onnxruntime"):
        median, ratio, diff = rows[name]
        assert ratio == pytest.approx(median / base, rel=0.02, abs=0.01)
        assert float(diff) <= 1e-5  # the same outputs as relaykit's build


def test_bench_on_a_workload_says_onnxruntime_needs_a_file(capsys):
    args = ["bench", "mlp", "--target", "jsonref", "--bursts", "1", "--runs", "1", "--no-host"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "onnxruntime runs ONNX files only" in out
    assert "relaykit host" not in out


def test_measure_takes_turns_in_bursts():
    calls: list[str] = []
    engines = [Engine(n, lambda n=n: calls.append(n)) for n in ("a", "b", "c")]
    measure(engines, bursts=3, runs=2, pause=0)
    assert calls[:3] == ["a", "b", "c"]  # one warm-up each
    timed = calls[3:]
    assert (
        timed
        == ["a"] * 2
        + ["b"] * 2
        + ["c"] * 2
        + ["b"] * 2
        + ["c"] * 2
        + ["a"] * 2
        + ["c"] * 2
        + ["a"] * 2
        + ["b"] * 2
    )
    assert all(len(e.times) == 6 for e in engines)
    assert all(np.isfinite(e.median_ms) for e in engines)


def test_demo_writes_its_report_in_a_temporary_or_named_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    tempfile.tempdir = None  # read TMPDIR again
    try:
        assert main(["demo", "--model", "mlp", "--target", "jsonref", "--runs", "1"]) == 0
    finally:
        tempfile.tempdir = None
    out = capsys.readouterr().out
    where = Path(re.search(r"where every operator went and why: (\S+)", out).group(1))
    assert where.parent.parent == tmp_path / "tmp" and where.name == "placement.txt"
    assert where.parent.name.startswith("relaykit-demo-")
    assert "Target jsonref:" in where.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]  # nothing in the cwd
    reports = tmp_path / "reports" / "today"
    args = ["demo", "--model", "mlp", "--target", "jsonref", "--runs", "1",
            "--report-dir", str(reports)]  # fmt: skip
    assert main(args) == 0
    assert f"why: {reports / 'placement.txt'}" in capsys.readouterr().out
    assert "Target jsonref:" in (reports / "placement.txt").read_text()


def test_demo_refuses_a_report_dir_it_cannot_create(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    args = ["demo", "--model", "mlp", "--target", "jsonref", "--runs", "1",
            "--report-dir", str(blocker / "sub")]  # fmt: skip
    assert main(args) == 2
    assert f"--report-dir '{blocker / 'sub'}': cannot create it" in capsys.readouterr().err


def test_bench_prints_onnxruntime_s_whole_message(conv_net, monkeypatch, capsys):
    ort = pytest.importorskip("onnxruntime")

    class Refusing:
        def __init__(self, *args, **kwargs):
            raise RuntimeError(
                "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions for input: "
                "image for the following indices\n index: 0 Got: 2 Expected: 1\n Please fix "
                "either the inputs/outputs or the model."
            )

    monkeypatch.setattr(ort, "InferenceSession", Refusing)
    args = ["bench", str(conv_net), "--target", "jsonref", "--bursts", "1", "--runs", "1",
            "--no-host", "--pause", "0"]  # fmt: skip
    assert main(args) == 0
    notes = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("note:")]
    assert notes == [
        "note: onnxruntime cannot run this model: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : "
        "Got invalid dimensions for input: image for the following indices index: 0 Got: 2 "
        "Expected: 1 Please fix either the inputs/outputs or the model."
    ]


def _without(monkeypatch, *missing: str) -> None:
    """The demo sees the backends ``missing`` as not installed."""
    import dataclasses

    from relaykit.backends import status
    from relaykit.cli import demo

    def fake(name: str):
        row = describe(name)
        if name not in missing:
            return row
        install = "pip install 'relaykit[dnnl]'" if name == "dnnl" else ""
        return dataclasses.replace(
            row, status="missing extra", detail=f"{name} is not here", install=install
        )

    monkeypatch.setattr(demo, "describe", fake)
    monkeypatch.setattr(status, "describe", fake)


def test_demo_without_dnnl_says_in_one_line_which_extra_makes_it_faster(
    tmp_path, monkeypatch, capsys
):
    if describe("ccompiler").status != AVAILABLE:
        pytest.skip("no C compiler")
    _without(monkeypatch, "dnnl")
    args = ["demo", "--model", "mlp", "--runs", "1", "--report", str(tmp_path / "r.txt")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2. backend: ccompiler (dnnl is not available (dnnl is not here))" in out
    hints = [line for line in out.splitlines() if "pip install 'relaykit[dnnl]'" in line]
    assert hints and hints[0].strip().startswith("dnnl (oneDNN) is not installed")
    assert re.search(r"6\. time: ccompiler .*: (\d+\.\dx faster than the host|SLOWER)", out)


def test_demo_with_no_backend_runs_on_the_host(tmp_path, monkeypatch, capsys):
    _without(monkeypatch, "dnnl", "ccompiler")
    assert best_target()[0] == "host"
    args = ["demo", "--model", "mlp", "--runs", "1", "--report", str(tmp_path / "r.txt")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2. backend: none, the host only (dnnl is not available" in out
    assert "pip install 'relaykit[dnnl]'" in out
    assert "6. time: host" in out


def test_a_backend_slower_than_the_host_is_reported_with_the_reason(monkeypatch):
    from relaykit.cli.demo import _compare

    _without(monkeypatch, "dnnl")
    text = _compare("ccompiler", 3.0, 1.0)
    assert text.startswith("SLOWER than the host, 3.0x: ccompiler compiles plain C loops")
    assert text.endswith("pip install 'relaykit[dnnl]' makes this model run faster")
    assert _compare("ccompiler", 1.0, 2.0) == "2.0x faster than the host"
    _without(monkeypatch)
    if describe("dnnl").status == AVAILABLE:
        assert "pip install" not in _compare("dnnl", 3.0, 1.0)


def test_bench_busy_note_says_load_and_what_relaykit_did():
    from relaykit.cli.bench import busy_note
    from relaykit.runtime.contention import ContentionStats

    stats = ContentionStats(windows=4, wait_s=0.3, active_s=1.0, region_calls=40, serial_calls=37)
    line = busy_note(3.2, 2, stats, enabled=True)
    assert "load 3.2" in line and "2 cores" in line and "30%" in line
    assert "one-thread build in 37 of 40 calls" in line
    assert "handling off" in busy_note(3.2, 2, stats, enabled=False)
    assert busy_note(0.1, 2, ContentionStats(), enabled=True).endswith("on 2 cores")
    assert "other processes using 1.0 of them" in busy_note(1.1, 2, stats, True, others=0.98)
