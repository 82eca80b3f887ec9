"""``explain``: where every operator went, and for every target why it was or wasn't taken.

``explain(mod, targets)`` runs the same decisions and passes as
:func:`relaykit.byoc.partition_for` and reports, per operator call: the
function it ended up in (a region's global function, or the host), and per
target the rule's answer ("declined: only float32", "no rule registered for
nn.softmax", "pattern X matched", "pinned to host by user", "region pruned:
2 ops < min 3"...). The report prints as a table and serialises to JSON.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> from relaykit.byoc import scoped_registries, decline
>>> x = relay.var("x", shape=(1, 8))
>>> mod = tvm.IRModule.from_expr(relay.nn.softmax(relay.abs(x)))
>>> with scoped_registries():
...     tvm.ir.register_op_attr("abs", "target.lib", lambda call: decline("no abs today"))
...     report = explain(mod, "lib")
>>> [(r.op, r.placement, r.reasons["lib"]) for r in report.ops]  # doctest: +NORMALIZE_WHITESPACE
[('abs', 'host', 'declined: no abs today'),
 ('nn.softmax', 'host', 'no rule registered for nn.softmax')]
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from relaykit.byoc._common import (
    DEFAULT_TARGET,
    annotation_ops,
    composite_name,
    copy_type,
    ensure_typed,
)
from relaykit.byoc.annotate import annotate_function, strip_annotations
from relaykit.byoc.choose import Decision, TargetChooser, normalize_targets
from relaykit.byoc.merge_composite import MergeComposite
from relaykit.byoc.merge_regions import merge_regions
from relaykit.byoc.op_edges import call_sources, composite_inner_inputs
from relaykit.byoc.partition import RegionInfo, partition_module
from relaykit.byoc.pins import as_pins
from relaykit.byoc.pipeline import patterns_for
from relaykit.ir.expr import Call, Constant, Expr, Function, Span, Var, checked_type_or_none
from relaykit.ir.functor import post_order, rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op

from .summary import tensor_dtypes
from .values import Read, attrs_text, constant_text, function_reads, span_text, type_text

__all__ = ["explain", "Report", "OpReport", "RegionReport", "ValueReport"]

_SOURCE = "<explain>"


@dataclass(frozen=True)
class OpReport:
    """One operator call: where it went and why."""

    index: int
    op: str
    type: str
    placement: str
    function: str | None
    why: str
    reasons: dict[str, str]
    composite: str | None = None
    caller: str = "main"
    #: The rows (``index``) whose results this operator reads, in the same function.
    inputs: tuple[int, ...] = ()
    #: The type (``float32[1,64,56,56]``) of what it reads from each row of ``inputs``.
    input_types: tuple[str, ...] = ()
    #: The values (``Report.values`` indices: inputs, weights, constants) it reads.
    operands: tuple[int, ...] = ()
    #: Its attributes as text (unset ones left out).
    attrs: dict[str, str] = field(default_factory=dict)
    #: Where it came from, when the IR kept it (the call's span): a source node's
    #: name, or ``file:line:column`` for a module read from text.
    source: str | None = None


@dataclass(frozen=True)
class ValueReport:
    """A value drawn as a node of its own: a function's input, a weight (a parameter
    named as a weight, or a bound constant tensor), a scalar constant, or an output."""

    index: int
    #: ``input``, ``weight``, ``constant`` (a scalar) or ``output``.
    kind: str
    name: str
    type: str
    caller: str = "main"
    #: For an output: the rows whose results it is, and the values it returns as they are.
    inputs: tuple[int, ...] = ()
    operands: tuple[int, ...] = ()
    #: What the node shows: the name, a constant's shape or value.
    label: str = ""


@dataclass(frozen=True)
class RegionReport:
    """One region: its function (None when pruned), size and fate."""

    target: str
    function: str | None
    num_ops: int
    macs: int
    pruned: str | None
    caller: str = "main"
    #: The element types its tensors carry, first seen first (empty when pruned).
    dtypes: tuple[str, ...] = ()


@dataclass
class Report:
    """The answer of :func:`explain`: ``str(report)`` is a table, ``to_json()`` JSON."""

    targets: tuple[str, ...]
    ops: list[OpReport] = field(default_factory=list)
    regions: list[RegionReport] = field(default_factory=list)
    #: The inputs, weights, constants and outputs of the explained functions.
    values: list[ValueReport] = field(default_factory=list)

    def for_op(self, name: str) -> list[OpReport]:
        """The rows of operator ``name``."""
        return [r for r in self.ops if r.op == name]

    def placements(self) -> dict[str, int]:
        """How many operators went to each target (and to ``host``)."""
        counts: dict[str, int] = {}
        for r in self.ops:
            counts[r.placement] = counts.get(r.placement, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "targets": list(self.targets),
            "placements": self.placements(),
            "ops": [asdict(r) for r in self.ops],
            "regions": [asdict(r) for r in self.regions],
            "values": [asdict(v) for v in self.values],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        rows = [("#", "operator", "placement", "function", "why")]
        for r in self.ops:
            name = r.op if r.composite is None else f"{r.op} [{r.composite}]"
            rows.append((str(r.index), name, r.placement, r.function or "-", r.why))
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines = []
        for k, row in enumerate(rows):
            cells = [row[i].ljust(widths[i]) for i in range(4)]
            lines.append("  ".join(cells) + "  " + row[4])
            if k == 0:
                lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 3)
                continue
            rep = self.ops[k - 1]
            if len(self.targets) > 1 or rep.reasons.get(rep.placement) != rep.why:
                for t in self.targets:
                    lines.append(" " * (widths[0] + 2) + f"{t}: {rep.reasons.get(t, '')}")
        counts = ", ".join(f"{n} on {p}" for p, n in sorted(self.placements().items()))
        kept = [g for g in self.regions if g.function is not None]
        pruned = [g for g in self.regions if g.pruned is not None and g.target != DEFAULT_TARGET]
        lines.append("")
        lines.append(
            f"{len(self.ops)} operators: {counts}; {len(kept)} functions"
            + (f", {len(pruned)} regions pruned" if pruned else "")
        )
        return "\n".join(lines)


def _label_calls(func: Function, start: int, spans: dict[int, str]) -> tuple[Function, int]:
    """``func`` with every operator and composite call given a numbering span; the
    spans the calls had before (their source) go to ``spans``."""
    begin_op, end_op = annotation_ops()
    counter = [start]

    def post(new: Expr, old: Expr) -> Expr | None:
        if (
            type(new) is Call
            and new.op is not begin_op
            and new.op is not end_op
            and (type(new.op) is Op or composite_name(new.op) is not None)
        ):
            labelled = Call(
                new.op, new.args, new.attrs, new.type_args, Span(_SOURCE, counter[0] + 1, column=0)
            )
            source = span_text(old)
            if source is not None:
                spans[counter[0]] = source
            counter[0] += 1
            return copy_type(labelled, old)
        return copy_type(new, old) if new is not old else None

    skip_composites: dict[Expr, Expr] = {}
    for node in post_order(func.body):
        if type(node) is Function and "Composite" in node.attrs:
            skip_composites[node] = node
    body = rewrite_post_order(func.body, post, dict(skip_composites))
    return copy_type(func.with_fields(body=body), func), counter[0]  # type: ignore[return-value]


def _label(call: Call) -> int | None:
    span = call.span
    if span is not None and span.source_name == _SOURCE:
        return span.line - 1
    return None


#: The decision of every labelled call: label -> (call, decision, caller's name).
_Decisions = dict[int, tuple[Call, Decision, str]]
#: Per labelled call, per argument: the labels of the labelled calls it reads.
_Sources = dict[int, list[tuple[int, ...]]]
#: Per argument: the labels it reads, the values (``Report.values`` indices) it reads,
#: and its type as text.
_Reads = list[tuple[tuple[int, ...], tuple[int, ...], str]]


@dataclass
class _Graph:
    """What :func:`explain` records besides the decisions: the edges between labelled
    calls, what each argument reads and its type, the calls' source spans, the
    functions' input, weight and constant values, and what each function returns."""

    weights: set[str]
    sources: _Sources = field(default_factory=dict)
    reads: dict[int, _Reads] = field(default_factory=dict)
    spans: dict[int, str] = field(default_factory=dict)
    values: list[ValueReport] = field(default_factory=list)
    outputs: list[tuple[str, _Reads]] = field(default_factory=list)
    constants: int = 0

    def add_function(self, fn: Function, caller: str) -> None:
        """Records ``fn`` (labelled): its parameters as inputs or weights, and what its
        calls and its result read."""
        ids: dict[int, int] = {}
        for p in fn.params:
            kind = "weight" if p.name_hint in self.weights else "input"
            ids[id(p)] = self._value(kind, p.name_hint, type_text(p.type_annotation), caller)
        found = function_reads(fn, _label)

        def index(v: Expr) -> int:
            k = ids.get(id(v))
            if k is None:
                if type(v) is Constant:
                    kind = "constant" if v.is_scalar else "weight"
                    name = f"meta[relay.Constant][{self.constants}]"
                    self.constants += 1
                    ty = type_text(checked_type_or_none(v))
                    if ty == "?":
                        ty = f"{v.data.dtype}[{','.join(str(d) for d in v.data.shape)}]"
                    k = self._value(kind, name, ty, caller, constant_text(v))
                else:
                    name = v.name_hint if type(v) is Var else type(v).__name__
                    kind = "weight" if name in self.weights else "input"
                    k = self._value(kind, name, type_text(checked_type_or_none(v)), caller)
                ids[id(v)] = k
            return k

        def convert(reads: list[Read]) -> _Reads:
            return [(labels, tuple(index(v) for v in vals), ty) for labels, vals, ty in reads]

        for k, reads in found.calls.items():
            self.reads[k] = convert(reads)
        self.outputs.append((caller, convert(found.outputs)))

    def _value(self, kind: str, name: str, ty: str, caller: str, label: str = "") -> int:
        self.values.append(ValueReport(len(self.values), kind, name, ty, caller, (), (), label))
        return len(self.values) - 1

    def output_values(self, row_of: dict[int, int]) -> list[ValueReport]:
        """One output node per result field of every function (its rows known)."""
        out: list[ValueReport] = []
        start = len(self.values)
        for caller, reads in self.outputs:
            for i, (labels, vals, ty) in enumerate(reads):
                name = "output" if len(reads) == 1 else f"output_{i}"
                if caller != "main":
                    name = f"{caller}.{name}"
                rows = tuple(dict.fromkeys(row_of[j] for j in labels if j in row_of))
                out.append(ValueReport(start + len(out), "output", name, ty, caller, rows, vals))
        return out


