"""Where measurements run: in this process, in local worker processes pinned to their own
cores, or (:mod:`.ray_cluster`) as tasks on a Ray cluster.

A measurement job is plain data (:class:`Job`: the candidate's function as JSON, the
target, the timing settings and a bound) so that it crosses process and machine
boundaries; :func:`run_job` is what a worker executes and answers a plain dict
(``latency`` or ``error``, and the measuring machine's fingerprint).

:class:`LocalWorkers` splits this process's cores into groups of ``threads`` cores and
starts one worker process per group, pinned to it with ``os.sched_setaffinity``: on two
cores with two threads that is one worker, with one thread two, and two measurements
never share a core.

>>> pool = InProcess()
>>> pool.workers
1
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from relaykit.ir.json_load import load_json
from relaykit.runtime.threads import set_num_threads

from .log import machine_fingerprint
from .measure import measure_function, measure_module, measure_modules

__all__ = ["Job", "Pool", "InProcess", "LocalWorkers", "run_job", "core_groups", "serve"]


@dataclass(frozen=True)
class Job:
    """One candidate to measure on one target: ``func_json`` is ``save_json`` of its
    typed function; ``bound`` (seconds, ``inf`` for none) lets a hopeless candidate stop
    after one timed run. With ``whole``, ``func_json`` is a partitioned module, built as
    it is (``target`` only names it); with ``modules`` (partitioned modules as JSON),
    they are timed together in interleaved rounds and the answer holds ``latencies``
    and ``errors``, one per module."""

    func_json: str
    target: str
    threads: int
    repeat: int = 3
    budget: float = 0.004
    bound: float = float("inf")
    whole: bool = False
    modules: tuple[str, ...] = ()


class Pool(Protocol):
    """Runs jobs somewhere and answers one result dict per job, in order."""

    workers: int

    def map(self, jobs: Sequence[Job]) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


def run_job(job: Job | dict[str, Any]) -> dict[str, Any]:
    """Measure one job here: ``{"latency": s, "error": None, "machine": m}``, or the
    error the backend raised with ``latency`` None."""
    spec = job if isinstance(job, Job) else Job(**job)
    set_num_threads(spec.threads)
    machine = machine_fingerprint()
    if spec.modules:
        got = measure_modules([load_json(m) for m in spec.modules], budget=spec.budget)
        return {
            "latencies": [v if isinstance(v, float) else None for v in got],
            "errors": [v if isinstance(v, str) else None for v in got],
            "machine": machine,
        }
    try:
        node = load_json(spec.func_json)
        if spec.whole:
            seconds = measure_module(node, repeat=spec.repeat, budget=spec.budget, bound=spec.bound)
        else:
            seconds = measure_function(
                node, spec.target, repeat=spec.repeat, budget=spec.budget, bound=spec.bound
            )
    except Exception as err:  # a backend that cannot build or run it is recorded
        return {"latency": None, "error": f"{type(err).__name__}: {err}", "machine": machine}
    return {"latency": seconds, "error": None, "machine": machine}


class InProcess:
    """Jobs measured one after another in this process (``measure``: the function that
    times a candidate, :func:`run_job` by default)."""

    workers = 1

    def __init__(self, measure: Callable[[Job], dict[str, Any]] = run_job) -> None:
        self.measure = measure

    def map(self, jobs: Sequence[Job]) -> list[dict[str, Any]]:
        return [self.measure(j) for j in jobs]

    def close(self) -> None:
        return None


def core_groups(threads: int, workers: int | None = None) -> list[list[int]]:
    """This process's cores split into groups of ``threads`` (at most ``workers``
    groups; at least one group, of every core, when there are fewer cores than threads).

    >>> all(len(g) >= 1 for g in core_groups(1))
    True
    """
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if not cores:
        cores = list(range(os.cpu_count() or 1))
    per = max(1, min(threads, len(cores)))
    count = max(1, len(cores) // per)
    if workers is not None:
        count = max(1, min(count, workers))
    return [cores[k * per : (k + 1) * per] for k in range(count)]


def serve(cores: Sequence[int], threads: int) -> None:
    """A worker process's loop: pinned to ``cores``, one job per JSON line on stdin, one
    result per JSON line on the original stdout (anything else printed goes to stderr)."""
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, list(cores))
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # backends that print must not corrupt the results
    set_num_threads(threads)
    for line in sys.stdin:
        if line.strip():
            out.write(json.dumps(run_job(json.loads(line))) + "\n")
            out.flush()


_LOST = {"latency": None, "error": None, "lost": "the worker process died"}


class _Worker:
    """One worker process pinned to ``cores``, started on demand, restarted after a death."""

    def __init__(self, cores: list[int], threads: int) -> None:
        self.cores = cores
        self.threads = threads
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            src = str(Path(__file__).resolve().parents[2])  # the directory holding relaykit
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join([src, *sys.path[1:]])
            call = f"serve({self.cores!r}, {self.threads})"
            code = f"from relaykit.tuning.workers import serve; {call}"
            self.proc = subprocess.Popen(
                [sys.executable, "-c", code],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                text=True,
            )
        return self.proc

    def run(self, job: Job) -> dict[str, Any]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(asdict(job)) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:  # it died (a backend crashed the process): this job is lost
            self.close()
            return dict(_LOST)
        result: dict[str, Any] = json.loads(line)
        return result

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


class LocalWorkers:
    """Worker processes on this machine, each pinned to its own ``threads`` cores
    (started on first use, stopped by :meth:`close`); a batch's jobs go to whichever
    worker is free."""

    def __init__(self, threads: int, workers: int | None = None) -> None:
        self.threads = threads
        self.groups = core_groups(threads, workers)
        self.workers = len(self.groups)
        self._procs = [_Worker(g, threads) for g in self.groups]

    def map(self, jobs: Sequence[Job]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{} for _ in jobs]
        todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for k in range(len(jobs)):
            todo.put(k)

        def drain(worker: _Worker) -> None:
            while True:
                try:
                    k = todo.get_nowait()
                except queue.Empty:
                    return
                out[k] = worker.run(jobs[k])

        threads = [threading.Thread(target=drain, args=(w,)) for w in self._procs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out

    def close(self) -> None:
        for w in self._procs:
            w.close()
