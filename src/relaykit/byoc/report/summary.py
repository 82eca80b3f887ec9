"""What a partitioning did, per target: functions, operators, MACs and parameter bytes.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> from relaykit.byoc import scoped_registries
>>> x, w = relay.var("x", shape=(1, 8)), relay.var("w", shape=(4, 8))
>>> mod = tvm.IRModule.from_expr(relay.nn.softmax(relay.nn.dense(x, w)))
>>> with scoped_registries():
...     tvm.ir.register_op_attr("nn.dense", "target.lib", True)
...     s = summarize(mod, "lib", param_names={"w"})
>>> t = s.targets["lib"]
>>> (len(t.functions), t.operators, t.macs, t.param_bytes)
(1, 1, 32, 128)
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from relaykit.byoc._common import DEFAULT_TARGET
from relaykit.byoc.choose import normalize_targets
from relaykit.byoc.cost import call_macs, op_names, type_bytes
from relaykit.byoc.merge_regions import MergeCompilerRegions
from relaykit.byoc.partition import RegionInfo, partition_module
from relaykit.byoc.pipeline import partition_passes
from relaykit.byoc.regions import walk
from relaykit.ir.expr import Call, Function, checked_type_or_none
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op

__all__ = [
    "FunctionSummary",
    "TargetSummary",
    "Summary",
    "summarize",
    "op_counts",
    "tensor_dtypes",
]


def op_counts(func: Function, *, expand_composites: bool = True) -> Counter[str]:
    """Operator calls of ``func`` by name (composite calls counted by their operators)."""
    counts: Counter[str] = Counter()
    for node in walk(func.body):
        if type(node) is Call:
            if type(node.op) is Op:
                counts[node.op.name] += 1
            elif expand_composites and isinstance(node.op, Function):
                for name in op_names(node):
                    counts[name] += 1
    return counts


def tensor_dtypes(func: Function) -> list[str]:
    """The dtypes of ``func``'s parameters, constants and results, first seen first."""
    seen: dict[str, None] = {}

    def add(ty: Any) -> None:
        if ty is None:
            return
        fields = getattr(ty, "fields", None)
        if fields is not None:
            for f in fields:
                add(f)
            return
        dtype = getattr(ty, "dtype", None)
        if isinstance(dtype, str):
            seen.setdefault(dtype, None)

    for p in func.params:
        add(checked_type_or_none(p))
    for e in walk(func.body):
        add(checked_type_or_none(e))
    return list(seen)


def _macs(func: Function) -> int:
    return sum(call_macs(n) for n in walk(func.body) if type(n) is Call)


@dataclass(frozen=True)
class FunctionSummary:
    """One region function."""

    name: str
    operators: int
    op_names: list[str]
    macs: int
    param_bytes: int
    #: The element types its tensors carry (inputs, weights, results), first seen first:
    #: ``["uint8", "int8", "int32"]`` for an int8 convolution with its requantize.
    dtypes: list[str] = field(default_factory=list)


@dataclass
class TargetSummary:
    """Everything one target received."""

    name: str
    functions: list[FunctionSummary] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)

    @property
    def operators(self) -> int:
        return sum(f.operators for f in self.functions)

    @property
    def macs(self) -> int:
        return sum(f.macs for f in self.functions)

    @property
    def param_bytes(self) -> int:
        return sum(f.param_bytes for f in self.functions)


