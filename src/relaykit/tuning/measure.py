"""Measuring one candidate on one target: build it alone, run it on realistic inputs.

The candidate's function is partitioned with every call pinned to the target (the
host builds it as it is), built by ``relay.build``'s machinery and run by a graph
executor on random inputs of the right shapes and dtypes (normal floats, small
integers). The latency is the least of ``repeat`` timings of the mean of ``number``
runs (other work on the machine only ever adds time), minus the executor's own cost
per run (measured once on a one-op graph), so that runs placed on the host are not
charged one executor each.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from relaykit.byoc.annotate import AnnotateTarget
from relaykit.byoc.merge_regions import MergeCompilerRegions
from relaykit.byoc.partition import PartitionGraph
from relaykit.byoc.pins import HOST, Pin
from relaykit.byoc.targets import configure_target, scoped_registries
from relaykit.errors import PlacementError
from relaykit.execution.build_module import build
from relaykit.ir.expr import Function, Var
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType
from relaykit.op.tensor import negative
from relaykit.transform.infer_type import InferType
from relaykit.transform.pass_infra import Sequential

__all__ = [
    "measure_function",
    "measure_module",
    "measure_modules",
    "time_runs",
    "realistic_inputs",
    "executor_overhead",
]


def realistic_inputs(params: list[Var], seed: int = 0) -> dict[str, np.ndarray]:
    """One array per parameter: normal floats, small non-negative integers."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in params:
        ty = p.checked_type
        if not isinstance(ty, TensorType):
            raise PlacementError(f"parameter {p.name_hint} is {ty}, not a tensor")
        shape = tuple(int(d) for d in ty.shape)
        dt = np.dtype(str(ty.dtype))
        if dt.kind == "f":
            out[p.name_hint] = rng.standard_normal(shape).astype(dt)
        elif dt.kind == "b":
            out[p.name_hint] = rng.integers(0, 2, shape).astype(dt)
        else:
            out[p.name_hint] = rng.integers(0, 4, shape).astype(dt)
    return out


def _time(run: Callable[[], Any], repeat: int, budget: float, bound: float = float("inf")) -> float:
    run()  # warm up: sessions, engines and buffers are made on the first run
    start = time.perf_counter()
    run()
    once = max(time.perf_counter() - start, 1e-7)
    if once > HOPELESS * bound:
        return once  # far slower than the best known way: one timing says enough
    number = max(1, min(50, int(budget / once)))
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            run()
        samples.append((time.perf_counter() - start) / number)
    return min(samples)


def _built_runner(func: Function, target: str) -> Callable[[], Any]:
    mod = InferType()(IRModule.from_expr(func))
    if target != HOST:
        with scoped_registries():
            configure_target(target, min_region_ops=0, min_region_macs=0)
            everything = Pin(predicate=lambda call: True, to=target)
            passes = [AnnotateTarget([target], pin=[everything]), MergeCompilerRegions()]
            mod = Sequential([*passes, PartitionGraph()], name="MeasureOne")(mod)
    factory = build(mod, target="llvm")
    executor = factory["default"]()
    for name, value in realistic_inputs(list(func.params)).items():
        executor.set_input(name, value)
    return executor.run


#: A candidate whose first timed run exceeds this many times its bound is not timed again.
HOPELESS = 2.0

_OVERHEAD: dict[str, float] = {}


def executor_overhead(repeat: int = 5) -> float:
    """Seconds a graph executor spends per run around a trivial one-op graph (measured
    once per process)."""
    if "host" not in _OVERHEAD:
        x = Var("x", TensorType((1,), "float32"))
        run = _built_runner(Function([x], negative(x)), HOST)
        _OVERHEAD["host"] = _time(run, repeat, 0.002)
    return _OVERHEAD["host"]


def measure_function(
    func: Function,
    target: str,
    *,
    repeat: int = 3,
    budget: float = 0.004,
    bound: float = float("inf"),
) -> float:
    """Seconds per run of ``func`` on ``target`` (``"host"`` or a backend), the
    executor's own overhead taken out; raises whatever building or running raises.
    ``bound``: the best time known for the same work elsewhere; a run slower than
    ``HOPELESS`` times it is timed once only."""
    run = _built_runner(func, target)
    seconds = _time(run, repeat, budget, bound)
    return max(seconds - executor_overhead(), 1e-8)


def measure_module(
    mod: IRModule, *, repeat: int = 3, budget: float = 0.004, bound: float = float("inf")
) -> float:
    """Seconds per run of a whole (partitioned) module, built as it is and run by a
    graph executor on realistic inputs; raises whatever building or running raises."""
    mod = InferType()(mod)
    executor = build(mod, target="llvm")["default"]()
    for name, value in realistic_inputs(list(mod["main"].params)).items():
        executor.set_input(name, value)
    return _time(executor.run, repeat, budget, bound)


