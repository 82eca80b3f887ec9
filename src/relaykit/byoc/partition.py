"""``PartitionGraph``: lift every region into a global function for its compiler.

For each region of each function ``f`` (regions as ``compiler_begin`` /
``compiler_end`` delimit them), a global function
``tvmgen_<mod_name>_<target>_<f>_<id>`` (non-alphanumerics of the target turned
into ``_``; ``id`` numbered as TVM numbers regions) is added with attributes
``Compiler=<target>``, ``Inline=1``, ``Primitive=1``, ``global_symbol=<name>``,
and ``f`` calls it. A region with several outputs returns a flat tuple that
the caller projects; tuple outputs (nested too) are flattened. Inputs that are
constants are bound into the function unless ``bind_constants=False``.
``default`` regions, and regions smaller than their target's
``min_region_ops`` / ``min_region_macs`` (see
:func:`relaykit.byoc.configure_target`), stay in ``f`` on the host.

>>> from relaykit import relay
>>> import relaykit as tvm
>>> from relaykit.byoc._common import make_begin, make_end
>>> x = relay.var("x", shape=(2,))
>>> body = make_end(relay.nn.relu(make_begin(x, "my-lib")), "my-lib")
>>> mod = PartitionGraph()(tvm.IRModule.from_expr(relay.Function([x], body)))
>>> [gv.name_hint for gv in mod.get_global_vars()]
['main', 'tvmgen_default_my_lib_main_0']
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    Let,
    Tuple,
    Var,
    checked_type_or_none,
)
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import FuncType, TupleType, Type
from relaykit.runtime.registry import EXT_PREFIX, func_registry
from relaykit.transform.infer_type import InferType
from relaykit.transform.pass_infra import Pass, PassContext, PassInfo

from ._common import (
    PartitionError,
    annotation_ops,
    copy_type,
    data_children,
    ensure_typed,
    is_composite,
    new_call,
    new_tuple,
    new_tuple_get_item,
    no_gc,
    rebuild_with,
)
from .cost import call_macs, call_op_count, embedded_constants
from .regions import RegionSet, find_regions, walk
from .targets import TargetSpec, get_target_spec

__all__ = [
    "PartitionGraph",
    "RegionInfo",
    "partition_module",
    "mangle_name",
    "prune_reason",
    "region_functions",
]


_NO_ATTRS = Attrs({})

#: How an output nests its tensor leaves: None for a leaf, else one shape per field.
_Shape: TypeAlias = "list[_Shape] | None"


def mangle_name(mod_name: str, target: str, func_name: str, region_id: int) -> str:
    """TVM's name of a region's function: ``tvmgen_default_byoc_target_main_3``."""
    prefix = f"tvmgen_{mod_name}_" if mod_name else "tvmgen_"
    return re.sub(r"[^0-9A-Za-z]", "_", f"{prefix}{target}_{func_name}_{region_id}")


@dataclass(frozen=True)
class RegionInfo:
    """One region found by ``PartitionGraph`` and what became of it."""

    target: str
    label: int
    function: str | None
    calls: tuple[Call, ...]
    num_ops: int
    macs: int
    pruned: str | None = None
    const_bytes: int = 0
    input_vars: tuple[Var, ...] = field(default=())
    caller: str = "main"


def prune_reason(
    target: str, num_ops: int, macs: int, spec: TargetSpec | None = None
) -> str | None:
    """Why a region of ``target`` that size goes back to the host (None: it stays)."""
    if spec is None:
        spec = get_target_spec(target)
    if num_ops < spec.min_region_ops:
        return f"region pruned: {num_ops} ops < min {spec.min_region_ops}"
    if macs < spec.min_region_macs:
        return f"region pruned: {macs} MACs < min {spec.min_region_macs}"
    return None


class _Partitioner:
    """Partitions one function body (see the module docstring)."""

    def __init__(
        self, body: Expr, func_name: str, mod_name: str, bind_constants: bool, taken: set[str]
    ) -> None:
        self.begin_op, self.end_op = annotation_ops()
        self.body = body
        self.func_name = func_name
        self.mod_name = mod_name
        self.bind_constants = bind_constants
        self.taken = taken
        self.order = walk(body)
        self.rs: RegionSet = find_regions(body, self.order, skip_default=True)
        begin_op, end_op = self.begin_op, self.end_op
        self.has_annotations = any(
            type(n) is Call and (n.op is begin_op or n.op is end_op) for n in self.order
        )
        self.members = self.rs.members()
        self.infos: dict[int, RegionInfo] = {}
        self.live: set[int] = set()
        self.outer: dict[Expr, Expr] = {}
        self.functions: list[tuple[int, GlobalVar, Function]] = []
        self.outputs: dict[int, dict[Expr, Expr]] = {}
        self._measure()

    def _measure(self) -> None:
        begin_op, end_op = self.begin_op, self.end_op
        specs: dict[str, TargetSpec] = {}
        for root, nodes in self.members.items():
            target = self.rs.target(root)
            spec = specs.get(target)
            if spec is None:
                spec = specs[target] = get_target_spec(target)
            calls = tuple(
                n
                for n in nodes
                if type(n) is Call
                and n.op is not begin_op
                and n.op is not end_op
                and (type(n.op) is Op or is_composite(n.op))
            )
            ops = sum(call_op_count(c, spec.transparent_ops) for c in calls)
            macs = sum(call_macs(c) for c in calls)
            has_end = any(type(n) is Call and n.op is end_op for n in nodes)
            pruned = prune_reason(target, ops, macs, spec)
            if not has_end and pruned is None:
                pruned = "region has no output"
            self.infos[root] = RegionInfo(
                target, self.rs.label(root), None, calls, ops, macs, pruned, caller=self.func_name
            )
            if pruned is None:
                self.live.add(root)

    # -- the outer (host) rewrite -------------------------------------------------
    def run(self) -> Expr:
        """The new body; region functions are collected in ``self.functions``."""
        outer = self.outer
        region_of, find = self.rs.region_of, self.rs.find
        end_op = self.end_op
        done_regions: set[int] = set()
        stack: list[tuple[object, bool]] = [(self.body, False)]
        while stack:
            item, ready = stack.pop()
            if type(item) is int:
                if ready:
                    self._emit(item)
                    continue
                if item in done_regions:
                    continue
                done_regions.add(item)
                stack.append((item, True))
                for b in self._begins(item):
                    if b.args[0] not in outer:
                        stack.append((b.args[0], False))
                continue
            node: Expr = item  # type: ignore[assignment]
            if ready:
                if node not in outer:
                    outer[node] = self._host(node)
                continue
            if node in outer:
                continue
            if type(node) is Call and node.op is end_op:
                r = region_of.get(node)
                root = find(r) if r is not None else None
                if root is not None and root in self.live:
                    if root not in done_regions:
                        stack.append((node, True))
                        stack.append((root, False))
                    else:
                        stack.append((node, True))
                    continue
            stack.append((node, True))
            for kid in self._host_children(node):
                if kid not in outer:
                    stack.append((kid, False))
        return outer[self.body]

    def _host_children(self, node: Expr) -> tuple[Expr, ...]:
        if type(node) is Call and (node.op is self.begin_op or node.op is self.end_op):
            return node.args
        return data_children(node)

    def _host(self, node: Expr) -> Expr:
        outer = self.outer
        if type(node) is Call and node.op is self.end_op:
            r = self.rs.region_of.get(node)
            root = self.rs.find(r) if r is not None else None
            if root is not None and root in self.live:
                outputs = self.outputs.get(root)
                if outputs is None:
                    raise PartitionError(
                        f"region {self.rs.label(root)} of {self.rs.target(root)!r} depends on "
                        "its own output: the compiler regions form a cycle"
                    )
                return outputs[node.args[0]]
            return outer[node.args[0]]
        if type(node) is Call and node.op is self.begin_op:
            return outer[node.args[0]]
        return rebuild_with(node, outer)

    def _begins(self, root: int) -> list[Call]:
        return [n for n in self.members[root] if type(n) is Call and n.op is self.begin_op]

    # -- one region -----------------------------------------------------------------
    def _emit(self, root: int) -> None:
        """Lifts region ``root`` into a global function, collected in ``functions``, and
        records in ``outputs`` how the host sees each of its outputs."""
        info = self.infos[root]
        region = self._rebuild_region(root, info)
        out_nodes = _distinct_outputs(region.ends)
        fbody, leaves, shapes = _function_body([region.inner[a] for a in out_nodes])
        name = self._fresh_name(info.target, info.label)
        gv, fn = _region_function(name, info.target, region.params, fbody)
        self.functions.append((info.label, gv, fn))
        call = new_call(gv, region.args, _NO_ATTRS, (), None, checked_type_or_none(fbody))
        self.outputs[root] = _caller_view(call, out_nodes, leaves, shapes)
        self.infos[root] = RegionInfo(  # not dataclasses.replace: this runs per region
            info.target,
            info.label,
            name,
            info.calls,
            info.num_ops,
            info.macs,
            None,
            sum(int(c.data.numpy().nbytes) for c in region.consts.values()),
            tuple(a for a in region.args if type(a) is Var),
            info.caller,
        )

    def _rebuild_region(self, root: int, info: RegionInfo) -> _RegionBody:
        """The members of region ``root`` rebuilt inside its function: each
        ``compiler_begin`` becomes a parameter (or a bound constant), every value taken
        from outside is checked to be a constant, an operator or bound inside."""
        target, label = info.target, info.label
        outer = self.outer
        begin_op, end_op = self.begin_op, self.end_op
        region = _RegionBody(f"{_safe_name(target)}_{label}_i")
        inner, by_input, consts = region.inner, region.by_input, region.consts
        used_vars: set[Var] = set()
        bound_vars: set[Var] = set()
        n: Any
        kid: Any
        for n in self.members[root]:
            t = type(n)
            if t is Call and n.op is begin_op:
                src = outer[n.args[0]]
                sub = by_input.get(src)
                if sub is None:
                    sub = region.add_input(n, src, self.bind_constants)
                inner[n] = sub
                continue
            if t is Call and n.op is end_op:
                region.ends.append(n)
                continue
            for kid in data_children(n):
                if kid in inner:
                    continue
                kt = type(kid)
                if kt is Constant:
                    consts[id(kid)] = kid
                elif kt is Var:
                    used_vars.add(kid)
                elif not _capturable(kid):
                    raise PartitionError(
                        f"a node inside region {label} of {target!r} uses a value from outside "
                        f"without compiler_begin: {_short(kid)} used by {_short(n)}"
                    )
            if t is Let:
                bound_vars.add(n.var)
            elif t is Function:
                bound_vars.update(n.params)
            elif t is Call:
                for c in embedded_constants(n):
                    consts[id(c)] = c
            inner[n] = rebuild_with(n, inner)
        _check_no_stray_vars(used_vars - bound_vars, label, target)
        return region

    def _fresh_name(self, target: str, label: int) -> str:
        """TVM's name for the function of region ``label``, made unique in the module."""
        name = mangle_name(self.mod_name, target, self.func_name, label)
        base, k = name, 1
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name