@dataclass
class Summary:
    """The result of :func:`summarize`: printable, and serialisable with ``to_json()``."""

    model: str
    targets: dict[str, TargetSummary]
    host_operators: int
    host_macs: int
    before: Counter[str]
    after: dict[str, Counter[str]]
    partitioned: IRModule | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "targets": {
                name: {
                    "functions": [asdict(f) for f in t.functions],
                    "regions": len(t.functions),
                    "operators": t.operators,
                    "macs": t.macs,
                    "param_bytes": t.param_bytes,
                    "pruned": list(t.pruned),
                }
                for name, t in self.targets.items()
            },
            "host": {"operators": self.host_operators, "macs": self.host_macs},
            "breakdown": {
                "before": dict(self.before),
                "after": {k: dict(v) for k, v in self.after.items()},
            },
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        lines = [
            f"Model {self.model}: {sum(self.before.values())} operators, "
            f"{_si(sum(self.targets_macs()) + self.host_macs)}MACs"
        ]
        for name, t in self.targets.items():
            lines.append("")
            lines.append(
                f"Target {name}: {len(t.functions)} functions, {t.operators} operators, "
                f"{_si(t.macs)}MACs, {_bytes(t.param_bytes)} of parameters"
            )
            if t.functions:
                width = max(len(f.name) for f in t.functions)
                types = [",".join(f.dtypes) or "-" for f in t.functions]
                tw = max(len("dtypes"), *(len(d) for d in types))
                lines.append(
                    f"  {'function':<{width}}  {'ops':>4}  {'MACs':>9}  {'params':>9}  "
                    f"{'dtypes':<{tw}}  operators"
                )
                for f, dt in zip(t.functions, types, strict=True):
                    ops = ", ".join(_runs(f.op_names))
                    lines.append(
                        f"  {f.name:<{width}}  {f.operators:>4}  {_si(f.macs):>9}  "
                        f"{_bytes(f.param_bytes):>9}  {dt:<{tw}}  {ops}"
                    )
            for p in t.pruned:
                lines.append(f"  {p}")
        lines.append("")
        lines.append(f"Host: {self.host_operators} operators, {_si(self.host_macs)}MACs")
        lines.append("")
        cols = ["before", "host", *self.targets]
        names = sorted(
            set(self.before) | {k for c in self.after.values() for k in c},
            key=lambda k: (-self.before.get(k, 0), k),
        )
        width = max([len(n) for n in names] + [len("operator")])
        head = "  ".join(f"{c:>{max(len(c), 6)}}" for c in cols)
        lines.append(f"Operator breakdown\n  {'operator':<{width}}  {head}")
        for n in names:
            row = [self.before.get(n, 0)] + [
                self.after.get(c, Counter()).get(n, 0) for c in cols[1:]
            ]
            cells = "  ".join(f"{v:>{max(len(c), 6)}}" for v, c in zip(row, cols, strict=True))
            lines.append(f"  {n:<{width}}  {cells}")
        return "\n".join(lines)

    def targets_macs(self) -> list[int]:
        return [t.macs for t in self.targets.values()]


def _runs(names: Sequence[str]) -> list[str]:
    """``a, a, b`` as ``a x2, b``."""
    out: list[str] = []
    prev, n = None, 0
    for name in [*names, None]:
        if name == prev:
            n += 1
            continue
        if prev is not None:
            out.append(prev if n == 1 else f"{prev} x{n}")
        prev, n = name, 1
    return out


def _si(value: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{int(value)} "


def _bytes(n: int) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def summarize(
    mod: IRModule,
    targets: str | Sequence[str],
    *,
    patterns: Sequence[tuple[Any, ...]] | None = None,
    pin: Any = None,
    param_names: Iterable[str] | None = None,
    model: str = "model",
) -> Summary:
    """Partition ``mod`` for ``targets`` (as :func:`partition_for`) and summarise.

    ``param_names`` are the inputs of ``main`` that hold weights (their bytes
    count as parameters of the functions that take them); constants bound into
    functions always count.
    """
    names = normalize_targets(targets)
    passes = partition_passes(names, patterns=patterns, pin=pin)
    work = mod
    for p in passes:
        if isinstance(p, MergeCompilerRegions):
            work = p(work)
            break
        work = p(work)
    partitioned, infos = partition_module(work)
    weights = set(param_names or ())
    result = Summary(
        model,
        {t: TargetSummary(t) for t in names},
        0,
        0,
        op_counts(mod["main"]) if "main" in mod else Counter(),
        {},
    )
    for info in infos:
        _add_region(result, info, partitioned, weights)
    host: Counter[str] = Counter()
    for _, fn in partitioned.items():
        if "Compiler" not in fn.attrs:
            host.update(op_counts(fn))
            result.host_macs += _macs(fn)
    result.host_operators = sum(host.values())
    result.after["host"] = host
    result.partitioned = partitioned
    return result


def _add_region(result: Summary, info: RegionInfo, mod: IRModule, weights: set[str]) -> None:
    if info.target == DEFAULT_TARGET or info.target not in result.targets:
        return
    t = result.targets[info.target]
    if info.function is None:
        t.pruned.append(f"region {info.label}: {info.pruned}")
        return
    fn = mod[info.function]
    counts = op_counts(fn)
    after = result.after.setdefault(info.target, Counter())
    after.update(counts)
    names = [n for c in info.calls for n in op_names(c)]
    pbytes = info.const_bytes + sum(
        type_bytes(checked_type_or_none(v))
        for v in dict.fromkeys(info.input_vars)
        if v.name_hint in weights
    )
    t.functions.append(
        FunctionSummary(info.function, info.num_ops, names, info.macs, pbytes, tensor_dtypes(fn))
    )
