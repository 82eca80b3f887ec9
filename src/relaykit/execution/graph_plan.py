"""The graph plan: a flat, topologically ordered list of nodes over tensor entries.

This is what the graph executor runs and what ``export_library`` stores (as
JSON, in the spirit of TVM's graph JSON). Nodes are graph inputs, parameters
(the model's constants, named ``p0``, ``p1``...), operator calls (name and
attributes; the kernel is resolved when the executor is created), and calls
of backend functions (``extern``: the symbol, the backend and the operators
of its region, for error messages). Every entry has a static shape, dtype
and storage id from the memory plan. ``relay.build`` also stores the host
epilogue fusion it planned (:mod:`relaykit.execution.fusion`): the chains of
nodes the graph executor may run as one step, as :class:`FusedGroup` values.

>>> plan = GraphPlan.from_json(GraphPlan(
...     entries=[EntrySpec((2,), "float32", 0), EntrySpec((2,), "float32", 1)],
...     nodes=[PlanNode("input", "x", outputs=(0,)),
...            PlanNode("op", "nn.relu", inputs=(0,), outputs=(1,), groups=(-1,))],
...     storage=[StorageSpec("input", 8), StorageSpec("pool", 8)],
...     heads=[1]).to_json())
>>> [n.name for n in plan.nodes], plan.input_names
(['x', 'nn.relu'], ['x'])
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from relaykit.errors import ArtifactCorruptError, ArtifactError
from relaykit.ir.attrs import Attrs
from relaykit.ir.op import default_registry
from relaykit.ir.types import DTYPES

__all__ = [
    "PLAN_FORMAT",
    "PLAN_VERSION",
    "EntrySpec",
    "StorageSpec",
    "PlanNode",
    "FusedGroup",
    "GraphPlan",
    "attrs_to_json",
    "attrs_from_json",
]

PLAN_FORMAT = "relaykit.graph_plan"
PLAN_VERSION = 1
_NODE_KINDS = ("input", "param", "op", "extern")
_ITEMSIZE = {name: dt.itemsize for name, dt in DTYPES.items()}
_STORAGE_KINDS = ("input", "param", "pool")
_INF = float("inf")


@dataclass(frozen=True)
class EntrySpec:
    """One tensor of the plan: its type and the storage it lives in."""

    shape: tuple[int, ...]
    dtype: str
    storage: int = -1

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * _ITEMSIZE[self.dtype]


@dataclass(frozen=True)
class StorageSpec:
    """A buffer: a graph input's, a parameter's, or a block of the memory pool."""

    kind: str
    nbytes: int


@dataclass(frozen=True)
class PlanNode:
    """One node. ``groups`` tells how the flat ``inputs`` form the call's arguments
    (``-1``: one tensor; ``k``: a tuple of ``k`` tensors)."""

    kind: str
    name: str
    inputs: tuple[int, ...] = ()
    outputs: tuple[int, ...] = ()
    attrs: Attrs = field(default_factory=Attrs)
    groups: tuple[int, ...] = ()
    view: bool = False
    compiler: str = ""
    region_ops: tuple[str, ...] = ()
    desc: str = ""


@dataclass(frozen=True)
class FusedGroup:
    """A producer node and the epilogue nodes fused into its step (plan node indices);
    ``out`` is the entry the step writes, ``bias`` and ``residual`` the entries it reads,
    ``lo`` and ``hi`` the clamp bounds, ``names`` the epilogue operators (for errors)."""

    producer: int
    members: tuple[int, ...]
    out: int
    bias: int | None = None
    residual: int | None = None
    lo: float = -_INF
    hi: float = _INF
    names: tuple[str, ...] = ()


@dataclass
class GraphPlan:
    """The whole plan (see the module docstring). ``fusion``: the host epilogue fusion,
    by producer node index, planned by ``relay.build``; ``None`` when not planned yet (a
    plan read from an artifact made before plans carried it)."""

    entries: list[EntrySpec]
    nodes: list[PlanNode]
    storage: list[StorageSpec]
    heads: list[int]
    bound_params: list[str] = field(default_factory=list)
    fusion: dict[int, FusedGroup] | None = None
    #: The model's names of the outputs (one per head), or empty: ``output_0``... then.
    output_names: list[str] = field(default_factory=list)

    @property
    def input_names(self) -> list[str]:
        return [n.name for n in self.nodes if n.kind == "input"]

    @property
    def param_names(self) -> list[str]:
        return [n.name for n in self.nodes if n.kind == "param"]

    def output_name(self, i: int) -> str:
        """The name of output ``i``: the model's (an ONNX output's), else ``output_<i>``."""
        return self.output_names[i] if self.output_names else f"output_{i}"

    @property
    def num_steps(self) -> int:
        """Nodes that run something (operator calls that are not views, backend calls)."""
        return sum(1 for n in self.nodes if n.kind == "extern" or (n.kind == "op" and not n.view))

    # -- JSON -------------------------------------------------------------------------------
    def to_json(self) -> str:
        nodes = []
        for n in self.nodes:
            rec: dict[str, Any] = {"kind": n.kind, "name": n.name, "outputs": list(n.outputs)}
            if n.kind in ("op", "extern"):
                rec["inputs"] = list(n.inputs)
                rec["desc"] = n.desc
            if n.kind == "op":
                rec["attrs"] = attrs_to_json(n.attrs)
                rec["groups"] = list(n.groups)
                rec["view"] = n.view
            if n.kind == "extern":
                rec["compiler"] = n.compiler
                rec["region_ops"] = list(n.region_ops)
            nodes.append(rec)
        obj = {
            "format": PLAN_FORMAT,
            "version": PLAN_VERSION,
            "nodes": nodes,
            "entries": [
                {"shape": list(e.shape), "dtype": e.dtype, "storage": e.storage}
                for e in self.entries
            ],
            "storage": [{"kind": s.kind, "nbytes": s.nbytes} for s in self.storage],
            "heads": list(self.heads),
            "bound_params": list(self.bound_params),
        }
        if self.fusion is not None:
            obj["fusion"] = [_group_to_json(g) for _, g in sorted(self.fusion.items())]
        if self.output_names:
            obj["output_names"] = list(self.output_names)
        return json.dumps(obj, allow_nan=False, separators=(",", ":"))

    @staticmethod
    def from_json(text: str | bytes) -> GraphPlan:
        """Parse and fully check a plan; anything inconsistent is an ArtifactError."""
        try:
            obj = json.loads(text)
        except ValueError as err:
            raise ArtifactCorruptError(f"the graph plan is not valid JSON ({err})") from None
        try:
            return _parse(obj)
        except ArtifactError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ArtifactCorruptError(
                f"malformed graph plan: {type(err).__name__}: {err}"
            ) from None


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise ArtifactCorruptError(f"malformed graph plan: {what}")


def _int(v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise ArtifactCorruptError(f"malformed graph plan: expected an integer, got {v!r}")
    return v


def _parse(obj: Any) -> GraphPlan:
    _check(isinstance(obj, dict), "not an object")
    _check(obj.get("format") == PLAN_FORMAT, f"format is {obj.get('format')!r}")
    if obj.get("version") != PLAN_VERSION:
        raise ArtifactError(
            f"graph plan version {obj.get('version')!r} is not supported (this relaykit reads "
            f"version {PLAN_VERSION}); export the model again with this relaykit"
        )
    storage = [StorageSpec(str(s["kind"]), _int(s["nbytes"])) for s in obj["storage"]]
    for s in storage:
        _check(s.kind in _STORAGE_KINDS and 0 <= s.nbytes < 1 << 40, f"bad storage {s}")
    entries = []
    for e in obj["entries"]:
        shape = tuple(_int(d) for d in e["shape"])
        dtype = str(e["dtype"])
        _check(dtype in DTYPES and all(d >= 0 for d in shape), f"bad entry type {dtype}{shape}")
        entry = EntrySpec(shape, dtype, _int(e["storage"]))
        _check(0 <= entry.storage < len(storage), f"entry storage {entry.storage} out of range")
        _check(entry.nbytes <= storage[entry.storage].nbytes, "entry larger than its storage")
        entries.append(entry)
    defined = [False] * len(entries)
    nodes = []
    for i, n in enumerate(obj["nodes"]):
        kind, name = str(n["kind"]), str(n["name"])
        _check(kind in _NODE_KINDS, f"node {i} has unknown kind {kind!r}")
        inputs = tuple(_int(x) for x in n.get("inputs", []))
        outputs = tuple(_int(x) for x in n["outputs"])
        for x in inputs:
            _check(0 <= x < len(entries) and defined[x], f"node {i} reads undefined entry {x}")
        for x in outputs:
            _check(0 <= x < len(entries) and not defined[x], f"node {i} redefines entry {x}")
            defined[x] = True
        attrs = Attrs({})
        groups: tuple[int, ...] = ()
        if kind == "op":
            if name not in default_registry:
                raise ArtifactError(
                    f"the graph plan calls operator {name!r}, which this relaykit does not have"
                )
            attrs = attrs_from_json(n["attrs"], name)
            groups = tuple(_int(g) for g in n["groups"])
            _check(sum(1 if g < 0 else g for g in groups) == len(inputs), f"node {i} groups")
        if kind in ("input", "param"):
            _check(len(outputs) == 1 and not inputs, f"node {i} must define one entry")
        nodes.append(
            PlanNode(
                kind,
                name,
                inputs,
                outputs,
                attrs,
                groups,
                bool(n.get("view", False)),
                str(n.get("compiler", "")),
                tuple(str(o) for o in n.get("region_ops", [])),
                str(n.get("desc", "")),
            )
        )
    heads = [_int(h) for h in obj["heads"]]
    for h in heads:
        _check(0 <= h < len(entries) and defined[h], f"head {h} is not defined")
    fusion = None
    if "fusion" in obj:
        fusion = _fusion_from_json(obj["fusion"], nodes, len(entries))
    names = obj.get("output_names", [])
    _check(
        isinstance(names, list)
        and all(isinstance(n, str) for n in names)
        and (not names or len(names) == len(heads)),
        "output_names must be one string per head",
    )
    return GraphPlan(
        entries,
        nodes,
        storage,
        heads,
        [str(p) for p in obj["bound_params"]],
        fusion=fusion,
        output_names=names,
    )


def _bound_to_json(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _group_to_json(group: FusedGroup) -> dict[str, Any]:
    return {
        "producer": group.producer,
        "members": list(group.members),
        "out": group.out,
        "bias": group.bias,
        "residual": group.residual,
        "lo": _bound_to_json(group.lo),
        "hi": _bound_to_json(group.hi),
        "names": list(group.names),
    }


def _bound(v: Any, default: float) -> float:
    if v is None:
        return default
    _check(isinstance(v, (int, float)) and not isinstance(v, bool), f"bad clamp bound {v!r}")
    return float(v)


def _fusion_from_json(obj: Any, nodes: list[PlanNode], num_entries: int) -> dict[int, FusedGroup]:
    """The stored fusion, checked against the plan's nodes: every group a producer and a
    chain of later single-output operator nodes, no node in two groups."""
    _check(isinstance(obj, list), "fusion must be a list")
    groups: dict[int, FusedGroup] = {}
    taken: set[int] = set()

    def single_op(i: int) -> bool:
        node = nodes[i]
        return node.kind == "op" and len(node.outputs) == 1

    for g in obj:
        producer = _int(g["producer"])
        members = tuple(_int(m) for m in g["members"])
        bias, residual = (None if g[k] is None else _int(g[k]) for k in ("bias", "residual"))
        _check(0 <= producer < len(nodes) and single_op(producer), f"bad fused producer {producer}")
        _check(not nodes[producer].view, f"fused producer {producer} is a view")
        chain = (producer, *members)
        _check(
            bool(members) and all(a < b for a, b in itertools.pairwise(chain)),
            f"fused group of node {producer}: members must follow it in order",
        )
        _check(members[-1] < len(nodes), f"fused group of node {producer} leaves the plan")
        _check(all(single_op(m) for m in members), f"fused group of node {producer}: not ops")
        _check(not taken & set(chain), f"node of fused group {producer} is in another group")
        taken.update(chain)
        out = _int(g["out"])
        _check(out == nodes[members[-1]].outputs[0], f"fused group {producer} writes entry {out}")
        for e in (bias, residual):
            _check(e is None or 0 <= e < num_entries, f"fused group {producer} reads entry {e}")
        lo, hi = _bound(g["lo"], -_INF), _bound(g["hi"], _INF)
        _check(lo <= hi, f"fused group {producer} has clamp bounds {lo} > {hi}")
        names = tuple(str(n) for n in g["names"])
        groups[producer] = FusedGroup(producer, members, out, bias, residual, lo, hi, names)
    return groups


def attrs_to_json(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Operator attributes as JSON values (non-finite floats as ``{"float": "inf"}``)."""
    return {str(k): _value_to_json(v) for k, v in attrs.items()}


