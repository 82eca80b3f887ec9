"""The busy-machine signal: run-queue wait over windows of calls, judged on fake clocks
(deterministic), default-on and the off switch, and the real clock's readings."""

from __future__ import annotations

import threading

import pytest

from relaykit.runtime.threads import (
    BUSY_SHARE,
    WINDOW,
    ContentionMonitor,
    ContentionStats,
    adaptive_enabled,
    schedstat_clock,
)


class _Clocks:
    """A wall clock and a (CPU, wait) clock the test moves by hand."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self.wait = 0.0

    def step(self, wall: float, cpu: float, wait: float) -> None:
        self.wall += wall
        self.cpu += cpu
        self.wait += wait

    def monitor(self) -> ContentionMonitor:
        return ContentionMonitor(clock=lambda: (self.cpu, self.wait), now=lambda: self.wall)


def test_a_quiet_machine_never_reads_busy():
    c = _Clocks()
    m = c.monitor()
    for _ in range(1000):  # 1 ms calls running the whole time, a few microseconds' wait
        c.step(1e-3, 1e-3, 2e-6)
        assert not m.tick()
    assert m.stats.windows >= 1000 * 1e-3 / WINDOW - 2 and m.stats.busy_windows == 0


def test_sleeping_between_calls_is_not_contention():
    c = _Clocks()
    m = c.monitor()
    m.tick()
    for _ in range(20):  # a call, then a long pause: the thread sleeps, waits for nothing
        c.step(2e-3, 2e-3, 0.0)
        m.tick()
        c.step(0.5, 0.0, 0.0)
        assert not m.tick()


def test_waiting_for_a_core_reads_busy_then_quiet_again():
    c = _Clocks()
    m = c.monitor()
    m.tick()
    for _ in range(30):  # a third of the time runnable but not running
        c.step(3e-3, 2e-3, 1e-3)
        m.tick()
    assert m.busy and m.stats.busy_windows >= 1
    for _ in range(30):  # the cores free again
        c.step(3e-3, 3e-3, 0.0)
        m.tick()
    assert not m.busy


def test_a_window_is_judged_once_it_is_long_enough():
    c = _Clocks()
    m = c.monitor()
    m.tick()
    c.step(WINDOW / 2, 0.0, WINDOW / 2)  # all waiting, but too short a window
    assert not m.tick() and m.stats.windows == 0
    c.step(WINDOW / 2, 0.0, WINDOW / 2)
    assert m.tick() and m.stats.windows == 1
    assert m.stats.wait_share == pytest.approx(1.0)


def test_hysteresis_between_the_thresholds():
    c = _Clocks()
    m = c.monitor()
    m.tick()
    c.step(WINDOW, WINDOW * (1 - BUSY_SHARE), WINDOW * BUSY_SHARE)
    assert m.tick()
    c.step(WINDOW, WINDOW * 0.93, WINDOW * 0.07)  # between quiet and busy: stays busy
    assert m.tick()


def test_no_clock_means_never_busy():
    m = ContentionMonitor(clock=lambda: None)
    assert not any(m.tick() for _ in range(5)) and m.stats.windows == 0


def test_each_thread_has_its_own_window():
    c = _Clocks()
    m = c.monitor()
    m.tick()  # this thread's window opens
    seen: list[bool] = []
    t = threading.Thread(target=lambda: seen.append(m.tick()))
    t.start()
    t.join()
    assert seen == [False] and m.stats.windows == 0  # the other thread only opened its own


def test_stats_since_a_snapshot():
    s = ContentionStats(windows=3, region_calls=10, serial_calls=4)
    before = s.copy()
    s.region_calls += 5
    s.serial_calls += 5
    d = s.since(before)
    assert (d.windows, d.region_calls, d.serial_calls) == (0, 5, 5)


@pytest.mark.parametrize(
    ("value", "on"), [(None, True), ("1", True), ("", True), ("0", False), ("off", False)]
)
def test_on_by_default_and_the_off_switch(monkeypatch, value, on):
    if value is None:
        monkeypatch.delenv("RELAYKIT_DNNL_ADAPTIVE", raising=False)
    else:
        monkeypatch.setenv("RELAYKIT_DNNL_ADAPTIVE", value)
    assert adaptive_enabled() is on


def test_the_real_clock_reads_this_thread():
    reading = schedstat_clock()
    if reading is None:
        pytest.skip("no /proc schedstat on this system")
    sum(range(200_000))
    later = schedstat_clock()
    assert later is not None and later[0] > reading[0] and later[1] >= reading[1]