#: Interleaved rounds :func:`measure_modules` times each module in (enough calls for a
#: backend's own adaptation to load, such as the dnnl runtime's serial builds, to settle).
MODULE_ROUNDS = 6
#: Untimed calls of each module before the first round: a module's first calls pay
#: one-time costs (oneDNN primitives and weight reorders, onnxruntime sessions, thread
#: pools started, a backend's adaptation to load) that its later runs never see again.
WARMUP_CALLS = 2
#: Rounds a module is timed in before it may be judged hopeless and left out: one burst
#: alone is no verdict (a one-time cost or a moment of load elsewhere can make it 50x
#: slow), and a module left out after it keeps that burst as its time.
CONFIRM_ROUNDS = 3


def _module_runner(mod: IRModule) -> Callable[[], Any]:
    mod = InferType()(mod)
    executor = build(mod, target="llvm")["default"]()
    for name, value in realistic_inputs(list(mod["main"].params)).items():
        executor.set_input(name, value)
    return executor.run


def _burst(
    run: Callable[[], Any], budget: float, clock: Callable[[], float] = time.perf_counter
) -> float:
    """One untimed run (it wakes the module's thread pools), then the least of one timed
    run and the mean of a burst of runs filling about ``budget`` seconds (at least one
    more run, so that no single call decides)."""
    run()
    start = clock()
    run()
    once = max(clock() - start, 1e-7)
    number = max(1, min(50, int(budget / once)) - 1)
    start = clock()
    for _ in range(number):
        run()
    return min(once, max(clock() - start, 1e-7) / number)


def time_runs(
    runs: Mapping[int, Callable[[], Any]],
    *,
    rounds: int = MODULE_ROUNDS,
    budget: float = 0.016,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[int, float | str]:
    """Seconds per call of each of ``runs`` (key -> callable), timed as
    :func:`measure_modules` describes, by ``clock``; a callable that raises answers its
    error (a str).

    >>> t = [0.0]
    >>> def run(cost):
    ...     def call(): t[0] += cost
    ...     return call
    >>> got = time_runs({0: run(0.002), 1: run(0.5)}, rounds=4, budget=0.01, clock=lambda: t[0])
    >>> round(got[0], 6), round(got[1], 6)
    (0.002, 0.5)
    """
    out: dict[int, float | str] = {}
    timed = dict.fromkeys(runs, 0)
    for k, run in runs.items():
        try:
            for _ in range(WARMUP_CALLS):
                run()
            out[k] = math.inf
        except Exception as err:
            out[k] = f"{type(err).__name__}: {err}"
    for r in range(max(1, rounds)):
        fastest = min((v for v in out.values() if isinstance(v, float)), default=math.inf)
        for k in sorted(runs, reverse=r % 2 == 1):
            now = out[k]
            if not isinstance(now, float):
                continue
            if timed[k] >= CONFIRM_ROUNDS and now > HOPELESS * fastest:
                continue
            try:
                out[k] = min(now, _burst(runs[k], budget, clock))
                timed[k] += 1
            except Exception as err:
                out[k] = f"{type(err).__name__}: {err}"
    return out


def measure_modules(
    mods: list[IRModule], *, rounds: int = MODULE_ROUNDS, budget: float = 0.016
) -> list[float | str]:
    """Seconds per run of each whole (partitioned) module, all built in this process and
    timed in ``rounds`` interleaved rounds (each module first run ``WARMUP_CALLS`` times
    untimed, then, the order alternating, a burst per round, the least burst kept), so
    that a change of load on the machine touches every module alike; a module timed in
    ``CONFIRM_ROUNDS`` rounds and still slower than ``HOPELESS`` times the fastest is not
    timed again. A module that fails to build or run answers its error (a str).

    >>> import relaykit as tvm
    >>> from relaykit import relay
    >>> x = relay.var("x", shape=(64,))
    >>> mods = [tvm.IRModule.from_expr(relay.Function([x], f(x))) for f in (relay.exp, relay.abs)]
    >>> [isinstance(s, float) and s > 0 for s in measure_modules(mods, rounds=2, budget=0.001)]
    [True, True]
    """
    out: list[float | str] = []
    runs: dict[int, Callable[[], Any]] = {}
    for k, mod in enumerate(mods):
        try:
            runs[k] = _module_runner(mod)
            out.append(math.inf)
        except Exception as err:  # recorded, not raised: the others are still timed
            out.append(f"{type(err).__name__}: {err}")
    for k, value in time_runs(runs, rounds=rounds, budget=budget).items():
        out[k] = value
    return out