def explain(
    mod: IRModule,
    targets: str | Sequence[str],
    patterns: Sequence[tuple[Any, ...]] | None = None,
    *,
    pin: Any = None,
    include_non_call_ops: bool = True,
    weights: Iterable[str] | None = None,
) -> Report:
    """Partition ``mod`` for ``targets`` as ``partition_for`` would and report why.

    ``patterns`` defaults to the registered pattern tables of the targets; the
    parameters named in ``weights`` are reported as weights, the others as inputs.
    """
    names = normalize_targets(targets)
    chooser = TargetChooser(names, as_pins(pin, names))
    table = patterns_for(names, pin) if patterns is None else list(patterns)
    work = MergeComposite(table)(mod.copy()) if table else mod.copy()
    graph = _Graph(set(weights or ()))
    annotated, decisions = _annotate_recording(work, chooser, include_non_call_ops, graph)
    parted, infos = partition_module(annotated)
    report = Report(names)
    funcs = {g.name_hint: f for g, f in parted.functions.items()}
    for info in infos:
        dtypes = tuple(tensor_dtypes(funcs[info.function])) if info.function in funcs else ()
        report.regions.append(
            RegionReport(
                info.target,
                info.function,
                info.num_ops,
                info.macs,
                info.pruned,
                info.caller,
                dtypes,
            )
        )
    report.values.extend(graph.values)
    placed = _placed(infos)
    last_row: dict[int, int] = {}
    for k in sorted(decisions):
        call, decision, caller = decisions[k]
        args = [
            tuple(last_row[j] for j in labels if j in last_row)
            for labels in graph.sources.get(k, ())
        ]
        reads = [
            (tuple(last_row[j] for j in labels if j in last_row), vals, ty)
            for labels, vals, ty in graph.reads.get(k, ())
        ]
        before = len(report.ops)
        _report_call(report, call, decision, placed.get(k), caller, args, reads, graph.spans.get(k))
        if len(report.ops) > before:  # its result is its last row (a composite's root)
            last_row[k] = len(report.ops) - 1
    report.values.extend(graph.output_values(last_row))
    return report


