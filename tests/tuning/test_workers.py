"""Where measurements run: local worker processes pinned to their own cores, and a local
two-node Ray cluster whose nodes measure while the driver decides; either way the
placement is the one the measurements recorded in the log give."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.tuning import MeasuredCost, TuningLog, place
from relaykit.tuning.workers import Job, LocalWorkers, core_groups, run_job

pytest.importorskip("onnxruntime", reason="placement tests use the onnxruntime backend")

RNG = np.random.default_rng(5)
W = RNG.standard_normal((8, 8)).astype("float32")


def _model() -> Any:
    x = relay.var("x", shape=(4, 8))
    h = relay.nn.relu(relay.nn.dense(x, relay.const(W)))
    return tvm.IRModule.from_expr(relay.Function([x], relay.sigmoid(relay.exp(h) + h)))


def _segments(result: Any) -> list[tuple[int, int, str]]:
    return [(s.start, s.stop, s.target) for s in result.placement.segments]


def test_core_groups_never_share_a_core() -> None:
    cores = sorted(os.sched_getaffinity(0))
    for threads in (1, 2, 3):
        groups = core_groups(threads)
        flat = [c for g in groups for c in g]
        assert len(flat) == len(set(flat))  # no core in two groups
        assert set(flat) <= set(cores)
        assert all(len(g) == min(threads, len(cores)) for g in groups)
    assert len(core_groups(1, workers=1)) == 1


def test_local_workers_are_pinned_and_measure() -> None:
    pool = LocalWorkers(threads=1)
    try:
        x = relay.var("x", shape=(3,))
        func = tvm.transform.InferType()(tvm.IRModule.from_expr(relay.exp(x)))["main"]
        from relaykit.ir import save_json

        jobs = [Job(save_json(func), "host", 1, repeat=1, budget=1e-4)] * (pool.workers + 1)
        results = pool.map(jobs)
    finally:
        pool.close()
    assert all(r["error"] is None and r["latency"] > 0 for r in results)
    bad = run_job(Job("{not json", "host", 1))
    assert bad["latency"] is None and "Error" in bad["error"]


def test_local_workers_placement_is_the_logs(tmp_path: Path) -> None:
    path = tmp_path / "tune.jsonl"
    cost = MeasuredCost(TuningLog(path), threads=1, repeat=1, budget=1e-4)
    try:
        first = place(_model(), ["onnxruntime"], cost=cost, max_units=3, host_max_units=2)
    finally:
        cost.close()
    assert cost.measurements > 0 and cost.lost == 0
    replay = MeasuredCost(TuningLog(path), threads=1, measure_missing=False)
    again = place(_model(), ["onnxruntime"], cost=replay, max_units=3, host_max_units=2)
    assert replay.measurements == 0 and replay.missing == 0
    assert _segments(again) == _segments(first)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def ray_cluster(tmp_path: Path) -> Iterator[str]:
    """A head node and a second node, one CPU each, on the loopback address."""
    pytest.importorskip("ray", reason="the Ray cluster test needs the ray extra")
    ray_cli = shutil.which("ray") or str(Path(sys.executable).with_name("ray"))
    if not Path(ray_cli).exists():
        pytest.skip("the ray command is not on PATH")
    src = str(Path(tvm.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--num-cpus=1", "--object-store-memory=80000000", "--disable-usage-stats"]
    head = [ray_cli, "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1"]
    head += ["--include-dashboard=false", *common]
    second = [ray_cli, "start", f"--address={address}", "--node-ip-address=127.0.0.1", *common]
    try:
        for cmd in (head, second):
            subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=60)
        yield address
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        subprocess.run([ray_cli, "stop", "--force"], env=env, capture_output=True, timeout=60)


def test_ray_cluster_tune_gives_the_logs_placement(ray_cluster: str, tmp_path: Path) -> None:
    import ray

    path = tmp_path / "tune.jsonl"
    cost = MeasuredCost(TuningLog(path), threads=1, repeat=1, budget=1e-4, ray_address=ray_cluster)
    try:
        first = place(_model(), ["onnxruntime"], cost=cost, max_units=3, host_max_units=2)
        nodes = [n for n in ray.nodes() if n["Alive"]]
        assert len(nodes) == 2  # both nodes joined and stayed up
    finally:
        cost.close()
    assert cost.measurements > 0 and cost.lost == 0 and not cost.failures
    # The driver decided from what the nodes measured: the same log, replayed here
    # without measuring, gives the same placement.
    replay = MeasuredCost(TuningLog(path), threads=1, measure_missing=False)
    again = place(_model(), ["onnxruntime"], cost=replay, max_units=3, host_max_units=2)
    assert replay.missing == 0
    assert _segments(again) == _segments(first)
