"""Whether other processes hold the cores: the busy-machine signal the engines adapt to.

Two readings must agree before the machine reads busy:

- **The calling thread waited for a core.** Its wait on the kernel's run queue
  (``/proc/self/task/<tid>/schedstat``: nanoseconds runnable but not running) is
  per thread and exact, unlike the process CPU clock; a thread that sleeps or spins
  does not wait there. :class:`ContentionMonitor` judges it over windows of at least
  :data:`WINDOW` seconds, from the calls that tick it (the graph executor's runs,
  oneDNN regions, the host workers).
- **Other processes used the cores.** A thread also waits behind its own process's
  threads -- another engine's pool spinning after its work, as onnxruntime's does
  for a while -- and giving up threads then only slows the run down. So a wait counts
  only while :class:`MachineLoad` finds other processes (or the hypervisor's steal)
  using at least :data:`OTHERS_BUSY` of a core on the cores this process may run on:
  the kernel's busy time of those cores (``/proc/stat``) less this process's own
  (``/proc/self/stat``), both from the same tick accounting, over windows of at
  least :data:`MACHINE_WINDOW` seconds.

Where the kernel gives no run-queue wait the machine never reads busy; where it
gives no ``/proc/stat`` the wait alone decides. The monitor keeps counts of what the
engines did (:class:`ContentionStats`), which ``relaykit bench`` prints. Contention
handling is on unless ``RELAYKIT_DNNL_ADAPTIVE=0`` (:func:`adaptive_enabled`).

>>> t = [0.0]; cpu_wait = [(0.0, 0.0)]
>>> m = ContentionMonitor(clock=lambda: cpu_wait[0], now=lambda: t[0],
...                       machine=MachineLoad(clock=lambda: None))
>>> m.tick()                                  # opens a window
False
>>> t[0], cpu_wait[0] = 0.06, (0.04, 0.02)     # waited a third of its active time
>>> m.tick()
True
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "ADAPTIVE_ENV",
    "BUSY_SHARE",
    "QUIET_SHARE",
    "WINDOW",
    "OTHERS_BUSY",
    "OTHERS_QUIET",
    "MACHINE_WINDOW",
    "MACHINE_STALE",
    "ContentionMonitor",
    "ContentionStats",
    "MachineLoad",
    "adaptive_enabled",
    "get_monitor",
    "machine_clock",
    "schedstat_clock",
]

#: Environment variable: ``0`` turns contention handling off (it is on by default).
ADAPTIVE_ENV = "RELAYKIT_DNNL_ADAPTIVE"
#: Shortest window over which a thread's run-queue wait is judged (seconds).
WINDOW = 0.05
#: A window where the thread waited for a core more than this share of the time it
#: wanted one (running or waiting) reads busy ...
BUSY_SHARE = 0.10
#: ... and busy ends when a window's share falls below this one.
QUIET_SHARE = 0.04
#: A window in which the thread ran or waited less than this share of its wall time
#: (it slept: a pause between calls) is too thin to judge.
MIN_ACTIVE = 0.2
#: Cores' worth of CPU that other processes must use for a wait to count as contention
#: (one competing busy process uses 0.6-1.0 of a core on a 2-core machine) ...
OTHERS_BUSY = 0.35
#: ... and below which a busy judgement ends even while the thread still waits.
OTHERS_QUIET = 0.15
#: Shortest window over which other processes' CPU use is measured (seconds): the
#: kernel counts CPU time in ticks (10 ms), so shorter windows would be noise.
MACHINE_WINDOW = 0.25
#: A machine window longer than this (seconds: the process made no call for a while)
#: tells what other processes did during the pause, not now -- a tuning worker's idle
#: wait spans its driver's own work --, so it is dropped unmeasured and a new one opened.
MACHINE_STALE = 1.0


def adaptive_enabled() -> bool:
    """Whether contention handling is on: unless ``RELAYKIT_DNNL_ADAPTIVE`` is 0 (or
    ``false``, ``off``, ``no``)."""
    value = os.environ.get(ADAPTIVE_ENV, "").strip().lower()
    return value not in ("0", "false", "off", "no")


_SCHEDSTAT = threading.local()


def schedstat_clock() -> tuple[float, float] | None:
    """The calling thread's (CPU seconds, run-queue wait seconds): its CPU clock and the
    wait from ``/proc/self/task/<tid>/schedstat``; None where the kernel does not give
    the wait. The file is kept open per thread (a read costs about a microsecond)."""
    fd = getattr(_SCHEDSTAT, "fd", None)
    if fd is None:
        try:
            fd = os.open(f"/proc/self/task/{threading.get_native_id()}/schedstat", os.O_RDONLY)
        except (OSError, AttributeError):
            fd = -1
        _SCHEDSTAT.fd = fd
    if fd < 0:
        return None
    try:
        wait = int(os.pread(fd, 128, 0).split()[1]) * 1e-9
    except (OSError, ValueError, IndexError):
        return None
    # the file's CPU time of a running thread lags by up to a scheduler tick; the
    # thread CPU clock is exact
    return time.thread_time(), wait


def _ticks_per_second() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100.0


def _allowed_cpus() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def machine_clock() -> tuple[float, float] | None:
    """(Busy CPU seconds of the cores this process may run on -- user, nice, system,
    interrupts and the hypervisor's steal --, this process's CPU seconds), both from
    the kernel's tick accounting, so that the growth of their difference is other
    processes' use; None where ``/proc`` does not give them."""
    try:
        with open("/proc/stat", "rb") as f:
            stat = f.read()
        with open("/proc/self/stat", "rb") as f:
            own = f.read()
    except OSError:
        return None
    allowed = _allowed_cpus()
    busy = 0
    seen = False
    for line in stat.splitlines():
        if not line.startswith(b"cpu") or line[3:4] == b" ":
            continue  # the first "cpu" line sums every core, this process may not use all
        fields = line.split()
        try:
            cpu = int(fields[0][3:])
            if allowed is not None and cpu not in allowed:
                continue
            # user nice system idle iowait irq softirq steal ...
            busy += sum(int(fields[i]) for i in (1, 2, 3, 6, 7, 8) if i < len(fields))
            seen = True
        except (ValueError, IndexError):
            return None
    try:
        rest = own[own.rindex(b")") + 2 :].split()  # after "pid (comm) "
        mine = int(rest[11]) + int(rest[12])  # utime, stime: fields 14 and 15
    except (ValueError, IndexError):
        return None
    if not seen:
        return None
    hz = _ticks_per_second()
    return busy / hz, mine / hz