@dataclass
class _RegionBody:
    """A region being rebuilt as a function body: the rebuilt node of each member, the
    parameters and the caller's arguments, the ``compiler_end`` calls (its outputs)
    and the constants it holds."""

    param_prefix: str
    inner: dict[Expr, Expr] = field(default_factory=dict)
    params: list[Var] = field(default_factory=list)
    args: list[Expr] = field(default_factory=list)
    by_input: dict[Expr, Expr] = field(default_factory=dict)
    ends: list[Call] = field(default_factory=list)
    consts: dict[int, Constant] = field(default_factory=dict)

    def add_input(self, begin: Call, src: Expr, bind_constants: bool) -> Expr:
        """What stands for the outside value ``src`` inside: a new parameter, or
        ``src`` itself when it is a constant to bind."""
        sub: Expr
        if bind_constants and _is_constant(src):
            sub = src
            for c in src.fields if type(src) is Tuple else (src,):
                self.consts[id(c)] = c  # type: ignore[assignment]
        else:
            ty = checked_type_or_none(begin) or checked_type_or_none(src)
            param = Var(f"{self.param_prefix}{len(self.params)}", ty)
            _set_type(param, ty)
            self.params.append(param)
            self.args.append(src)
            sub = param
        self.by_input[src] = sub
        return sub


