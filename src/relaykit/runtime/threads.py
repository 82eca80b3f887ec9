"""One thread policy for the process: how many threads each engine may use.

relaykit runs three kinds of parallel engines in one process: oneDNN regions
(an OpenMP pool), the host kernels (NumPy, whose ``matmul`` calls BLAS) and the
graph executor (the calling thread, or workers when it runs independent steps
in parallel). Pools that busy-wait after their work take turns spinning
against each other: a BERT run with dnnl regions took 478 ms with OpenMP and
OpenBLAS at 2 threads each on 2 cores, 89 ms with BLAS at 1. And OpenBLAS'
own pool waits for every one of its threads at every GEMM: on a loaded 2-core
machine a 0.04 ms GEMM took 16 ms at 2 threads (one worker descheduled). So:

- the **budget** (``total``): ``set_num_threads(n)``, else the
  ``RELAYKIT_NUM_THREADS`` environment variable, else every core this
  process may run on; ``relay.build`` under a ``PassContext`` whose config
  has ``"relay.num_threads"`` sets it as ``set_num_threads`` does;
- the **graph executor** gets ``executor`` workers (1 unless it asks for
  more) and each worker an equal share, ``total // executor`` threads;
- **oneDNN** regions (OpenMP, passive waiting) get one worker's share each;
- **BLAS** runs single-threaded; the **host kernels** split big GEMMs and
  transcendental functions into blocks that the calling thread and the
  policy's host workers (threads that sleep when idle) take one after the
  other (:meth:`ThreadPolicy.run_parallel`), as onnxruntime's intra-op pool
  does: a late worker delays nothing, since the calling thread takes the
  blocks it has not started, and results do not depend on the thread count.

Busy machines (other processes holding some of the cores) are judged by
:mod:`relaykit.runtime.contention`; the host workers tick its monitor.

The split itself is a pure function, :func:`split`; :class:`ThreadPolicy`
holds the process's state and applies the BLAS count through
``threadpoolctl`` (every BLAS library loaded: NumPy's and SciPy's OpenBLAS,
MKL, BLIS).

>>> split(4)
ThreadBudget(total=4, executor=1, openmp=4, blas=1)
>>> split(4, executor_workers=2)
ThreadBudget(total=4, executor=2, openmp=2, blas=1)
"""

from __future__ import annotations

import itertools
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from relaykit.errors import ArgumentError, RelayKitError
from relaykit.runtime.contention import get_monitor

try:  # a core dependency; without it the policy still sizes OpenMP, but cannot set BLAS
    from threadpoolctl import ThreadpoolController as _Controller
except ImportError:  # pragma: no cover - only when installed without its dependencies
    _Controller = None

__all__ = [
    "ENV_VAR",
    "CONFIG_KEY",
    "ThreadBudget",
    "ThreadPolicy",
    "available_cores",
    "check_count",
    "split",
    "get_policy",
    "resolve_num_threads",
    "set_num_threads",
    "config_threadpool",
]

#: Environment variable with the thread budget of the process.
ENV_VAR = "RELAYKIT_NUM_THREADS"
#: ``PassContext`` config key with the thread budget (``relay.build`` applies it).
CONFIG_KEY = "relay.num_threads"


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_count(value: Any, what: str) -> int:
    """``value`` as a thread count, or an :class:`ArgumentError` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArgumentError(f"{what} must be a positive integer, got {value!r}")
    return value


def _env_threads() -> int | None:
    env = os.environ.get(ENV_VAR, "").strip()
    if not env:
        return None
    try:
        value = int(env)
    except ValueError:
        value = 0
    if value < 1:
        raise RelayKitError(
            f"{ENV_VAR} must be a positive integer, got {env!r}; unset it to use every core"
        )
    return value


@dataclass(frozen=True)
class ThreadBudget:
    """Threads per engine: ``executor`` workers, and per worker ``openmp`` threads for a
    oneDNN region and ``blas`` threads for NumPy's BLAS."""

    total: int
    executor: int
    openmp: int
    blas: int