def _value_to_json(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"float": repr(v)}
    if isinstance(v, (tuple, list)):
        return [_value_to_json(x) for x in v]
    if isinstance(v, Mapping):
        return {"attrs": {str(k): _value_to_json(x) for k, x in v.items()}}
    raise ArtifactError(f"attribute value {v!r} ({type(v).__name__}) cannot be stored in a plan")


def _value_from_json(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_value_from_json(x) for x in v)
    if isinstance(v, dict):
        if set(v) == {"float"}:
            return float(str(v["float"]))
        if set(v) == {"attrs"} and isinstance(v["attrs"], dict):
            return Attrs({str(k): _value_from_json(x) for k, x in v["attrs"].items()})
        raise ArtifactCorruptError(f"malformed graph plan: unexpected attribute object {v!r}")
    return v


def attrs_from_json(obj: Any, op_name: str = "") -> Attrs:
    """The inverse of :func:`attrs_to_json` (with the op's attrs type key)."""
    if not isinstance(obj, dict):
        raise ArtifactCorruptError(
            f"malformed graph plan: attributes must be an object, got {obj!r}"
        )
    key = default_registry.get_attr(op_name, "attrs_type_key") if op_name else None
    return Attrs({str(k): _value_from_json(v) for k, v in obj.items()}, key or "DictAttrs")
