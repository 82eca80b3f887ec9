"""Running a region on one thread while other processes hold the cores.

oneDNN's OpenMP kernels (and relaykit's own, in the region runtime) split every
step's work statically across the team, so when another process takes one of
the cores each step waits at its join for the descheduled worker: with one busy
process on the 2-core test machine, SqueezeNet's and MobileNetV2's regions at 2
threads took 31-34 ms a call, against 2.2 ms on one thread and onnxruntime's
8 ms (its pool lets the calling thread take the blocks a late worker has not
started). A region bound for an executor therefore watches its own calls
(:class:`Adaptive`):

- In parallel mode it keeps its best call time. When two calls in a row take
  more than 1.25x what one thread is expected to take (the serial time seen so
  far, else the best parallel time times the thread count), it switches to
  serial mode.
- In serial mode each call runs the region's serial twin: the same program
  built for one thread (:meth:`.region.DnnlRegion.serial_twin`, made on the
  first switch; oneDNN's primitives must run with the thread count they were
  built for -- run with fewer, its matmul computed only part of its output). Every
  ``interval`` calls one call probes the parallel build again; if it beats the
  serial time the region goes back, else the interval doubles (8 to 128 calls).

On a quiet machine a parallel call never takes 2.5x its best, so nothing
changes there, and no twin is built.

>>> a = Adaptive(threads=2)
>>> for dt in (1.0, 1.0, 9.0, 9.0):   # two calls 9x the best: switch
...     a.run(lambda: None, lambda: None, dt)
>>> a.serial
True
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["Adaptive", "SLOW", "FIRST_PROBE", "LAST_PROBE"]

#: A parallel call slower than this many times the expected serial time counts as slow.
SLOW = 1.25
#: Calls in serial mode between probes of the parallel mode: first and largest interval.
FIRST_PROBE = 8
LAST_PROBE = 128


class Adaptive:
    """Serial or parallel runs of one bound region (see the module docstring);
    ``threads`` is the parallel build's OpenMP thread count."""

    __slots__ = ("_best", "_countdown", "_interval", "_serial_time", "_slow", "_threads",
                 "serial")  # fmt: skip

    def __init__(self, threads: int) -> None:
        self._threads = threads
        self._best = float("inf")  # best parallel call (s)
        self._serial_time: float | None = None  # running mean of serial calls (s)
        self._slow = 0
        self._interval = FIRST_PROBE
        self._countdown = 0
        #: Whether calls run serially now.
        self.serial = False

    def run(
        self,
        parallel: Callable[[], None],
        serial: Callable[[], None],
        fake_seconds: float | None = None,
    ) -> None:
        """Run ``parallel`` or ``serial`` (the mode chosen) and learn from its time
        (``fake_seconds`` replaces the measured time: for tests)."""
        in_serial = self.serial and self._countdown > 0
        if in_serial:
            self._countdown -= 1
        t = time.perf_counter()
        (serial if in_serial else parallel)()
        dt = time.perf_counter() - t
        self._learn(in_serial, dt if fake_seconds is None else fake_seconds)

    def _learn(self, serial: bool, dt: float) -> None:
        if serial:
            st = self._serial_time
            self._serial_time = dt if st is None else 0.75 * st + 0.25 * dt
            return
        if self.serial:  # a probe of the parallel mode
            st = self._serial_time
            if st is not None and dt < st:
                self.serial = False
                self._interval = FIRST_PROBE
                self._best = min(self._best, dt)
            else:
                self._interval = min(2 * self._interval, LAST_PROBE)
                self._countdown = self._interval
            return
        self._best = min(self._best, dt)
        expected = self._serial_time if self._serial_time is not None else (
            self._best * self._threads
        )  # fmt: skip
        if dt > SLOW * expected:
            self._slow += 1
            if self._slow >= 2:
                self.serial = True
                self._slow = 0
                self._countdown = self._interval
        else:
            self._slow = 0
