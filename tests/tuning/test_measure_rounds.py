"""Whole modules timed together in interleaved rounds: a module's one-time costs and a
single slow burst never decide its time. Calls advance a fake clock, so the times are
exact and nothing depends on the machine's load."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from relaykit.tuning.measure import CONFIRM_ROUNDS, HOPELESS, time_runs


class FakeModule:
    """A module whose calls cost ``steady`` seconds of fake time, except the first
    ``slow_calls``, which cost ``slow`` (first-call costs: primitives built, weights
    reordered, a serial twin built, pools started)."""

    def __init__(self, clock: list[float], steady: float, slow: float = 0.0, slow_calls: int = 0):
        self.clock, self.steady, self.slow, self.slow_calls = clock, steady, slow, slow_calls
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        self.clock[0] += self.slow if self.calls <= self.slow_calls else self.steady


def _timed(mods: dict[int, FakeModule], clock: list[float], **kw: float) -> dict[int, float | str]:
    now: Callable[[], float] = lambda: clock[0]  # noqa: E731
    return time_runs(mods, clock=now, budget=kw.get("budget", 0.1), rounds=int(kw.get("rounds", 6)))


def test_first_calls_costs_are_not_the_modules_time() -> None:
    # the case: dnnl's early calls 50x slow, the placement's module fast from the
    # start; dnnl's time must be its steady 2.9 ms, not a one-time 161 ms
    clock = [0.0]
    mods = {
        0: FakeModule(clock, 0.0029, slow=0.161, slow_calls=4),
        1: FakeModule(clock, 0.00137),
    }
    got = _timed(mods, clock)
    assert got[0] == pytest.approx(0.0029)
    assert got[1] == pytest.approx(0.00137)


def test_one_slow_burst_does_not_leave_a_module_out() -> None:
    # slow through its first two rounds (a moment of load elsewhere), then steady
    clock = [0.0]
    fast = FakeModule(clock, 0.001)
    noisy = FakeModule(clock, 0.0012, slow=0.05, slow_calls=8)
    got = _timed({0: fast, 1: noisy}, clock)
    assert got[1] == pytest.approx(0.0012)


def test_a_hopeless_module_stops_being_timed_once_confirmed() -> None:
    clock = [0.0]
    fast = FakeModule(clock, 0.001)
    slow = FakeModule(clock, 0.5)
    got = _timed({0: fast, 1: slow}, clock, rounds=6)
    assert got[1] == pytest.approx(0.5) and got[1] > HOPELESS * got[0]
    # warm-up, then CONFIRM_ROUNDS bursts of an untimed call and two timed ones
    assert slow.calls <= 2 + 3 * CONFIRM_ROUNDS
    assert fast.calls > slow.calls


def test_a_module_that_raises_answers_its_error() -> None:
    clock = [0.0]

    def broken() -> None:
        raise RuntimeError("no kernel")

    got = time_runs({0: FakeModule(clock, 0.001), 1: broken}, clock=lambda: clock[0], rounds=2)
    assert got[1] == "RuntimeError: no kernel"
    assert got[0] == pytest.approx(0.001)
