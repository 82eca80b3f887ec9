"""The process's thread policy (issue 13): how the budget is split between the graph
executor, oneDNN's OpenMP pool and NumPy's BLAS, where the budget comes from, and that the
BLAS count really reaches the BLAS libraries."""

import os
import threading
import time

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

import relaykit as tvm  # noqa: E402
from relaykit import relay  # noqa: E402
from relaykit.contrib import graph_executor  # noqa: E402
from relaykit.errors import RelayKitError  # noqa: E402
from relaykit.runtime import threads  # noqa: E402
from relaykit.runtime.threads import ThreadBudget, ThreadPolicy, split  # noqa: E402


class Recorder:
    """A BLAS control that records what it was told."""

    available = True

    def __init__(self):
        self.calls = []

    def set(self, n):
        self.calls.append(n)


@pytest.fixture
def global_policy(monkeypatch):
    """The process's policy, reset before and restored after (OpenMP state and BLAS too:
    later tests in this process must see the state they would have seen)."""
    monkeypatch.delenv(threads.ENV_VAR, raising=False)
    policy = threads.get_policy()
    state = policy.snapshot()
    policy.reset()
    yield policy
    monkeypatch.undo()
    policy.restore(state)


@pytest.mark.parametrize(
    "total, openmp, workers, want",
    [
        (1, False, 1, ThreadBudget(1, 1, 1, 1)),
        (2, False, 1, ThreadBudget(2, 1, 2, 1)),
        (2, True, 1, ThreadBudget(2, 1, 2, 1)),
        (8, True, 2, ThreadBudget(8, 2, 4, 1)),
        (8, False, 3, ThreadBudget(8, 3, 2, 1)),
        (2, False, 5, ThreadBudget(2, 2, 1, 1)),  # no more workers than threads
    ],
)
def test_split(total, openmp, workers, want):
    got = split(total, executor_workers=workers)
    assert got == want
    # never more busy threads than the budget: workers x (OpenMP or BLAS pool per worker)
    assert got.executor * max(got.openmp if openmp else 0, got.blas) <= total


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True, None])
def test_split_rejects_bad_budgets(bad):
    with pytest.raises(RelayKitError, match="positive integer"):
        split(bad)


def test_split_openmp_active_is_deprecated_and_ignored():
    with pytest.warns(DeprecationWarning, match="openmp_active"):
        got = split(4, openmp_active=True)
    assert got == split(4)


def test_budget_from_env_then_explicit(monkeypatch):
    p = ThreadPolicy(Recorder())
    monkeypatch.setenv(threads.ENV_VAR, "3")
    assert p.total == 3
    p.set_num_threads(5)
    assert p.total == 5  # explicit wins over the environment
    p.set_num_threads(None)
    assert p.total == 3
    monkeypatch.setenv(threads.ENV_VAR, "lots")
    with pytest.raises(RelayKitError, match=threads.ENV_VAR):
        _ = p.total
    monkeypatch.delenv(threads.ENV_VAR)
    assert p.total == threads.available_cores()


def test_blas_stays_single_threaded_and_openmp_takes_the_share():
    rec = Recorder()
    p = ThreadPolicy(rec)
    p.set_num_threads(4)
    assert rec.calls == [1]  # host kernels split GEMMs themselves: BLAS on one thread
    p.ensure_applied()
    assert rec.calls == [1]  # nothing changed: nothing set
    assert p.openmp_threads() == 4
    assert p.openmp_active
    assert rec.calls == [1]
    assert p.openmp_threads(2) == 2  # a region's own request wins


def test_executor_workers_share_the_budget():
    rec = Recorder()
    p = ThreadPolicy(rec)
    p.set_num_threads(6)
    budget = p.executor_threads(3)
    assert (budget.executor, budget.openmp, budget.blas) == (3, 2, 1)
    assert p.host_threads() == 2
    assert p.openmp_threads() == 2
    assert rec.calls[-1] == 1
    with pytest.raises(RelayKitError, match="executor workers"):
        p.executor_threads(0)


