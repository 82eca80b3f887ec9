"""Running a region on one thread while other processes hold the cores.

oneDNN's OpenMP kernels (and relaykit's own, in the region runtime) split every
step's work statically across the team, so when another process takes one of
the cores each step waits at its join for the descheduled worker: with one busy
process on the 2-core test machine, SqueezeNet's and MobileNetV2's regions at 2
threads took 31-34 ms a call, against 2.2 ms on one thread and onnxruntime's
8 ms (its pool lets the calling thread take the blocks a late worker has not
started). A region bound for an executor therefore watches the machine (:class:`Adaptive`):

- In parallel mode it asks the process's contention monitor
  (:class:`relaykit.runtime.contention.ContentionMonitor`) after each call: the calling
  thread's wait on the kernel's run queue, over windows of at least 50 ms. That
  clock is per thread and exact, and a thread that sleeps or spins at a join does
  not wait there, so on a quiet machine it reads near 0 whatever the region does
  (the process CPU clock, the signal before, adds other threads' time only at
  scheduler ticks and misfired on a quiet machine whose speed drifted). When two
  calls in a row find the machine busy (the thread waited 10% or more of the time
  it wanted a core), the region tries its serial twin, the same program built for
  one thread (:meth:`.region.DnnlRegion.serial_twin`, made on first need; oneDNN's
  primitives must run with the thread count they were built for -- run with
  fewer, its matmul computed only part of its output).
- It keeps the twin while the twin is faster than the parallel calls were; a
  probe of the parallel build every ``interval`` calls (8 to 128, doubling while
  the probes lose) switches back when the cores are free again. A serial trial
  that loses at once goes back too, and waits as long before the next trial.

On a quiet machine nothing waits for a core and nothing changes: no twin is built.
Even a misjudged window costs two serial calls, then the slower mode is left.

It is on by default; ``RELAYKIT_DNNL_ADAPTIVE=0`` (or ``bind(..., adaptive=False)``)
turns it off. The counts of calls and serial calls go to the monitor's
:class:`~relaykit.runtime.contention.ContentionStats`, which ``relaykit bench`` prints.

>>> a = Adaptive(threads=2)
>>> for _ in range(3):   # 10 ms calls on a machine whose cores are busy
...     a.observe(0.010, busy=True)
>>> a.serial
True
"""

from __future__ import annotations

import time
from collections.abc import Callable

from relaykit.runtime.contention import (
    ADAPTIVE_ENV,
    ContentionMonitor,
    adaptive_enabled,
    get_monitor,
)

__all__ = ["Adaptive", "ADAPTIVE_ENV", "FIRST_PROBE", "LAST_PROBE", "adaptive_enabled"]

#: Calls between probes of the other mode: first and largest interval.
FIRST_PROBE = 8
LAST_PROBE = 128
#: Calls shorter than this are too short to judge (a wake-up dominates them).
MIN_CALL = 1e-4


def _mean(old: float | None, new: float) -> float:
    return new if old is None else 0.75 * old + 0.25 * new


class Adaptive:
    """Serial or parallel runs of one bound region (see the module docstring);
    ``threads`` is the parallel build's OpenMP thread count, ``monitor`` the
    contention monitor asked (default: the process's)."""

    __slots__ = ("_countdown", "_interval", "_low", "_monitor", "_parallel_time",
                 "_serial_time", "_threads", "_trial", "serial")  # fmt: skip

    def __init__(self, threads: int, monitor: ContentionMonitor | None = None) -> None:
        self._threads = threads
        self._monitor = monitor if monitor is not None else get_monitor()
        self._parallel_time: float | None = None  # running means of call times (s)
        self._serial_time: float | None = None
        self._low = 0  # parallel calls in a row with low CPU use
        self._interval = FIRST_PROBE
        self._countdown = 0  # serial: calls before the next parallel probe; parallel: cooldown
        self._trial = 0  # serial calls left before the first comparison
        #: Whether calls run on the serial twin now.
        self.serial = False

    def run(self, parallel: Callable[[], None], serial: Callable[[], None]) -> None:
        """Run ``parallel`` or ``serial`` (the mode chosen) and learn from its wall time
        and the monitor's judgement."""
        in_serial = self.serial and self._countdown > 0
        t = time.perf_counter()
        (serial if in_serial else parallel)()
        wall = time.perf_counter() - t
        monitor = self._monitor
        busy = monitor.tick()
        monitor.stats.region_calls += 1
        monitor.stats.serial_calls += in_serial
        self.observe(wall, busy)

    def observe(self, wall: float, busy: bool) -> None:
        """Learn from one call of ``wall`` seconds, in the mode chosen before it, on a
        machine the monitor found ``busy`` (or not); what :meth:`run` does after a call."""
        in_serial = self.serial and self._countdown > 0
        if in_serial:
            self._serial_done(wall)
        elif self.serial:
            self._probe_done(wall)
        else:
            self._parallel_done(wall, busy)

    def _parallel_done(self, wall: float, busy: bool) -> None:
        self._parallel_time = _mean(self._parallel_time, wall)
        if self._countdown > 0:  # cooling down after a lost serial trial
            self._countdown -= 1
            return
        self._low = self._low + 1 if busy and wall > MIN_CALL else 0
        if self._low >= 2:
            self.serial = True
            self._low = 0
            self._trial = 2
            self._serial_time = None
            self._countdown = self._interval

    def _serial_done(self, wall: float) -> None:
        self._countdown -= 1
        self._serial_time = _mean(self._serial_time, wall)
        if self._trial > 0:
            self._trial -= 1
            no_faster = self._parallel_time is not None and self._serial_time >= self._parallel_time
            if self._trial == 0 and no_faster:  # the twin is no faster: back
                self._back_to_parallel(lost=True)

    def _probe_done(self, wall: float) -> None:
        if self._serial_time is not None and wall < self._serial_time:
            self._parallel_time = wall
            self._back_to_parallel(lost=False)
        else:
            self._interval = min(2 * self._interval, LAST_PROBE)
            self._countdown = self._interval

    def _back_to_parallel(self, lost: bool) -> None:
        self.serial = False
        self._low = 0
        if lost:  # wait as long as a serial stint before the next trial
            self._countdown = self._interval
            self._interval = min(2 * self._interval, LAST_PROBE)
        else:
            self._interval = FIRST_PROBE
            self._countdown = 0