def _annotate_recording(
    work: IRModule, chooser: TargetChooser, include_non_call_ops: bool, graph: _Graph
) -> tuple[IRModule, _Decisions]:
    """``work`` annotated and its regions merged as ``partition_for`` does, its calls
    labelled (numbered spans), and the decision taken for every labelled call; records
    in ``graph`` the labels each labelled call's arguments read, and the values."""
    decisions: _Decisions = {}
    annotated = work.copy()
    count = 0
    begin_end = annotation_ops()
    for gv, fn in work.items():
        if "Compiler" in fn.attrs or "Composite" in fn.attrs:
            continue
        fn = ensure_typed(fn, work)
        keep = None
        if any(type(n) is Call and n.op in begin_end for n in post_order(fn.body)):
            fn, keep = strip_annotations(fn)
        start = count
        fn, count = _label_calls(fn, count, graph.spans)
        graph.sources.update(call_sources(fn.body, _label))
        graph.add_function(fn, gv.name_hint)
        record: dict[Call, Decision] = {}
        fn = annotate_function(fn, chooser, include_non_call_ops, record, keep)
        for call, decision in record.items():
            k = _label(call)
            if k is not None and k >= start:
                decisions[k] = (call, decision, gv.name_hint)
        annotated.update_func(gv, merge_regions(fn))
    return annotated, decisions