def _check_no_stray_vars(stray: set[Var], label: int, target: str) -> None:
    """Raises when a region uses variables bound outside it."""
    if stray:
        names = ", ".join(sorted("%" + v.name_hint for v in stray))
        raise PartitionError(
            f"region {label} of {target!r} uses variables bound outside it without "
            f"compiler_begin: {names}"
        )


def _distinct_outputs(ends: list[Call]) -> list[Expr]:
    """The outputs of a region: one per distinct ``compiler_end`` argument, in walk order."""
    out_nodes: list[Expr] = []
    seen: set[Expr] = set()
    for e in ends:
        a = e.args[0]
        if a not in seen:
            seen.add(a)
            out_nodes.append(a)
    return out_nodes


def _function_body(exprs: list[Expr]) -> tuple[Expr, list[Expr], list[_Shape]]:
    """The body returning ``exprs`` (one value, or a flat tuple of their tensor leaves),
    the leaves and each output's nesting shape (see :func:`_flatten`)."""
    leaves: list[Expr]
    shapes: list[_Shape]
    if len(exprs) == 1 and type(exprs[0]) is not Tuple:
        leaves, shapes = exprs, [None]
    else:
        leaves = []
        shapes = [_flatten(ex, leaves) for ex in exprs]
    if len(leaves) == 1:
        return leaves[0], leaves, shapes
    ty = TupleType([_type_of(f) for f in leaves])
    return new_tuple(leaves, None, ty), leaves, shapes