def split(
    total: int, *, openmp_active: bool | None = None, executor_workers: int = 1
) -> ThreadBudget:
    """How ``total`` threads are shared (see the module docstring).

    ``openmp_active`` is deprecated and ignored: BLAS keeps one thread whether or not
    oneDNN's OpenMP pool is in use, so the split no longer depends on it.
    """
    if openmp_active is not None:
        warnings.warn(
            "split(openmp_active=...) is deprecated and ignored (BLAS stays at one thread "
            "either way); drop the argument",
            DeprecationWarning,
            stacklevel=2,
        )
    total = check_count(total, "the thread budget")
    workers = min(check_count(executor_workers, "executor_workers"), total)
    share = max(1, total // workers)
    return ThreadBudget(total, workers, share, 1)


class BlasControl:
    """Sets the thread count of every BLAS library loaded in the process (threadpoolctl)."""

    def __init__(self) -> None:
        self._controller: Callable[[], Any] | None = _Controller

    @property
    def available(self) -> bool:
        """Whether threadpoolctl is there to set BLAS threads."""
        return self._controller is not None

    def set(self, n: int) -> None:
        """Every loaded BLAS to ``n`` threads (libraries are looked up anew: one loaded since
        the last call is covered too)."""
        if self._controller is None:
            return
        for lib in self._controller().select(user_api="blas").lib_controllers:
            lib.set_num_threads(n)

    def get(self) -> list[int]:
        """The thread counts of the loaded BLAS libraries."""
        if self._controller is None:
            return []
        libs = self._controller().select(user_api="blas").lib_controllers
        return [lib.num_threads for lib in libs]


class ThreadPolicy:
    """The process's thread state: budget, live OpenMP engines, executor workers; it applies
    the BLAS share when any of them changes. ``blas`` is the BLAS setter (a
    :class:`BlasControl` by default; tests pass a recorder)."""

    def __init__(self, blas: Any = None) -> None:
        self._blas = blas if blas is not None else BlasControl()
        self._lock = threading.Lock()
        self._total: int | None = None
        self._openmp_active = False
        self._executor_workers = 1
        self._applied: int | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._pool_size = 0
        self._host_cache: tuple[tuple[Any, ...], int] | None = None
        self._park_hooks: list[Callable[[], Any]] = []

    # -- what the budget is ------------------------------------------------------------

    @property
    def total(self) -> int:
        """The budget: ``set_num_threads``, else ``RELAYKIT_NUM_THREADS``, else all cores."""
        if self._total is not None:
            return self._total
        env = _env_threads()
        return env if env is not None else available_cores()

    @property
    def openmp_active(self) -> bool:
        """Whether an OpenMP engine (a oneDNN region) has been created in this process."""
        return self._openmp_active

    def set_num_threads(self, n: int | None) -> ThreadBudget:
        """Set the budget (``None``: back to ``RELAYKIT_NUM_THREADS`` or all cores) and apply it."""
        with self._lock:
            self._total = None if n is None else check_count(n, "the number of threads")
        return self.apply()

    def budget(self) -> ThreadBudget:
        """The current split (see :func:`split`)."""
        return split(self.total, executor_workers=self._executor_workers)

    # -- what the engines ask for ------------------------------------------------------

    def openmp_threads(self, requested: int | None = None) -> int:
        """Threads for one oneDNN region: ``requested`` when given, else one worker's share.
        Marks OpenMP as live in this process."""
        n = check_count(requested, "num_threads") if requested is not None else None
        with self._lock:
            self._openmp_active = True
        budget = self.apply()
        return n if n is not None else budget.openmp

    def executor_threads(self, requested: int | None = None) -> ThreadBudget:
        """Workers for a graph executor that runs independent steps in parallel:
        ``requested`` (default 1) capped at the budget. Each worker's engines then get
        ``total // workers`` threads; the returned budget says how many."""
        n = check_count(requested, "executor workers") if requested is not None else 1
        with self._lock:
            self._executor_workers = max(1, min(n, self.total))
        return self.apply()

    def blas_threads(self) -> int:
        """The BLAS thread count the policy wants now."""
        return self.budget().blas

    def host_threads(self) -> int:
        """Threads a host kernel may split its work over: one worker's share, when BLAS can
        be kept single-threaded (threadpoolctl is there); else 1, as OpenBLAS' own spinning
        threads would then run beside the host workers. Host kernels ask at every run, so
        the answer is kept until the budget, ``RELAYKIT_NUM_THREADS`` or the executor
        workers change (the CPU affinity is read when it is computed)."""
        key = (self._total, os.environ.get(ENV_VAR), self._executor_workers)
        cached = self._host_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        value = self.budget().openmp if getattr(self._blas, "available", False) else 1
        self._host_cache = (key, value)
        return value

    def run_parallel(self, tasks: Sequence[Callable[[], Any]], threads: int | None = None) -> None:
        """Run independent ``tasks`` (NumPy work that releases the GIL) on the calling thread
        and ``threads - 1`` host workers (default: :meth:`host_threads`), which sleep when
        idle. Each thread takes the next task not yet started until none is left, so there
        may be more tasks than threads (a few per thread balance the load), and a worker
        that starts late only takes what the others have not done. The first exception of
        a task is raised once every started task has finished."""
        n = len(tasks)
        threads = min(n, threads if threads is not None else self.host_threads())
        if threads > 1:
            monitor = get_monitor()
            monitor.tick()
            monitor.stats.host_calls += 1
        if threads < 2:
            for task in tasks:
                task()
            return
        self.park()  # other pools' idle threads: stop spinning
        order = itertools.count()
        lock = threading.Lock()
        finished = threading.Event()
        state = {"done": 0}
        errors: list[BaseException] = []

        def drain() -> None:
            while (i := next(order)) < n:
                try:
                    tasks[i]()
                except BaseException as err:  # reported to the caller below
                    errors.append(err)
                with lock:
                    state["done"] += 1
                    if state["done"] == n:
                        finished.set()

        pool = self._host_pool(threads - 1)
        for _ in range(threads - 1):
            pool.submit(drain)
        drain()
        finished.wait()
        if errors:
            raise errors[0]

    def park(self) -> None:
        """Let the idle threads of pools that spin after their work (relaykit's native
        pool) sleep now: another engine (the host workers, a oneDNN region) is starting."""
        for hook in self._park_hooks:
            hook()

    def add_park_hook(self, hook: Callable[[], Any]) -> None:
        """Call ``hook`` whenever the host workers start: another pool whose idle threads
        spin for a while (relaykit's native pool) parks them, so that they do not take the
        cores the host workers need."""
        with self._lock:
            if hook not in self._park_hooks:
                self._park_hooks.append(hook)

    def _host_pool(self, workers: int) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None or self._pool_size < workers:
                old = self._pool
                self._pool = ThreadPoolExecutor(workers, thread_name_prefix="relaykit-host")
                self._pool_size = workers
                if old is not None:
                    old.shutdown(wait=False)
            return self._pool

    # -- applying ------------------------------------------------------------------------

    def apply(self, force: bool = False) -> ThreadBudget:
        """Set BLAS to its share if it changed since the last call (or ``force``: also when
        someone else changed it behind the policy's back); the current budget."""
        budget = self.budget()
        with self._lock:
            if force or self._applied != budget.blas:
                self._blas.set(budget.blas)
                self._applied = budget.blas
        return budget

    def ensure_applied(self) -> None:
        """Apply the BLAS share once (cheap when nothing changed: host kernels call it when
        they are bound)."""
        if self._applied != self.blas_threads():
            self.apply()

    def snapshot(self) -> tuple[Any, ...]:
        """The policy's state, for :meth:`restore` (tests)."""
        with self._lock:
            return (self._total, self._openmp_active, self._executor_workers)

    def restore(self, state: tuple[Any, ...]) -> None:
        """Put back a :meth:`snapshot` and re-apply BLAS."""
        with self._lock:
            self._total, self._openmp_active, self._executor_workers = state
        self.apply(force=True)

    def reset(self) -> None:
        """Forget the budget, OpenMP and executor state (tests)."""
        with self._lock:
            self._total = None
            self._openmp_active = False
            self._executor_workers = 1
            self._applied = None


_POLICY = ThreadPolicy()
if os.environ.get(ENV_VAR, "").strip():
    # An explicit budget holds from the start: BLAS is sized before any kernel runs, so a
    # run gives the same bits whether or not a oneDNN region or a host kernel came first.
    _POLICY.apply()


def get_policy() -> ThreadPolicy:
    """The process's :class:`ThreadPolicy`."""
    return _POLICY


def set_num_threads(n: int | None) -> ThreadBudget:
    """Set the process's thread budget (``None``: ``RELAYKIT_NUM_THREADS`` or all cores).

    >>> b = set_num_threads(2); b.total
    2
    >>> _ = set_num_threads(None)
    """
    return _POLICY.set_num_threads(n)


def resolve_num_threads(num_threads: int | None = None) -> int:
    """``num_threads`` when given (checked), else the process's budget.

    >>> resolve_num_threads(3)
    3
    >>> resolve_num_threads() >= 1
    True
    """
    if num_threads is not None:
        return check_count(num_threads, "num_threads")
    return _POLICY.total


def config_threadpool(mode: int = 0, nthreads: int = 0) -> None:
    """TVM's global function ``runtime.config_threadpool(mode, nthreads)``: ``nthreads``
    > 0 sets the thread budget (as :func:`set_num_threads`), 0 restores the default.
    ``mode`` (TVM's big/little core affinity) is accepted; relaykit does not pin threads
    to cores, so every mode uses all of the budget."""
    n = int(nthreads)
    if n < 0:
        raise ArgumentError(f"config_threadpool: nthreads must be >= 0, got {n}")
    set_num_threads(n or None)