def _placed(infos: list[RegionInfo]) -> dict[int, RegionInfo]:
    """The region each labelled call ended up in."""
    placed: dict[int, RegionInfo] = {}
    for info in infos:
        for c in info.calls:
            k = _label(c)
            if k is not None:
                placed[k] = info
    return placed


def _report_call(
    report: Report,
    call: Call,
    decision: Decision,
    info: RegionInfo | None,
    caller: str,
    args: list[tuple[int, ...]],
    reads: _Reads,
    source: str | None,
) -> None:
    """Appends the rows of one call: one for an operator, one per operator inside a
    composite; a call whose region was pruned or not partitioned is on the host.
    ``args`` holds, per argument, the rows that argument reads; ``reads`` per argument
    the rows, the values and the type."""
    reasons = dict(decision.reasons)
    placement, function, why = "host", None, decision.why
    if decision.target != DEFAULT_TARGET:
        if info is not None and info.function is not None:
            placement, function = decision.target, info.function
        else:
            why = info.pruned if info is not None and info.pruned else "not partitioned"
            reasons[decision.target] = f"{reasons.get(decision.target, '')}; {why}".lstrip("; ")
    ty = _type_text(call, "?")
    op = call.op
    comp = composite_name(op)
    if comp is None or type(op) is not Function:
        name = op.name if type(op) is Op else type(op).__name__
        inputs = tuple(dict.fromkeys(r for rows in args for r in rows))
        report.ops.append(
            OpReport(
                len(report.ops),
                name,
                ty,
                placement,
                function,
                why,
                reasons,
                None,
                caller,
                inputs,
                _edge_types(inputs, reads, {}),
                tuple(dict.fromkeys(v for _, vals, _ in reads for v in vals)),
                attrs_text(call.attrs),
                source,
            )
        )
        return
    first = len(report.ops)
    links = iter(composite_inner_inputs(op))
    for inner in post_order(op.body):
        if type(inner) is Call and type(inner.op) is Op:
            inner_rows, params = next(links)
            outer = (r for p in params if p < len(args) for r in args[p])
            inputs = tuple(dict.fromkeys([*outer, *(first + i for i in inner_rows)]))
            mine = [reads[p] for p in params if p < len(reads)]
            inner_types = {first + i: report.ops[first + i].type for i in inner_rows}
            report.ops.append(
                OpReport(
                    len(report.ops),
                    inner.op.name,
                    _type_text(inner, ty),
                    placement,
                    function,
                    why,
                    reasons,
                    comp,
                    caller,
                    inputs,
                    _edge_types(inputs, mine, inner_types),
                    tuple(dict.fromkeys(v for _, vals, _ in mine for v in vals)),
                    attrs_text(inner.attrs),
                    span_text(inner) or source,
                )
            )


def _edge_types(inputs: tuple[int, ...], reads: _Reads, known: dict[int, str]) -> tuple[str, ...]:
    """The type read from each row of ``inputs``: that of the first argument reading it."""
    types = dict(known)
    for rows, _, ty in reads:
        for r in rows:
            types.setdefault(r, ty)
    return tuple(types.get(r, "?") for r in inputs)


def _type_text(e: Expr, default: str) -> str:
    """The checked type of ``e`` as text, or ``default`` when it has none."""
    ty = checked_type_or_none(e)
    return default if ty is None else str(ty)
