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

import re
from dataclasses import dataclass, field

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
from .targets import get_target_spec

__all__ = [
    "PartitionGraph",
    "RegionInfo",
    "partition_module",
    "mangle_name",
    "prune_reason",
    "region_functions",
]


_NO_ATTRS = Attrs({})


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


def prune_reason(target: str, num_ops: int, macs: int) -> str | None:
    """Why a region of ``target`` that size goes back to the host (None: it stays)."""
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
        for root, nodes in self.members.items():
            target = self.rs.target(root)
            spec = get_target_spec(target)
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
            pruned = prune_reason(target, ops, macs)
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
        info = self.infos[root]
        target, label = info.target, info.label
        safe_target = re.sub(r"[^0-9A-Za-z]", "_", target)
        outer = self.outer
        begin_op, end_op = self.begin_op, self.end_op
        inner: dict[Expr, Expr] = {}
        params: list[Var] = []
        args: list[Expr] = []
        by_input: dict[Expr, Expr] = {}
        ends: list[Call] = []
        consts: dict[int, Constant] = {}
        used_vars: set[Var] = set()
        bound_vars: set[Var] = set()
        for n in self.members[root]:
            t = type(n)
            if t is Call and n.op is begin_op:
                src = outer[n.args[0]]
                sub = by_input.get(src)
                if sub is None:
                    if self.bind_constants and _is_constant(src):
                        sub = src
                        for c in src.fields if type(src) is Tuple else (src,):
                            consts[id(c)] = c  # type: ignore[assignment]
                    else:
                        ty = checked_type_or_none(n) or checked_type_or_none(src)
                        sub = Var(f"{safe_target}_{label}_i{len(params)}", ty)
                        _set_type(sub, ty)
                        params.append(sub)  # type: ignore[arg-type]
                        args.append(src)
                    by_input[src] = sub
                inner[n] = sub
                continue
            if t is Call and n.op is end_op:
                ends.append(n)
                continue
            for kid in data_children(n):
                if kid in inner:
                    continue
                kt = type(kid)
                if kt is Constant:
                    consts[id(kid)] = kid  # type: ignore[assignment]
                elif kt is Var:
                    used_vars.add(kid)  # type: ignore[arg-type]
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
        stray = used_vars - bound_vars
        if stray:
            names = ", ".join(sorted("%" + v.name_hint for v in stray))
            raise PartitionError(
                f"region {label} of {target!r} uses variables bound outside it without "
                f"compiler_begin: {names}"
            )
        # Outputs: one per distinct compiler_end argument, in walk order.
        out_nodes: list[Expr] = []
        seen: set[Expr] = set()
        for e in ends:
            a = e.args[0]
            if a not in seen:
                seen.add(a)
                out_nodes.append(a)
        exprs = [inner[a] for a in out_nodes]
        if len(exprs) == 1 and type(exprs[0]) is not Tuple:
            leaves, shapes = exprs, [None]
        else:
            leaves = []
            shapes = [_flatten(ex, leaves) for ex in exprs]
        if len(leaves) == 1:
            fbody = leaves[0]
        else:
            fbody = new_tuple(leaves, None, TupleType([checked_type_or_none(f) for f in leaves]))
        ret: Type | None = checked_type_or_none(fbody)
        name = mangle_name(self.mod_name, target, self.func_name, label)
        base, k = name, 1
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        attrs = Attrs({"Compiler": target, "Inline": 1, "Primitive": 1, "global_symbol": name})
        fn = Function(params, fbody, ret, None, attrs)
        fty = FuncType([checked_type_or_none(p) for p in params], ret) if ret is not None else None
        _set_type(fn, fty)
        gv = GlobalVar(name)
        _set_type(gv, fty)
        self.functions.append((label, gv, fn))
        call = new_call(gv, args, _NO_ATTRS, (), None, ret)
        outputs: dict[Expr, Expr] = {}
        if len(leaves) == 1 and shapes == [None]:
            outputs[out_nodes[0]] = call
        else:
            counter = [0]
            single = len(leaves) == 1
            for a, shape in zip(out_nodes, shapes, strict=True):
                outputs[a] = _unflatten(call, shape, counter, single)
        self.outputs[root] = outputs
        const_bytes = sum(int(c.data.numpy().nbytes) for c in consts.values())
        self.infos[root] = RegionInfo(
            target,
            label,
            name,
            info.calls,
            info.num_ops,
            info.macs,
            None,
            const_bytes,
            tuple(a for a in args if type(a) is Var),
            caller=self.func_name,
        )


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
        or (t is Tuple and not e.fields)
        or (t is Function and "Composite" in e.attrs)
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


def _flatten(e: Expr, out: list[Expr]) -> object:
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


def _unflatten(call: Expr, shape: object, counter: list[int], single: bool) -> Expr:
    """The caller's view of one output: projections of ``call`` nested like ``shape``."""
    if shape is None:
        i = counter[0]
        counter[0] += 1
        if single:
            return call
        ty = checked_type_or_none(call)
        fty = ty.fields[i] if isinstance(ty, TupleType) else None
        return new_tuple_get_item(call, i, None, fty)
    fields = [_unflatten(call, s, counter, single) for s in shape]  # type: ignore[attr-defined]
    return new_tuple(fields, None, TupleType([checked_type_or_none(f) for f in fields]))


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
            out.update_func(fgv, f)
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
