"""The busy-machine signal: run-queue wait over windows of calls, counted only while other
processes use the cores, judged on fake clocks (deterministic); default-on and the off
switch; the real clocks' readings."""

from __future__ import annotations

import threading
import time

import pytest

from relaykit.runtime.contention import (
    BUSY_SHARE,
    MACHINE_STALE,
    MACHINE_WINDOW,
    OTHERS_BUSY,
    WINDOW,
    ContentionMonitor,
    ContentionStats,
    MachineLoad,
    adaptive_enabled,
    machine_clock,
    schedstat_clock,
)


class _Clocks:
    """A wall clock, the thread's (CPU, wait) clock and the machine's (busy, own) clock
    the test moves by hand; ``others`` cores' worth of CPU go to other processes."""

    def __init__(self, others: float | None = 1.0) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self.wait = 0.0
        self.others = others
        self.busy = 0.0
        self.own = 0.0

    def step(self, wall: float, cpu: float, wait: float) -> None:
        self.wall += wall
        self.cpu += cpu
        self.wait += wait
        self.own += cpu
        self.busy += cpu + (self.others or 0.0) * wall

    def machine(self) -> tuple[float, float] | None:
        return None if self.others is None else (self.busy, self.own)

    def monitor(self) -> ContentionMonitor:
        load = MachineLoad(clock=self.machine, now=lambda: self.wall)
        return ContentionMonitor(
            clock=lambda: (self.cpu, self.wait), now=lambda: self.wall, machine=load
        )


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
    for _ in range(100):  # a third of the time runnable but not running
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
    c.step(2 * MACHINE_WINDOW, 0.0, 0.0)  # a pause: the machine's window closes
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
    c.step(2 * MACHINE_WINDOW, 0.0, 0.0)  # the machine's window closes
    m.tick()
    c.step(WINDOW, WINDOW * (1 - BUSY_SHARE), WINDOW * BUSY_SHARE)
    assert m.tick()
    c.step(WINDOW, WINDOW * 0.93, WINDOW * 0.07)  # between quiet and busy: stays busy
    assert m.tick()


def test_waiting_behind_this_process_s_own_threads_is_not_contention():
    # another engine's pool in this process spins after its work: the thread waits,
    # but no other process uses the cores, and giving up threads would only slow it
    c = _Clocks(others=0.0)
    m = c.monitor()
    m.tick()
    for _ in range(300):
        c.step(3e-3, 2e-3, 1e-3)
        assert not m.tick()
    assert m.stats.windows > 10 and m.stats.busy_windows == 0
    assert m.machine.others == pytest.approx(0.0, abs=1e-9)


def test_busy_ends_when_the_other_processes_stop_even_if_the_thread_still_waits():
    c = _Clocks(others=1.0)
    m = c.monitor()
    m.tick()
    for _ in range(200):
        c.step(3e-3, 2e-3, 1e-3)
        m.tick()
    assert m.busy
    c.others = 0.0
    for _ in range(300):  # still waiting a little (between the thresholds), alone
        c.step(3e-3, 2.8e-3, 0.2e-3)
        m.tick()
    assert not m.busy


def test_without_a_machine_clock_the_wait_alone_decides():
    c = _Clocks(others=None)
    m = c.monitor()
    m.tick()
    for _ in range(30):
        c.step(3e-3, 2e-3, 1e-3)
        m.tick()
    assert m.busy and m.machine.others is None


def test_machine_load_measures_other_processes_cores():
    c = _Clocks(others=0.7)
    load = MachineLoad(clock=c.machine, now=lambda: c.wall)
    load.sample()
    c.step(0.1, 0.2, 0.0)  # too short a window: nothing measured yet
    load.sample()
    assert load.others is None
    c.step(0.2, 0.3, 0.0)
    load.sample()
    assert load.others == pytest.approx(0.7)
    assert load.others >= OTHERS_BUSY


def test_the_real_machine_clock_counts_this_process():
    first = machine_clock()
    if first is None:
        pytest.skip("no /proc/stat on this system")
    t = time.thread_time()
    while time.thread_time() - t < 0.1:  # burn 100 ms, i.e. 10 ticks at least
        pass
    later = machine_clock()
    assert later is not None
    busy, own = later[0] - first[0], later[1] - first[1]
    assert own >= 0.05 and busy >= own - 0.03  # the cores' busy time includes ours


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


def test_a_pause_tells_nothing_about_the_load_now():
    # a tuning worker idles while its driver works (another process on the cores), then
    # its first calls must not read that past work as the machine's load now
    c = _Clocks(others=1.0)
    load = MachineLoad(clock=c.machine, now=lambda: c.wall)
    load.sample()
    c.step(MACHINE_STALE + 4.0, 0.0, 0.0)  # a pause; the driver used a core throughout
    load.sample()
    assert load.others is None
    c.others = 0.0  # the driver now waits for the worker's answer
    c.step(MACHINE_WINDOW, MACHINE_WINDOW, 0.0)
    load.sample()
    assert load.others == pytest.approx(0.0)


def test_a_pause_does_not_turn_a_waiting_thread_busy():
    c = _Clocks(others=1.0)
    m = c.monitor()
    m.tick()
    c.step(5.0, 0.0, 0.0)  # idle between jobs while another process ran
    m.tick()
    c.others = 0.0
    for _ in range(4):  # the first window after it: the thread waited behind its own pools
        c.step(WINDOW / 2, WINDOW / 4, WINDOW / 8)
        m.tick()
    assert not m.busy