def _region_function(
    name: str, target: str, params: list[Var], body: Expr
) -> tuple[GlobalVar, Function]:
    """The global function of a region for ``target`` and its global variable, typed."""
    ret: Type | None = checked_type_or_none(body)
    attrs = Attrs({"Compiler": target, "Inline": 1, "Primitive": 1, "global_symbol": name})
    fn = Function(params, body, ret, None, attrs)
    fty = FuncType([_type_of(p) for p in params], ret) if ret is not None else None
    _set_type(fn, fty)
    gv = GlobalVar(name)
    _set_type(gv, fty)
    return gv, fn


def _caller_view(
    call: Expr, out_nodes: list[Expr], leaves: list[Expr], shapes: list[_Shape]
) -> dict[Expr, Expr]:
    """For each output of a region, what replaces it on the host: ``call`` itself or
    projections of it, nested as the output was."""
    if len(leaves) == 1 and shapes == [None]:
        return {out_nodes[0]: call}
    counter = [0]
    single = len(leaves) == 1
    return {
        a: _unflatten(call, shape, counter, single)
        for a, shape in zip(out_nodes, shapes, strict=True)
    }


def _type_of(e: Expr) -> Type:
    """The checked type of ``e``, which the partitioner only asks of typed nodes."""
    ty = checked_type_or_none(e)
    if ty is None:  # pragma: no cover - the passes run on typed functions
        raise PartitionError(f"a {type(e).__name__} in a region has no type: run InferType first")
    return ty


@functools.lru_cache(maxsize=64)
def _safe_name(target: str) -> str:
    """``target`` with every character other than a letter or digit made ``_``."""
    return re.sub(r"[^0-9A-Za-z]", "_", target)


def _is_constant(e: Expr) -> bool:
    if type(e) is Constant:
        return True
    return type(e) is Tuple and bool(e.fields) and all(type(f) is Constant for f in e.fields)


def _capturable(e: Expr) -> bool:
    t = type(e)
    return (
        t is Constant
        or t is Op
        or t is GlobalVar
        or t is Var
        or (type(e) is Tuple and not e.fields)
        or (type(e) is Function and "Composite" in e.attrs)
    )


def _short(e: Expr) -> str:
    if type(e) is Call:
        op = e.op
        return f"call of {op.name if type(op) is Op else type(op).__name__}"
    if type(e) is Var:
        return "%" + e.name_hint
    return type(e).__name__


def _set_type(node: Expr, ty: Type | None) -> None:
    if ty is not None:
        node.set_checked_type(ty)


