"""``FuseOps``: group operators into ``Primitive`` functions, as Relay's pass does.

Every operator call ends up in a function literal with ``Primitive=1``,
called in its place; the grouping follows the operators' fusion patterns
(``TOpPattern``: elementwise < broadcast < injective < reduction <
out-elementwise-fusable < tuple < opaque) over the post-dominator tree of the
dataflow graph, in TVM's three phases:

0. an out-elementwise-fusable operator (``nn.conv2d``, ``nn.dense``) absorbs the
   elementwise operators its result flows into, and elementwise/broadcast
   operators fuse into an injective or reducing post-dominator;
1. injective operators and tuples fuse into an injective post-dominator;
2. elementwise/injective operators fuse into a tuple that an injective
   operator has already absorbed (``concatenate((log(x), exp(x)))``).

A node fuses only into its post-dominator, and only when every node on every
path between them satisfies the phase's condition, so a group never waits for
its own output. Scalar constants are fused into the functions that use them;
other constants, variables, calls of global or external functions, ``if`` and
``let`` stay outside (their values become the functions' parameters
``p0``, ``p1``...). ``fuse_opt_level=0`` puts every operator in a function of its
own. ``annotation.stop_fusion`` is removed, and nothing fuses across it.
Functions already ``Primitive`` and functions for external compilers are left
as they are.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 2))
>>> mod = tvm.IRModule.from_expr(relay.Function([x], relay.exp(relay.add(x, x))))
>>> fused = FuseOps(2)(mod)["main"].body
>>> fused.op.attrs["Primitive"], fused.op.body.op.name, fused.op.body.args[0].op.name
(1, 'exp', 'add')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    checked_type_or_none,
)
from relaykit.ir.functor import post_order, rebuild
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op, default_registry
from relaykit.ir.types import TensorType, Type
from relaykit.op.define import OpPattern
from relaykit.target import Target

from .fuse_args import ArgCounter, initial_args
from .infer_type import InferType
from .pass_infra import Pass, PassContext, PassInfo

__all__ = ["FuseOps", "fuse_ops"]

_ELEMWISE = OpPattern.ELEMWISE
_BROADCAST = OpPattern.BROADCAST
_INJECTIVE = OpPattern.INJECTIVE
_REDUCE = OpPattern.COMM_REDUCE
_OUT_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
_TUPLE = OpPattern.TUPLE
_OPAQUE = OpPattern.OPAQUE

#: The scalar constant dtypes fused into functions (others stay parameters, as in TVM).
_SIMPLE_CONST = frozenset({"int32", "int64", "float32", "float64", "bool"})

#: The PassContext option bounding how many operators one function may hold.
MAX_DEPTH_KEY = "relay.FuseOps.max_depth"
#: The PassContext option keeping constants inside the functions that use them (TVM's
#: ``link_params``) instead of passing them in as parameters.
LINK_PARAMS_KEY = "relay.FuseOps.link_params"
_DEFAULT_MAX_DEPTH = 256


def _is_primitive(fn: Function) -> bool:
    return bool(fn.attrs) and bool(fn.attrs.get("Primitive") or fn.attrs.get("Compiler"))


def _op_pattern(op: Op) -> int:
    try:
        pattern = default_registry.get_attr(op.name, "TOpPattern")
    except Exception:  # an operator without the attribute: opaque
        return _OPAQUE
    return _OPAQUE if pattern is None else int(pattern)


def _non_computational(op: Op) -> bool:
    """Annotations the pass leaves as they are (TVM's ``TNonComputational``)."""
    return op.name.startswith("annotation.") and op.name != "annotation.stop_fusion"


class _Graph:
    """TVM's indexed forward graph: nodes in post-order, each with its pattern, its
    consumers with the pattern of each edge, and whether something outside the graph
    (the function's result, a ``let``, a branch) refers to it."""

    def __init__(self, body: Expr, params: Sequence[Var]) -> None:
        self.nodes: list[Expr] = []
        self.index: dict[Expr, int] = {}
        self.pattern: list[int] = []
        self.outputs: list[list[tuple[int, int]]] = []
        self.extern: list[bool] = []
        order = [
            n
            for n in post_order(body, skip=lambda e: type(e) is Function and _is_primitive(e))
            if type(n) is not Op
        ]
        for n in order:
            self.index[n] = len(self.nodes)
            self.nodes.append(n)
            self.pattern.append(_OPAQUE)
            self.outputs.append([])
            self.extern.append(False)
        for n in order:
            self._add(n)
        for p in params:
            self._update(p, None, _OPAQUE)
        self._update(body, None, _OPAQUE)

    def _update(self, node: Expr, parent: int | None, pattern: int) -> None:
        i = self.index.get(node)
        if i is None:
            return
        if parent is None:
            self.extern[i] = True
        else:
            self.outputs[i].append((parent, pattern))

    def _add(self, node: Expr) -> None:
        i = self.index[node]
        update = self._update
        if type(node) is Call:
            op = node.op
            pattern = _OPAQUE
            if type(op) is Op:
                pattern = _op_pattern(op)
            else:
                update(op, i, _OPAQUE)
            self.pattern[i] = pattern
            rtype = checked_type_or_none(node)
            for a in node.args:
                edge = pattern
                atype = checked_type_or_none(a)
                if (
                    edge == _BROADCAST
                    and isinstance(atype, TensorType)
                    and isinstance(rtype, TensorType)
                    and tuple(atype.shape) == tuple(rtype.shape)
                ):
                    edge = _ELEMWISE
                update(a, i, edge)
        elif type(node) is Constant:
            data = node.data
            arr = data.numpy() if hasattr(data, "numpy") else np.asarray(data)
            simple = arr.ndim == 0 and arr.dtype.name in _SIMPLE_CONST
            self.pattern[i] = _ELEMWISE if simple else _OPAQUE
        elif type(node) is Tuple:
            self.pattern[i] = _TUPLE
            for f in node.fields:
                tensor = isinstance(checked_type_or_none(f), TensorType)
                update(f, i if tensor else None, _INJECTIVE if tensor else _OPAQUE)
        elif type(node) is TupleGetItem:
            self.pattern[i] = _INJECTIVE
            update(node.tuple_value, i, _INJECTIVE)
        elif type(node) is Function:  # a closure: its body is fused on its own
            for p in node.params:
                update(p, None, _OPAQUE)
            update(node.body, None, _OPAQUE)
        elif type(node) is Let:
            for c in (node.var, node.value, node.body):
                update(c, None, _OPAQUE)
        elif type(node) is If:
            for c in (node.cond, node.true_branch, node.false_branch):
                update(c, None, _OPAQUE)
        # variables, globals and the rest: opaque leaves


class _DomTree:
    """The post-dominator tree: each node's parent is the lowest common ancestor of its
    consumers, with the strongest edge pattern met on the way."""

    def __init__(self, g: _Graph) -> None:
        n = len(g.nodes)
        self.parent: list[int | None] = [None] * n
        self.depth = [1] * n
        self.pattern = [_OPAQUE] * n
        for i in range(n - 1, -1, -1):
            if g.extern[i] or not g.outputs[i]:
                continue
            pattern = _ELEMWISE
            outs = g.outputs[i]
            first, first_pat = outs[0]
            pattern = max(pattern, first_pat)
            parent: int | None = first
            for j, pat in outs[1:]:
                parent, pattern = self._lca(parent, j, pattern)
                pattern = max(pattern, pat)
            self.parent[i] = parent
            self.pattern[i] = pattern
            self.depth[i] = 1 if parent is None else self.depth[parent] + 1

    def _lca(self, a: int | None, b: int | None, pattern: int) -> tuple[int | None, int]:
        while a != b:
            if a is None or b is None:
                return None, pattern
            if self.depth[a] < self.depth[b]:
                pattern = max(pattern, self.pattern[b])
                b = self.parent[b]
            elif self.depth[a] > self.depth[b]:
                pattern = max(pattern, self.pattern[a])
                a = self.parent[a]
            else:
                pattern = max(pattern, self.pattern[a], self.pattern[b])
                a, b = self.parent[a], self.parent[b]
        return a, pattern


class _Groups:
    """Union-find over the nodes; each group keeps a pattern, a size and its root node."""

    def __init__(self, g: _Graph) -> None:
        n = len(g.nodes)
        self.up = list(range(n))
        self.pattern = list(g.pattern)
        self.size = [1] * n
        self.anchor = [p == _OUT_FUSABLE for p in g.pattern]
        self.args = [initial_args(node) for node in g.nodes]

    def find(self, i: int) -> int:
        root = i
        while self.up[root] != root:
            root = self.up[root]
        while self.up[i] != root:
            self.up[i], i = root, self.up[i]
        return root

    def merge(self, child: int, parent: int) -> None:
        c, p = self.find(child), self.find(parent)
        if c == p:
            return
        self.size[p] += self.size[c]
        self.args[p] += self.args[c]
        self.up[c] = p
        if self.anchor[c]:
            self.anchor[p] = True
            self.pattern[p] = max(self.pattern[c], self.pattern[p])


class _Partitioner:
    def __init__(self, g: _Graph, max_depth: int, max_args: int = 0) -> None:
        self.g = g
        self.tree = _DomTree(g)
        self.groups = _Groups(g)
        self.max_depth = max_depth
        self.args = ArgCounter(g, self.groups, max_args)

    def _path_ok(self, src: int, sink: int, cond: Any) -> bool:
        g, groups = self.g, self.groups
        seen: set[int] = set()
        stack = [j for j, _ in g.outputs[src]]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            if not cond(groups.pattern[groups.find(i)], i == sink):
                return False
            if i != sink:
                stack.extend(j for j, _ in g.outputs[i])
        return True

    def _commit(self, src: int, sink: int) -> None:
        g, groups = self.g, self.groups
        waiting = self.args.postpone
        if waiting is not None:  # an input of the consumer is not counted yet
            self.args.postponed.setdefault(waiting, []).append(src)
            return
        target = sink
        seen: set[int] = set()
        stack = [src]
        while stack:
            i = stack.pop()
            if i == sink or i in seen:
                continue
            seen.add(i)
            groups.merge(i, target)
            stack.extend(j for j, _ in g.outputs[i])

    def _count_with(self, child: int, parent: int) -> int:
        g, groups = self.g, self.groups
        total = groups.size[groups.find(parent)]
        seen: set[int] = set()
        stack = [child]
        while stack:
            i = stack.pop()
            if i == parent or i in seen:
                continue
            seen.add(i)
            total += groups.size[groups.find(i)]
            stack.extend(j for j, _ in g.outputs[i])
        return total

    def run(self, opt_level: int) -> _Groups:
        if opt_level == 0:
            return self.groups
        for phase in range(3):
            for i in range(len(self.g.nodes)):
                self._visit(i, phase)
        return self.groups

    def _visit(self, i: int, phase: int) -> None:
        """Try to fuse node ``i`` into its post-dominator, by the rules of ``phase``."""
        groups, parent = self.groups, self.tree.parent[i]
        self.args.postpone = None
        self._resume(i)
        # The patterns of the nodes' own group records, as TVM reads them.
        if groups.pattern[i] == _OPAQUE or parent is None:
            return
        if self._count_with(i, parent) > self.max_depth:
            return
        if self.args.too_many(i):
            return
        cond = self._phase2_rule(i, parent) if phase == 2 else self._rule(i, parent, phase)
        if cond is not None and self._path_ok(i, parent, cond):
            self._commit(i, parent)

    def _resume(self, i: int) -> None:
        """Fuse the producers whose fusion into ``i`` waited for ``i``'s inputs to be
        counted, when ``i``'s arguments now fit."""
        waiting = self.args.postponed.pop(i, ())
        for src in waiting:
            if self.args.count(i, postpone=False) > self.args.limit(i):
                continue
            sink = self.tree.parent[src]
            if sink is not None and not self.groups.anchor[sink]:
                self._commit(src, sink)

    def _phase2_rule(self, i: int, parent: int) -> Any:
        """Phase 2: elementwise/injective nodes join a tuple that an injective
        operator has absorbed."""
        groups = self.groups
        root = groups.find(parent)
        if groups.pattern[i] > _INJECTIVE or groups.pattern[root] == _TUPLE:
            return None
        if groups.pattern[parent] == _TUPLE and groups.pattern[root] <= _INJECTIVE:
            return _injective_path
        return None

    def _rule(self, i: int, parent: int, phase: int) -> Any:
        """Phases 0 and 1: the path condition for fusing ``i`` into ``parent``, or None."""
        groups = self.groups
        own = groups.pattern[i]
        if groups.find(i) == groups.find(parent) or groups.pattern[parent] == _TUPLE:
            return None
        edge = self.tree.pattern[i]
        if own == _OUT_FUSABLE:
            return _broadcast_path if phase == 0 and edge == _ELEMWISE else None
        if own <= _BROADCAST:
            return _to_anchor_path if edge <= _INJECTIVE or edge == _REDUCE else None
        if own in (_INJECTIVE, _TUPLE) and phase == 1:
            return _injective_path
        return None


def _injective_path(kind: int, sink: bool) -> bool:
    return kind <= _INJECTIVE


def _broadcast_path(kind: int, sink: bool) -> bool:
    return kind <= _BROADCAST


def _to_anchor_path(kind: int, sink: bool) -> bool:
    """Elementwise to injective nodes on the way; the sink may also be a reduction or an
    out-elementwise-fusable group."""
    if not sink:
        return kind <= _INJECTIVE
    return kind <= _INJECTIVE or kind in (_REDUCE, _OUT_FUSABLE)


def _type_of(e: Expr) -> Type | None:
    t = checked_type_or_none(e)
    if t is None and type(e) is Var:
        t = e.type_annotation
    return t


class _Rewriter:
    """Builds the fused program from the groups (TVM's ``FuseMutator``)."""

    def __init__(self, g: _Graph, groups: _Groups, link_params: bool = False) -> None:
        self.g = g
        self.groups = groups
        self.link_params = link_params
        self.root = [groups.find(i) for i in range(len(g.nodes))]
        self.outer: dict[Expr, Expr] = {}

    def group_of(self, e: Expr) -> int | None:
        i = self.g.index.get(e)
        return None if i is None else self.root[i]

    def out(self, e: Expr) -> Expr:
        return self.outer.get(e, e)

    def run(self, body: Expr) -> Expr:
        g = self.g
        for i, node in enumerate(g.nodes):
            if self.root[i] != i:
                continue  # built inside its group's function
            self.outer[node] = self._outer(i, node)
        return self.out(body)

    def _outer(self, i: int, node: Expr) -> Expr:
        if type(node) is Call and type(node.op) is Op:
            if node.op.name == "annotation.stop_fusion":
                return self.out(node.args[0])
            if not _non_computational(node.op):
                return self._make_function(i, node)
        elif type(node) is TupleGetItem and self.groups.size[i] > 1:
            return self._make_function(i, node)
        return rebuild(node, self.out)

    def _make_function(self, root: int, node: Expr) -> Expr:
        """``fn (p0, p1...) Primitive=1 { the group }`` called with the group's inputs."""
        g = self.g
        params: list[Var] = []
        args: list[Expr] = []
        param_of: dict[Expr, Var] = {}
        inner: dict[Expr, Expr] = {}

        def external(a: Expr) -> Expr:
            new = self.out(a)
            if self.link_params and type(new) is Constant:
                return new
            p = param_of.get(new)
            if p is None:
                ty = _type_of(a)
                p = Var(f"p{len(params)}", ty)
                param_of[new] = p
                params.append(p)
                args.append(new)
            return p

        def arg_of(a: Expr) -> Expr:
            group = self.group_of(a)
            if group is None:  # an operator
                return a
            return inner[a] if group == root else external(a)

        # Visit the group as TVM's recursive mutator does (arguments left to right, each
        # argument's own inputs first), so parameters are numbered in TVM's order.
        stack: list[tuple[Expr, int]] = [(node, 0)]
        while stack:
            cur, k = stack.pop()
            kids = _operands(cur)
            if k < len(kids):
                stack.append((cur, k + 1))
                kid = kids[k]
                j = g.index.get(kid)
                if j is not None and self.root[j] == root and kid not in inner:
                    stack.append((kid, 0))
                elif j is not None and self.root[j] != root:
                    external(kid)
                continue
            inner[cur] = self._rebuild_inner(cur, arg_of)
        body = inner[node]
        fn = Function(params, body, _type_of(node)).with_attr("Primitive", 1)
        return Call(fn, args)

    def _rebuild_inner(self, cur: Expr, arg_of: Any) -> Expr:
        if type(cur) is Call and type(cur.op) is Op and cur.op.name == "annotation.stop_fusion":
            return arg_of(cur.args[0])
        return rebuild(cur, arg_of)


def _operands(e: Expr) -> list[Expr]:
    if type(e) is Call:
        return list(e.args)
    if type(e) is Tuple:
        return list(e.fields)
    if type(e) is TupleGetItem:
        return [e.tuple_value]
    return []


def fuse_ops(
    func: Function,
    opt_level: int = 2,
    max_depth: int = _DEFAULT_MAX_DEPTH,
    max_args: int = 0,
    link_params: bool = False,
) -> Function:
    """``func`` (type-checked) with its operators grouped into ``Primitive`` functions
    (see the module docstring); ``func`` itself when it is primitive or external.
    ``max_args`` (0: no limit) bounds the kernel arguments of one function; with
    ``link_params`` a constant input of a group stays in its function."""
    if _is_primitive(func):
        return func
    g = _Graph(func.body, func.params)
    groups = _Partitioner(g, max_depth, max_args).run(opt_level)
    body = _Rewriter(g, groups, link_params).run(func.body)
    if body is func.body:
        return func
    return func.with_fields(body=body)


class FuseOps(Pass):
    """``relay.transform.FuseOps(fuse_opt_level=-1)``: TVM's operator fusion (see the module
    docstring). ``fuse_opt_level=-1`` takes the PassContext's opt_level; the PassContext
    option ``"relay.FuseOps.max_depth"`` bounds the operators of one function (256), the
    current target's ``max_function_args`` (``with Target("opencl"):``) its kernel
    arguments (:mod:`.fuse_args`), and ``"relay.FuseOps.link_params"`` keeps constant
    inputs inside the functions."""

    def __init__(self, fuse_opt_level: int = -1) -> None:
        self.fuse_opt_level = int(fuse_opt_level)
        self.info = PassInfo(0, "FuseOps", ("InferType",))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        level = ctx.opt_level if self.fuse_opt_level == -1 else self.fuse_opt_level
        depth = int(ctx.config.get(MAX_DEPTH_KEY) or _DEFAULT_MAX_DEPTH)
        target = Target.current()
        max_args = 0 if target is None else target.max_function_args
        link = bool(ctx.config.get(LINK_PARAMS_KEY) or False)
        mod = InferType()(mod)
        out = mod.copy()
        changed = False
        for gv, fn in mod.items():
            new = fuse_ops(fn, level, depth, max_args, link)
            if new is not fn:
                out[gv] = new
                changed = True
        return InferType()(out) if changed else mod