class MachineLoad:
    """Cores' worth of CPU used by other processes over the last window of at least
    :data:`MACHINE_WINDOW` seconds; :meth:`sample` advances it (cheap to call often),
    :attr:`others` is the last measurement (None before the first, after a window
    longer than :data:`MACHINE_STALE`, or without ``/proc``). ``clock`` gives (busy
    seconds, own seconds) as :func:`machine_clock` does, ``now`` the wall clock: tests
    pass fakes.

    >>> t = [0.0]; clocks = [(10.0, 4.0)]
    >>> load = MachineLoad(clock=lambda: clocks[0], now=lambda: t[0])
    >>> load.sample()          # opens a window
    >>> t[0], clocks[0] = 0.5, (10.8, 4.3)   # 0.8 s busy, 0.3 s of it this process's
    >>> load.sample(); round(load.others, 2)
    1.0
    """

    def __init__(
        self,
        clock: Callable[[], tuple[float, float] | None] | None = None,
        now: Callable[[], float] = time.perf_counter,
        window: float = MACHINE_WINDOW,
        stale: float = MACHINE_STALE,
    ) -> None:
        self._clock = clock if clock is not None else machine_clock
        self._now = now
        self._window = window
        self._stale = max(stale, window)
        self._lock = threading.Lock()
        self._start: tuple[float, float, float] | None = None
        self._broken = False
        #: Cores' worth of CPU other processes used in the last window.
        self.others: float | None = None

    @property
    def available(self) -> bool:
        """Whether the clock gives readings (False once it gave none)."""
        return not self._broken

    def sample(self) -> None:
        """Close the window if it is long enough (one thread at a time; a caller that
        finds another sampling goes on without waiting)."""
        if self._broken or not self._lock.acquire(blocking=False):
            return
        try:
            now = self._now()
            start = self._start
            if start is not None and now - start[0] < self._window:
                return
            reading = self._clock()
            if reading is None:
                self._broken = True
                return
            if start is not None and now - start[0] > self._stale:
                self.others = None  # a pause: what others did then is not known now
            elif start is not None:
                busy, own = reading[0] - start[1], reading[1] - start[2]
                self.others = max(0.0, busy - own) / (now - start[0])
            self._start = (now, reading[0], reading[1])
        finally:
            self._lock.release()