def _flatten(e: Expr, out: list[Expr]) -> _Shape:
    """Append the tensor leaves of ``e`` (tuples taken apart) to ``out``; return the
    nesting shape (None for a leaf, else a list of shapes)."""
    if type(e) is Tuple:
        return [_flatten(f, out) for f in e.fields]
    ty = checked_type_or_none(e)
    if isinstance(ty, TupleType):
        return [
            _flatten(new_tuple_get_item(e, i, None, fty), out) for i, fty in enumerate(ty.fields)
        ]
    out.append(e)
    return None


def _unflatten(call: Expr, shape: _Shape, counter: list[int], single: bool) -> Expr:
    """The caller's view of one output: projections of ``call`` nested like ``shape``."""
    if shape is None:
        i = counter[0]
        counter[0] += 1
        if single:
            return call
        ty = checked_type_or_none(call)
        fty = ty.fields[i] if isinstance(ty, TupleType) else None
        return new_tuple_get_item(call, i, None, fty)
    fields = [_unflatten(call, s, counter, single) for s in shape]
    return new_tuple(fields, None, TupleType([_type_of(f) for f in fields]))


def _run_region_hook(fn: Function) -> Function:
    """``fn`` after the global function ``relay.ext.<compiler>.optimize`` registered with
    ``tvm.register_func``, if any: as TVM's PartitionGraph does, the hook gets a module
    whose ``main`` is the region function (without its partitioning attributes) and
    returns it optimised (``FoldConstant`` folds the constants bound into the region).
    A backend record's own optimize hook is not run here: it runs on the whole module
    before partitioning (:func:`~relaykit.byoc.partition_for`)."""
    compiler = str(fn.attrs["Compiler"])
    hook = func_registry.get(f"{EXT_PREFIX}{compiler}.optimize")
    if hook is None:
        return fn
    attrs = dict(fn.attrs.items())
    bare = fn.without_attrs(*attrs)
    out = hook(InferType()(IRModule.from_expr(bare)))
    if not isinstance(out, IRModule) or "main" not in [g.name_hint for g in out.get_global_vars()]:
        raise PartitionError(
            f"{EXT_PREFIX}{compiler}.optimize must return the IRModule it was given "
            f"(with its main function), got {type(out).__name__}"
        )
    new = InferType()(out)["main"]
    return new.with_attrs(attrs)


def partition_module(
    mod: IRModule, mod_name: str = "default", bind_constants: bool = True
) -> tuple[IRModule, list[RegionInfo]]:
    """``mod`` partitioned, and every region found (kept or pruned)."""
    out = mod.copy()
    taken = {gv.name_hint for gv in mod.get_global_vars()}
    infos: list[RegionInfo] = []
    for gv, fn in mod.items():
        if "Compiler" in fn.attrs or "Composite" in fn.attrs:
            continue
        fn = ensure_typed(fn, mod)
        part = _Partitioner(fn.body, gv.name_hint, mod_name, bind_constants, taken)
        if not part.infos and not part.has_annotations:
            continue
        new_body = part.run()
        new_fn = copy_type(fn.with_fields(body=new_body), fn)
        out.update_func(gv, new_fn)  # type: ignore[arg-type]
        for _, fgv, f in sorted(part.functions, key=lambda item: item[0]):
            out.update_func(fgv, _run_region_hook(f))
        infos.extend(sorted(part.infos.values(), key=lambda i: i.label))
    return out, infos


class PartitionGraph(Pass):
    """``relay.transform.PartitionGraph(mod_name="default", bind_constants=True)``."""

    def __init__(self, mod_name: str = "default", bind_constants: bool = True) -> None:
        self.mod_name = str(mod_name)
        self.bind_constants = bool(bind_constants)
        self.info = PassInfo(0, "PartitionGraph")

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        with no_gc():
            return partition_module(mod, self.mod_name, self.bind_constants)[0]


def region_functions(mod: IRModule) -> list[str]:
    """Names of the functions of ``mod`` that an external compiler handles."""
    return [gv.name_hint for gv, fn in mod.items() if "Compiler" in fn.attrs]