def test_blas_control_reaches_the_loaded_blas(global_policy):
    if not any(i["user_api"] == "blas" for i in threadpoolctl.threadpool_info()):
        pytest.skip("no BLAS library loaded")
    with threadpoolctl.threadpool_limits(2, user_api="blas"):  # someone changed it
        global_policy.set_num_threads(2)
        counts = [
            i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"
        ]
        assert counts and all(c == 1 for c in counts)


def test_pass_context_option_sets_the_budget(global_policy):
    x = relay.var("x", shape=(2, 3))
    w = relay.const(np.ones((4, 3), "float32"))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.dense(x, w)))
    with tvm.transform.PassContext(opt_level=3, config={threads.CONFIG_KEY: 1}):
        lib = relay.build(mod, target="llvm")
    assert global_policy.total == 1
    assert global_policy.blas_threads() == 1
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", np.ones((2, 3), "float32"))
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), np.full((2, 4), 3.0))
    with (
        pytest.raises(RelayKitError, match="relay.num_threads"),
        tvm.transform.PassContext(config={threads.CONFIG_KEY: 0}),
    ):
        relay.build(mod, target="llvm")


def test_dnnl_regions_take_their_share(global_policy, monkeypatch):
    dnnl = pytest.importorskip("relaykit.backends.dnnl")
    monkeypatch.setenv(threads.ENV_VAR, "3")
    assert dnnl.resolve_num_threads() == 3
    assert global_policy.openmp_active
    with tvm.transform.PassContext(config={threads.CONFIG_KEY: 2}):
        assert dnnl.resolve_num_threads() == 2
        assert dnnl.resolve_num_threads(1) == 1
    with (
        tvm.transform.PassContext(config={threads.CONFIG_KEY: "two"}),
        pytest.raises(RelayKitError, match="relay.num_threads"),
    ):
        dnnl.resolve_num_threads()


def test_docs_example_runs(tmp_path):
    """The python block of docs/threads.md runs, in a fresh interpreter."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "threads.md"
    (code,) = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != threads.ENV_VAR}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "ThreadBudget(total=2, executor=1, openmp=2, blas=1)" in proc.stdout


def test_host_kernels_split_over_the_share_when_blas_can_be_held_at_one(monkeypatch):
    monkeypatch.delenv(threads.ENV_VAR, raising=False)
    p = ThreadPolicy(Recorder())
    p.set_num_threads(4)
    assert p.host_threads() == 4
    p.openmp_threads()
    assert p.host_threads() == 4  # OpenMP waits passively: host workers may run beside it
    p.executor_threads(2)
    assert p.host_threads() == 2
    blind = Recorder()
    blind.available = False  # no threadpoolctl: BLAS keeps its own (spinning) threads
    q = ThreadPolicy(blind)
    q.set_num_threads(4)
    assert q.host_threads() == 1


def test_run_parallel_runs_every_task_once_and_takes_over_a_late_worker():
    p = ThreadPolicy(Recorder())
    p.set_num_threads(2)
    ran: list[tuple[int, str]] = []
    lock = threading.Lock()

    def task(i):
        def run():
            if i == 1 and threading.current_thread() is not threading.main_thread():
                time.sleep(0.05)  # a slow worker
            with lock:
                ran.append((i, threading.current_thread().name))

        return run

    p.run_parallel([task(i) for i in range(9)])
    assert sorted(i for i, _ in ran) == list(range(9))
    main = threading.main_thread().name
    assert sum(name == main for _, name in ran) >= 1


def test_run_parallel_raises_a_task_error_after_the_others_finish():
    p = ThreadPolicy(Recorder())
    p.set_num_threads(2)
    done: list[int] = []

    def ok(i):
        return lambda: done.append(i)

    def bad():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        p.run_parallel([ok(0), bad, ok(2), ok(3)])
    assert sorted(done) == [0, 2, 3]