@dataclass
class ContentionStats:
    """What the monitor saw and what the engines did: judged ``windows`` and how many
    read busy, the wait and active seconds they covered; oneDNN region calls that
    adapt and how many ran the one-thread build; host kernel calls split over
    workers."""

    windows: int = 0
    busy_windows: int = 0
    wait_s: float = 0.0
    active_s: float = 0.0
    region_calls: int = 0
    serial_calls: int = 0
    host_calls: int = 0

    def copy(self) -> ContentionStats:
        """A snapshot (see :meth:`since`)."""
        return ContentionStats(**vars(self))

    def since(self, before: ContentionStats) -> ContentionStats:
        """The counts added after the snapshot ``before``."""
        return ContentionStats(**{k: v - getattr(before, k) for k, v in vars(self).items()})

    @property
    def wait_share(self) -> float:
        """The share of the active time that the ticking threads waited for a core."""
        return self.wait_s / self.active_s if self.active_s > 0 else 0.0


class ContentionMonitor:
    """Whether other processes hold the cores (see the module docstring): :meth:`tick`
    it from each call; ``busy`` is the last judgement. ``clock`` gives the calling
    thread's (CPU, run-queue wait) seconds (default :func:`schedstat_clock`), ``now``
    the wall clock, ``machine`` other processes' CPU use (default: a
    :class:`MachineLoad` on ``/proc``): tests pass fakes."""

    def __init__(
        self,
        clock: Callable[[], tuple[float, float] | None] | None = None,
        now: Callable[[], float] = time.perf_counter,
        window: float = WINDOW,
        machine: MachineLoad | None = None,
    ) -> None:
        self._clock = clock if clock is not None else schedstat_clock
        self._now = now
        self._window = window
        self._local = threading.local()
        #: Other processes' CPU use, sampled as windows close.
        self.machine = machine if machine is not None else MachineLoad()
        #: Whether the last judged window read busy.
        self.busy = False
        #: Counts since the process started (see :class:`ContentionStats`).
        self.stats = ContentionStats()

    def tick(self) -> bool:
        """Note a call on this thread; ``busy`` (judged anew when a window closed)."""
        now = self._now()
        local = self._local
        start = getattr(local, "start", None)
        if start is not None and now - start < self._window:
            return self.busy
        reading = self._clock()
        if reading is None:
            return False
        self.machine.sample()
        if start is not None:
            cpu, wait = reading[0] - local.cpu, reading[1] - local.wait
            self._judge(now - start, cpu, wait)
        local.start, local.cpu, local.wait = now, reading[0], reading[1]
        return self.busy

    def _judge(self, wall: float, cpu: float, wait: float) -> None:
        active = cpu + wait
        if active < MIN_ACTIVE * wall or active <= 0:
            return  # the thread mostly slept
        share = wait / active
        others = self.machine.others
        stats = self.stats
        stats.windows += 1
        stats.wait_s += wait
        stats.active_s += active
        if share >= BUSY_SHARE:
            # the wait counts when other processes use the cores (or /proc cannot say;
            # before the first machine window closes, nothing is known yet: not busy)
            if self.machine.available:
                self.busy = others is not None and others >= OTHERS_BUSY
            else:
                self.busy = True
        elif share < QUIET_SHARE or (others is not None and others < OTHERS_QUIET):
            self.busy = False
        stats.busy_windows += self.busy


_MONITOR = ContentionMonitor()


def get_monitor() -> ContentionMonitor:
    """The process's :class:`ContentionMonitor`."""
    return _MONITOR
