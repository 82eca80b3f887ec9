"""PassContext and Target are context-local: threads building at once each see their own.

Each thread's ``with`` blocks are held open across a barrier, and a pass instrument
makes the threads meet again in the middle of their builds, so the contexts overlap
for real.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.instrument import pass_instrument
from relaykit.target import Target
from relaykit.transform.pass_infra import PassContext

TIMEOUT = 60


def _model(n: int) -> tvm.IRModule:
    """``x + c * 2`` with a constant ``c`` of ``n`` elements: FoldConstant makes ``c * 2``
    one parameter and leaves a single ``add``."""
    x = relay.var("x", shape=(n,), dtype="float32")
    c = relay.const(np.arange(n, dtype="float32"))
    y = relay.add(x, relay.multiply(c, relay.const(np.float32(2))))
    return tvm.IRModule.from_expr(relay.Function([x], y))


@pass_instrument
class _Meet:
    """Logs the passes that run, with the PassContext and Target each pass sees, and
    waits at ``barrier`` before the first one (so every thread is mid-build at once)."""

    def __init__(self, barrier: threading.Barrier) -> None:
        self.barrier = barrier
        self.names: list[str] = []
        self.seen: list[tuple[PassContext, Target | None]] = []

    def run_before_pass(self, mod: Any, info: Any) -> None:
        if not self.names:
            self.barrier.wait(TIMEOUT)
        self.names.append(info.name)
        self.seen.append((PassContext.current(), Target.current()))


def _run_threads(jobs: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Run each job on its own thread; their results (an exception is re-raised)."""
    results: dict[str, Any] = {}

    def run(name: str, job: Callable[[], Any]) -> None:
        try:
            results[name] = job()
        except BaseException as err:  # re-raised on the main thread
            results[name] = err

    threads = [threading.Thread(target=run, args=item) for item in jobs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    for value in results.values():
        if isinstance(value, BaseException):
            raise value
    return results


def test_threads_building_at_once_each_get_their_own_pass_context_and_target():
    meet = threading.Barrier(3)
    inside = threading.Barrier(3)
    setups = {
        # folds c * 2; opt_level 3 runs FoldScaleAxis
        "fold": (dict(opt_level=3), "llvm", 4),
        # FoldConstant disabled by name, opt_level 2
        "disabled": (dict(opt_level=2, disabled_pass=["FoldConstant"]), "c", 6),
        # FoldConstant runs but its config keeps every constant
        "config": (dict(opt_level=3, config={"relay.FoldConstant.max_bytes": 0}), "cpu", 8),
    }

    def job(options: dict[str, Any], target: str, n: int) -> dict[str, Any]:
        log = _Meet(meet)
        with PassContext(instruments=[log], **options) as ctx, Target(target) as tgt:
            inside.wait(TIMEOUT)  # every thread is inside its own with-blocks
            lib = relay.build(_model(n))
            inside.wait(TIMEOUT)  # ... and still is after every build finished
            assert PassContext.current() is ctx and Target.current() is tgt
        assert PassContext.current() is not ctx and Target.current() is None
        ops = [node.name for node in lib.plan.nodes if node.kind == "op"]
        return {"ctx": ctx, "target": tgt, "log": log, "lib": lib, "ops": ops}

    got = _run_threads({name: (lambda s=s: job(*s)) for name, s in setups.items()})

    for name, out in got.items():
        assert all(c is out["ctx"] and t is out["target"] for c, t in out["log"].seen), name
    assert got["fold"]["ops"] == ["add"]
    assert got["disabled"]["ops"] == ["multiply", "add"]
    assert got["config"]["ops"] == ["multiply", "add"]
    assert len(got["fold"]["lib"].params) == 1 and len(got["config"]["lib"].params) == 2
    assert "FoldConstant" in got["fold"]["log"].names
    assert "FoldConstant" not in got["disabled"]["log"].names
    assert "FoldConstant" in got["config"]["log"].names
    assert "FoldScaleAxis" in got["fold"]["log"].names
    assert "FoldScaleAxis" not in got["disabled"]["log"].names
    assert [got[k]["lib"].target for k in ("fold", "disabled", "config")] == ["llvm", "c", "llvm"]
    for name, (_, _, n) in setups.items():
        x = np.ones(n, dtype="float32")
        module = got[name]["lib"]["default"](tvm.cpu())
        module.set_input("x", x)
        module.run()
        np.testing.assert_allclose(module.get_output(0).numpy(), x + 2 * np.arange(n))


def test_a_thread_started_inside_a_with_block_sees_the_defaults():
    default = PassContext.current()
    with PassContext(opt_level=3, disabled_pass=["FoldConstant"]), Target("c"):
        seen = _run_threads({"new": lambda: (PassContext.current(), Target.current())})["new"]
        assert PassContext.current().opt_level == 3
    assert seen == (default, None)
    assert seen[0].opt_level == 2 and seen[0].disabled_pass == ()


def test_a_with_block_in_one_thread_is_not_seen_by_another():
    entered, checked = threading.Event(), threading.Event()

    def hold() -> None:
        with PassContext(opt_level=0), Target("c"):
            entered.set()
            checked.wait(TIMEOUT)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert entered.wait(TIMEOUT)
        assert PassContext.current().opt_level == 2 and Target.current() is None
    finally:
        checked.set()
        t.join(TIMEOUT)


def test_with_blocks_nest_and_unwind_on_exceptions():
    outer, inner = PassContext(opt_level=1), PassContext(opt_level=3)
    llvm, c = Target("llvm"), Target("c")
    with outer, llvm:
        with pytest.raises(KeyError), inner, c:
            assert PassContext.current() is inner and Target.current() is c
            raise KeyError("inside")
        assert PassContext.current() is outer and Target.current() is llvm
        with outer:  # entering one context again nests it
            assert PassContext.current() is outer
        assert PassContext.current() is outer
    assert PassContext.current().opt_level == 2 and Target.current() is None


def test_a_failing_instrument_leaves_no_context_entered():
    @pass_instrument
    class Refuse:
        def enter_pass_ctx(self) -> None:
            raise RuntimeError("refused")

    with pytest.raises(RuntimeError, match="refused"), PassContext(instruments=[Refuse()]):
        pass  # pragma: no cover - never entered
    assert not PassContext.is_entered()


def test_one_context_entered_by_two_threads_at_once():
    shared = PassContext(opt_level=3)
    both = threading.Barrier(2)

    def use() -> bool:
        with shared:
            both.wait(TIMEOUT)
            inside = PassContext.current() is shared
            both.wait(TIMEOUT)
        return inside and not PassContext.is_entered()

    assert _run_threads({"a": use, "b": use}) == {"a": True, "b": True}


def test_asyncio_tasks_and_copied_contexts_follow_contextvars():
    async def in_task(level: int, started: asyncio.Event, other: asyncio.Event) -> int:
        with PassContext(opt_level=level):
            started.set()
            await other.wait()  # the other task enters its own context meanwhile
            return PassContext.current().opt_level

    async def main() -> list[int]:
        a, b = asyncio.Event(), asyncio.Event()
        return list(await asyncio.gather(in_task(0, a, b), in_task(3, b, a)))

    assert asyncio.run(main()) == [0, 3]
    with PassContext(opt_level=1) as ctx:
        copied = contextvars.copy_context()
    assert copied.run(PassContext.current) is ctx  # handed over explicitly
    assert PassContext.current() is not ctx
