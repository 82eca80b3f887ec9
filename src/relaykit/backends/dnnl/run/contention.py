"""Running a region on one thread while other processes hold the cores.

oneDNN's OpenMP kernels (and relaykit's own, in the region runtime) split every
step's work statically across the team, so when another process takes one of
the cores each step waits at its join for the descheduled worker: with one busy
process on the 2-core test machine, SqueezeNet's and MobileNetV2's regions at 2
threads took 31-34 ms a call, against 2.2 ms on one thread and onnxruntime's
8 ms (its pool lets the calling thread take the blocks a late worker has not
started). A region bound for an executor therefore watches its own calls
(:class:`Adaptive`):

- In parallel mode it measures each call's wall time and the process's CPU
  time. Threads that run (or spin at a join) burn CPU; a descheduled worker does
  not, and the thread waiting for it soon sleeps. So when two calls in a row
  used less than 60% of ``threads`` x wall time, the cores were not there: the
  region tries its serial twin, the same program built for one thread
  (:meth:`.region.DnnlRegion.serial_twin`, made on first need; oneDNN's
  primitives must run with the thread count they were built for -- run with
  fewer, its matmul computed only part of its output).
- It keeps the twin while the twin is faster than the parallel calls were; a
  probe of the parallel build every ``interval`` calls (8 to 128, doubling while
  the probes lose) switches back when the cores are free again. A serial trial
  that loses at once goes back too, and waits as long before the next trial.

On a quiet machine the threads run or spin, the CPU time stays near
``threads`` x wall, and nothing changes: no twin is built.

It is off unless ``RELAYKIT_DNNL_ADAPTIVE=1`` (or ``bind(..., adaptive=True)``):
the process's CPU clock adds other threads' time only at scheduler ticks (4 ms),
so a single call of a few milliseconds reads 0.5 or 1.25 of its true use, and on
a quiet machine whose speed drifted (another virtual machine on the host) the
trials misfired: SqueezeNet's median went to 1.8x onnxruntime in
``benchmarks/dnnl_vs_ort.py``. With one busy process it turns 4-19x into
0.6-0.7x onnxruntime (docs/dnnl.md). A sturdier signal (CPU time over a window
of calls, or the worker threads' own clocks) would let it default on.

>>> a = Adaptive(threads=2)
>>> for _ in range(3):   # 10 ms calls using 5 ms of CPU: a worker was not running
...     a.run(lambda: None, lambda: None, (0.010, 0.005))
>>> a.serial
True
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["Adaptive", "ADAPTIVE_ENV", "LOW_USE", "FIRST_PROBE", "LAST_PROBE"]

#: Set to 1 to let executors' regions switch to their serial twin under contention.
ADAPTIVE_ENV = "RELAYKIT_DNNL_ADAPTIVE"

#: A parallel call whose CPU time is below this share of threads x wall time had
#: threads that did not run.
LOW_USE = 0.6
#: Calls between probes of the other mode: first and largest interval.
FIRST_PROBE = 8
LAST_PROBE = 128
#: Calls shorter than this are too short to judge (a wake-up dominates them).
MIN_CALL = 1e-4


def _mean(old: float | None, new: float) -> float:
    return new if old is None else 0.75 * old + 0.25 * new


class Adaptive:
    """Serial or parallel runs of one bound region (see the module docstring);
    ``threads`` is the parallel build's OpenMP thread count."""

    __slots__ = ("_countdown", "_interval", "_low", "_parallel_time", "_serial_time",
                 "_threads", "_trial", "serial")  # fmt: skip

    def __init__(self, threads: int) -> None:
        self._threads = threads
        self._parallel_time: float | None = None  # running means of call times (s)
        self._serial_time: float | None = None
        self._low = 0  # parallel calls in a row with low CPU use
        self._interval = FIRST_PROBE
        self._countdown = 0  # serial: calls before the next parallel probe; parallel: cooldown
        self._trial = 0  # serial calls left before the first comparison
        #: Whether calls run on the serial twin now.
        self.serial = False

    def run(
        self,
        parallel: Callable[[], None],
        serial: Callable[[], None],
        fake: tuple[float, float] | None = None,
    ) -> None:
        """Run ``parallel`` or ``serial`` (the mode chosen) and learn from its wall and
        CPU time (``fake``: given (wall, cpu) seconds instead, for tests)."""
        in_serial = self.serial and self._countdown > 0
        c = time.process_time()
        t = time.perf_counter()
        (serial if in_serial else parallel)()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        if fake is not None:
            wall, cpu = fake
        if in_serial:
            self._serial_done(wall)
        elif self.serial:
            self._probe_done(wall)
        else:
            self._parallel_done(wall, cpu)

    def _parallel_done(self, wall: float, cpu: float) -> None:
        self._parallel_time = _mean(self._parallel_time, wall)
        if self._countdown > 0:  # cooling down after a lost serial trial
            self._countdown -= 1
            return
        low = wall > MIN_CALL and cpu < LOW_USE * self._threads * wall
        self._low = self._low + 1 if low else 0
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
