"""The tuning log: measurements reused without measuring, bad lines named, failures
recorded, other machines' timings not trusted unless asked; and a real measured
placement whose outputs match NumPy."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import TuningLogError, TuningLogWarning
from relaykit.tuning import MeasuredCost, TuningLog, build_with_log, place

pytest.importorskip("onnxruntime", reason="placement tests use the onnxruntime backend")

RNG = np.random.default_rng(3)
W1, B1 = RNG.standard_normal((16, 8)).astype("float32"), RNG.standard_normal(16).astype("float32")
W2, B2 = RNG.standard_normal((4, 16)).astype("float32"), RNG.standard_normal(4).astype("float32")


def _model() -> Any:
    x = relay.var("x", shape=(2, 8))
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, relay.const(W1)), relay.const(B1)))
    y = relay.nn.bias_add(relay.nn.dense(h, relay.const(W2)), relay.const(B2))
    return tvm.IRModule.from_expr(relay.Function([x], relay.nn.softmax(relay.tanh(y))))


def _want(x: np.ndarray) -> np.ndarray:
    h = np.maximum(x.astype(np.float64) @ W1.T + B1, 0)
    y = np.tanh(h @ W2.T + B2)
    e = np.exp(y - y.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


class FakeMeasure:
    """Counts measurements; latency by the target's name, onnxruntime cheapest; a target
    in ``fail`` raises, as a backend that cannot build a candidate does."""

    def __init__(self, fail: tuple[str, ...] = ()) -> None:
        self.calls: list[str] = []
        self.fail = fail

    def __call__(self, func: Any, target: str, **_: Any) -> float:
        self.calls.append(target)
        if target in self.fail:
            raise RuntimeError(f"{target} cannot build this")
        return {"onnxruntime": 1e-5, "host": 3e-5}.get(target, 2e-5)


def _run(part: Any, x: np.ndarray) -> np.ndarray:
    lib = relay.build(part, target="llvm")
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x)
    m.run()
    return m.get_output(0).numpy()


def test_second_tune_measures_nothing(tmp_path: Path) -> None:
    path = tmp_path / "tune.jsonl"
    first = FakeMeasure()
    res1 = place(_model(), ["onnxruntime"], cost=MeasuredCost(TuningLog(path), measure=first))
    assert len(first.calls) > 0
    assert len(path.read_text().splitlines()) == len(first.calls)
    again = FakeMeasure()
    cost = MeasuredCost(TuningLog(path), measure=again)
    res2 = place(_model(), ["onnxruntime"], cost=cost)
    assert again.calls == [] and cost.measurements == 0 and cost.reused == len(first.calls)
    assert res1.placement == res2.placement


def test_failures_are_recorded_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "tune.jsonl"
    res = place(
        _model(),
        ["onnxruntime"],
        cost=MeasuredCost(TuningLog(path), measure=FakeMeasure(fail=("onnxruntime",))),
    )
    assert {s.target for s in res.placement.segments} == {"host"}
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    failed = [r for r in lines if r["backend"] == "onnxruntime"]
    assert failed and all(r["latency"] is None for r in failed)
    assert all("cannot build this" in r["error"] for r in failed)


def test_corrupt_lines_are_named_and_ignored(tmp_path: Path) -> None:
    path = tmp_path / "tune.jsonl"
    place(_model(), ["onnxruntime"], cost=MeasuredCost(TuningLog(path), measure=FakeMeasure()))
    lines = path.read_text().splitlines()
    lines.insert(1, "{not json")
    good = json.loads(lines[3])
    good["latency"] = -1
    lines[3] = json.dumps(good)
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(TuningLogWarning, match=r"tune.jsonl:2: ignored") as caught:
        log = TuningLog(path)
    assert any("tune.jsonl:4:" in str(w.message) and "latency" in str(w.message) for w in caught)
    assert log.skipped == 2
    with pytest.raises(TuningLogError, match=r"tune.jsonl:2: not a tuning record"):
        TuningLog(path, strict=True)
    # The damaged record is measured again; the rest are reused.
    again = FakeMeasure()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TuningLogWarning)
        place(_model(), ["onnxruntime"], cost=MeasuredCost(TuningLog(path), measure=again))
    assert len(again.calls) == 1


def test_another_machines_log_is_not_reused_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "tune.jsonl"
    place(_model(), ["onnxruntime"], cost=MeasuredCost(TuningLog(path), measure=FakeMeasure()))
    foreign = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        rec["machine"] = "elsewhere"
        foreign.append(json.dumps(rec))
    path.write_text("\n".join(foreign) + "\n")
    fresh = FakeMeasure()
    place(_model(), ["onnxruntime"], cost=MeasuredCost(TuningLog(path), measure=fresh))
    assert len(fresh.calls) == len(foreign)
    path.write_text("\n".join(foreign) + "\n")
    reuse = FakeMeasure()
    log = TuningLog(path, any_machine=True)
    place(_model(), ["onnxruntime"], cost=MeasuredCost(log, measure=reuse))
    assert reuse.calls == []


def test_measured_placement_matches_numpy(tmp_path: Path) -> None:
    """Real measurements (no assertion on their values): whatever placement they choose,
    the outputs are NumPy's."""
    path = tmp_path / "tune.jsonl"
    cost = MeasuredCost(TuningLog(path), repeat=1, budget=1e-4)
    res = place(_model(), ["onnxruntime"], cost=cost)
    assert cost.measurements > 0 and not cost.failures
    x = RNG.standard_normal((2, 8)).astype("float32")
    np.testing.assert_allclose(_run(res.partitioned, x), _want(x), rtol=1e-4, atol=1e-6)
    every = [json.loads(line) for line in path.read_text().splitlines()]
    # candidates on each target, and the whole model: placed, onnxruntime alone, host alone
    assert {r["backend"] for r in every} == {"onnxruntime", "host", "model"}
    assert all(r["latency"] > 0 for r in every)
    # the placement, each backend alone, and the re-decided placements ("measured 1", ...)
    # that timing the whole model may add when backend switches cost more than predicted
    assert {"measured", "onnxruntime", "host"} <= set(res.whole)
    assert all(
        k.startswith("measured ") for k in set(res.whole) - {"onnxruntime", "host", "measured"}
    )
    assert res.whole[res.chosen] == min(res.whole.values())


def test_build_with_log_measures_nothing(tmp_path: Path) -> None:
    path = tmp_path / "tune.jsonl"
    place(_model(), ["onnxruntime"], cost=MeasuredCost(TuningLog(path), measure=FakeMeasure()))
    size = path.stat().st_size  # a measurement would append a line
    lib = build_with_log(_model(), ["onnxruntime"], path)
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    x = RNG.standard_normal((2, 8)).astype("float32")
    m.set_input("x", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), _want(x), rtol=1e-4, atol=1e-6)
    assert path.stat().st_size == size


def test_a_new_backend_version_measures_again(tmp_path: Path) -> None:
    path = tmp_path / "tune.jsonl"
    first = FakeMeasure()
    place(_model(), ["onnxruntime"], cost=MeasuredCost(TuningLog(path), measure=first))
    stale = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec["backend"] == "onnxruntime":
            rec["version"] = "0.0.1"  # measured with another onnxruntime
        stale.append(json.dumps(rec))
    path.write_text("\n".join(stale) + "\n")
    again = FakeMeasure()
    place(_model(), ["onnxruntime"], cost=MeasuredCost(TuningLog(path), measure=again))
    assert again.calls and set(again.calls) == {"onnxruntime"}
    assert len(again.calls) == first.calls.count("onnxruntime")
