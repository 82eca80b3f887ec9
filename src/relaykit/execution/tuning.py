"""Tuning the host kernels: find the tunable workloads of a program, list each one's
algorithm choices, time each choice, keep the records.

This is the machinery under TVM's ``autotvm`` and ``auto_scheduler`` names: relaykit
has no schedule templates, so a workload's search space is the algorithms its host
kernel has (``nn.conv2d``: im2col + GEMM, or Winograd F(2x2, 3x3) where it applies;
``nn.dense``: one GEMM). A choice is measured by building the one operator with it
(:mod:`relaykit.execution.kernel_choices`) and timing runs of it.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 16, 14, 14))
>>> w = relay.var("w", shape=(16, 16, 3, 3))
>>> mod = IRModule.from_expr(relay.Function([x, w], relay.nn.conv2d(x, w, padding=(1, 1))))
>>> [wl.candidates for wl in extract_workloads(mod, {})]
[('im2col', 'winograd')]
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from relaykit.backends.host.convolution import winograd_applies
from relaykit.errors import ArgumentError
from relaykit.ir.expr import Call, Function, Var
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op, get_op
from relaykit.ir.types import TensorType
from relaykit.runtime.ndarray import cpu
from relaykit.transform.bind import bind_params_by_name
from relaykit.transform.pass_infra import Sequential

from .build_module import build, build_passes
from .kernel_choices import TUNABLE_OPS, use_choices, workload_key

__all__ = [
    "Workload",
    "MeasureRecord",
    "extract_workloads",
    "measure",
    "load_records",
    "best_choices",
]


@dataclass(frozen=True)
class Workload:
    """One operator workload: name, input (shape, dtype)s, attributes and its choices."""

    op: str
    inputs: tuple[tuple[tuple[int, ...], str], ...]
    attrs: Mapping[str, Any]
    candidates: tuple[str, ...]
    key: str = field(compare=False)
    uses: int = field(default=1, compare=False)  # how many calls of the program run it
    flop: float = field(default=0.0, compare=False)  # multiply-adds x 2


@dataclass
class MeasureRecord:
    """The timing of one choice of one workload (``error`` empty when it ran)."""

    key: str
    task: str
    choice: str
    costs: list[float]
    error: str = ""
    timestamp: float = 0.0

    @property
    def mean(self) -> float:
        return float(np.mean(self.costs)) if self.costs and not self.error else float("inf")

    def to_json(self) -> str:
        return json.dumps(
            {
                "workload": self.key,
                "task": self.task,
                "config": {"algorithm": self.choice},
                "costs": self.costs,
                "error": self.error,
                "timestamp": self.timestamp,
            }
        )


def _candidates(
    op: str,
    inputs: Sequence[tuple[tuple[int, ...], str]],
    attrs: Mapping[str, Any],
    out: Sequence[int],
) -> tuple[str, ...]:
    if op != "nn.conv2d":
        return ("gemm",)
    (x, xd), (w, _) = inputs[0], inputs[1]
    layouts = (attrs.get("data_layout"), attrs.get("kernel_layout"))
    if layouts != ("NCHW", "OIHW") or xd != "float32":
        return ("auto",)
    if attrs.get("groups", 1) != 1:
        return ("direct",)
    strides = tuple(attrs.get("strides", (1, 1)))
    dilation = tuple(attrs.get("dilation", (1, 1)))
    if winograd_applies(x, w, out, strides, dilation):
        return ("im2col", "winograd")
    return ("im2col",)


def _flop(op: str, inputs: Sequence[tuple[tuple[int, ...], str]], out: Sequence[int]) -> float:
    w = inputs[1][0]
    if op == "nn.conv2d":  # each output element: C/groups * KH * KW multiply-adds
        return 2.0 * float(np.prod(out)) * float(np.prod(w[1:]))
    return 2.0 * float(np.prod(out)) * float(w[-1])  # nn.dense: K multiply-adds each


def extract_workloads(
    mod: IRModule | Function, params: Mapping[str, Any] | None, ops: Iterable[str] | None = None
) -> list[Workload]:
    """The distinct tunable workloads of ``mod`` as ``relay.build`` would see them (after
    its optimisations, with ``params`` bound), in program order; ``ops`` narrows the
    operators (default: every tunable one)."""
    wanted = set(ops) if ops is not None else set(TUNABLE_OPS)
    if isinstance(mod, Function):
        mod = IRModule.from_expr(mod)
    if not isinstance(mod, IRModule):
        raise ArgumentError(
            f"extract tasks from an IRModule or a relay.Function, not {type(mod).__name__}"
        )
    if params:
        bound = mod.copy()  # a partitioned module keeps its external functions
        bound["main"] = bind_params_by_name(mod["main"], dict(params))
        mod = bound
    mod = Sequential(build_passes(), name="RelayBuild")(mod)
    seen: dict[str, Workload] = {}
    for fn in mod.functions.values():
        if fn.attrs and fn.attrs.get("Compiler"):
            continue  # a backend's region: its kernels are not the host's
        for node in post_order(fn):
            if not (isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in wanted):
                continue
            types = [a.checked_type for a in node.args]
            tensors = [t for t in types if isinstance(t, TensorType)]
            if len(tensors) != len(types) or not isinstance(node.checked_type, TensorType):
                continue
            inputs = tuple((tuple(int(d) for d in t.shape), str(t.dtype)) for t in tensors)
            key = workload_key(node.op.name, inputs, node.attrs)
            if key in seen:
                seen[key] = replace(seen[key], uses=seen[key].uses + 1)
            else:
                out = tuple(int(d) for d in node.checked_type.shape)
                cands = _candidates(node.op.name, inputs, node.attrs, out)
                flop = _flop(node.op.name, inputs, out)
                seen[key] = Workload(node.op.name, inputs, node.attrs, cands, key, 1, flop)
    return list(seen.values())


def _single_op(wl: Workload) -> tuple[IRModule, dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    args = [Var(f"arg{i}", TensorType(shape, dtype)) for i, (shape, dtype) in enumerate(wl.inputs)]
    call = Call(get_op(wl.op), args, wl.attrs)
    data = {
        f"arg{i}": rng.uniform(-1, 1, shape).astype(dtype)
        for i, (shape, dtype) in enumerate(wl.inputs)
    }
    params = {k: v for k, v in data.items() if k != "arg0"}  # weights are constants, as in a model
    return IRModule.from_expr(Function(args, call)), params, {"arg0": data["arg0"]}


def measure(
    wl: Workload,
    choice: str,
    task: str = "",
    number: int = 1,
    repeat: int = 1,
    min_repeat_ms: float = 0.0,
) -> MeasureRecord:
    """Build ``wl``'s operator alone with ``choice`` and time it: ``repeat`` costs, each
    the mean of ``number`` runs (more runs while under ``min_repeat_ms``), in seconds."""
    if choice not in wl.candidates:
        raise ArgumentError(
            f"{choice!r} is not a choice of {wl.op} here; its choices are {list(wl.candidates)}"
        )
    now = time.time()
    try:
        mod, params, inputs = _single_op(wl)
        with use_choices({wl.key: choice}):
            lib = build(mod, target="llvm", params=params)
        module = lib["default"](cpu(0))
        module.set_input(**inputs)
        module.run()  # warm-up (allocation, first-touch)
        costs = []
        for _ in range(max(1, repeat)):
            runs, start = 0, time.perf_counter()
            while runs < max(1, number) or (time.perf_counter() - start) * 1e3 < min_repeat_ms:
                module.run()
                runs += 1
            costs.append((time.perf_counter() - start) / runs)
    except Exception as exc:  # a failed candidate is a record, as in TVM's tuners
        return MeasureRecord(wl.key, task, choice, [], f"{type(exc).__name__}: {exc}", now)
    return MeasureRecord(wl.key, task, choice, costs, "", now)


def load_records(path: str) -> list[MeasureRecord]:
    """The records of a tuning log (JSON lines, as ``MeasureRecord.to_json`` writes)."""
    records = []
    foreign = 0
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                if isinstance(r, dict) and "i" in r and "r" in r and "workload" not in r:
                    foreign += 1  # a TVM schedule record: no relaykit kernel reads schedules
                    continue
                records.append(
                    MeasureRecord(
                        r["workload"],
                        r.get("task", ""),
                        r["config"]["algorithm"],
                        list(r["costs"]),
                        r.get("error", ""),
                        r.get("timestamp", 0.0),
                    )
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise ArgumentError(
                    f"{path}:{number}: not a tuning record ({exc}); was it written by a tuner?"
                ) from None
    if foreign:
        warnings.warn(
            f"{path}: {foreign} TVM schedule record(s) ignored; relaykit's kernels take no "
            "schedules (its tuners write records of kernel algorithms)",
            stacklevel=2,
        )
    return records


def best_choices(records: Iterable[MeasureRecord]) -> dict[str, str]:
    """The fastest successful choice of each workload."""
    best: dict[str, MeasureRecord] = {}
    for r in records:
        if not r.error and r.costs and (r.key not in best or r.mean < best[r.key].mean):
            best[r.key] = r
    return {k: r.choice for k, r in best.items()}
