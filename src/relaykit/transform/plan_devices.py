"""``PlanDevices``: decide which (virtual) device holds every value, as TVM's pass does.

Constraints come from ``on_device`` annotations, ``device_copy`` calls, the
virtual devices already on function parameters and results, and the operators
that keep shapes on the host. The pass

0. rewrites ``on_device`` in three places: one that is let-bound or is a function's
   body fixes the variable or result too; ``on_device(t).i`` is placed on the
   projection (copy the field, not the tuple);
1. inserts a ``device_copy`` where one value is an argument of two calls that
   pin it to different devices;
2. collects the constraints into device domains and unifies them (see
   :mod:`relaykit.transform.device_domains`); contradictions raise
   :class:`~relaykit.errors.DevicePlanningError`;
3. defaults what is still open: a function's result to the default device
   (``relay.fallback_device_type``), its parameters to its result's device, a
   let-bound value to the let's device;
4. writes the answer into the program: every parameter and function carries its
   virtual device, a ``device_copy`` (with an ``on_device`` on its argument) stands
   wherever a value crosses devices, and let-bound values and arguments on another
   device than their context are wrapped in a fixed ``on_device``.

The result is a fixed point: planning a planned module changes nothing.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> f = relay.Function([x], relay.annotation.on_device(x + x, tvm.cpu()) * x)
>>> mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
>>> config = tvm.target.make_compilation_config(None, ["llvm"])
>>> planned = relay.transform.PlanDevices(config)(mod)
>>> planned["main"].params[0].virtual_device_.device_type
1
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from relaykit.errors import DevicePlanningError
from relaykit.ir.adt import Clause, Constructor, Match, PatternVar
from relaykit.ir.expr import Call, Expr, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from relaykit.ir.fields import CHILDREN_OF
from relaykit.ir.functor import rebuild
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.ref import RefCreate, RefRead, RefWrite
from relaykit.ir.types import Type
from relaykit.op.device import device_copy, on_device
from relaykit.target import CompilationConfig, VirtualDevice
from relaykit.target.virtual_device import FULLY_UNCONSTRAINED

from .device_domains import (
    DeviceDomains,
    describe_expr,
    device_copy_props,
    on_device_props,
)
from .infer_type import InferType
from .pass_infra import ModulePass, PassContext

__all__ = ["PlanDevices", "plan_devices", "maybe_on_device_fixed"]


def _is_primitive(fn: Function) -> bool:
    return bool(fn.attrs.get("Primitive", 0))


def _optimizable(mod: IRModule) -> Iterator[tuple[GlobalVar, Function]]:
    """The module's Relay functions that are not for an external compiler."""
    for gv, fn in mod.functions.items():
        if not isinstance(fn, Function):
            continue
        if fn.attrs.get("Compiler") or fn.attrs.get("Extern") or fn.attrs.get("SkipOptimization"):
            continue
        yield gv, fn


def _walk(root: Expr) -> Iterator[Expr]:
    """Every node under ``root`` once, children first, not entering primitive functions."""
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    keep: list[Expr] = []
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        keep.append(node)
        stack.append((node, True))
        if type(node) is Function and _is_primitive(node):
            stack.extend((p, False) for p in reversed(node.params))
            continue
        stack.extend((c, False) for c in reversed(CHILDREN_OF[type(node)](node)))


def _rebuild_all(root: Expr, fpost: dict[type, object] | None, step: object) -> Expr:
    """Bottom-up rebuild of ``root``; ``step(rebuilt, original)`` may replace a node."""
    memo: dict[Expr, Expr] = {}
    for node in _walk(root):
        if type(node) is Function and _is_primitive(node):
            memo[node] = node
            continue
        rebuilt = rebuild(node, memo.__getitem__)
        out = step(rebuilt, node)  # type: ignore[operator]
        memo[node] = rebuilt if out is None else out
    return memo[root]


# -- helpers on on_device ---------------------------------------------------------------------
def maybe_on_device_fixed(body: Expr, vd: VirtualDevice) -> Expr:
    """``body`` fixed (result and body) on ``vd``: nothing for an unconstrained device or
    a body whose device is tracked otherwise (variables, globals, functions, operators);
    a nested ``on_device`` is merged into one."""
    if vd.is_fully_unconstrained:
        return body
    if isinstance(body, (Op, Constructor, GlobalVar, Var, Function)):
        return body
    props = on_device_props(body)
    if props is not None:
        inner_body, inner_vd, _inner_result, inner_constrain_body = props
        if inner_constrain_body and inner_vd != vd:
            raise DevicePlanningError(
                f"nested on_device annotations fix {describe_expr(inner_body)} to two "
                f"different devices ({inner_vd} and {vd}): keep one of them",
                expr=body,
            )
        return on_device(inner_body, vd, constrain_result=True, constrain_body=True)
    return on_device(body, vd, constrain_result=True, constrain_body=True)


def _is_normal(props: tuple[Expr, VirtualDevice, bool, bool] | None) -> bool:
    return props is not None and props[3] and not props[2]


# -- phase 0: rewrite on_device ---------------------------------------------------------------
def _rewrite_step(rebuilt: Expr, original: Expr) -> Expr | None:
    t = type(rebuilt)
    if t is TupleGetItem:
        props = on_device_props(rebuilt.tuple_value)
        if _is_normal(props):
            assert props is not None
            return on_device(rebuilt, props[1], constrain_result=False, constrain_body=True)
    elif t is Let:
        props = on_device_props(rebuilt.value)
        if _is_normal(props):
            assert props is not None
            return rebuilt.with_fields(value=maybe_on_device_fixed(props[0], props[1]))
    elif t is Function:
        props = on_device_props(rebuilt.body)
        if _is_normal(props):
            assert props is not None
            return rebuilt.with_fields(body=maybe_on_device_fixed(props[0], props[1]))
    return None


def _rewrite_on_devices(fn: Function) -> Expr:
    return _rebuild_all(fn, None, _rewrite_step)


# -- phase 1: copies for arguments pinned to two devices ---------------------------------------
class _Conflicts:
    """Arguments that two calls (an ``on_device`` body and another operand) place on
    different devices: those get a ``device_copy`` before the planning proper."""

    def __init__(self, config: CompilationConfig) -> None:
        self.config = config
        self.device: dict[int, VirtualDevice] = {}
        self.conflicted: set[int] = set()
        self.keep: list[Expr] = []

    def _of(self, e: Expr) -> VirtualDevice:
        return self.device.get(id(e), FULLY_UNCONSTRAINED)

    def _update(self, e: Expr, vd: VirtualDevice) -> bool:
        from relaykit.target.virtual_device import join_virtual_devices

        old = self.device.get(id(e))
        if old is None:
            self.device[id(e)] = vd
            self.keep.append(e)
            return True
        joined = join_virtual_devices(old, vd)
        if joined is None:
            return False
        self.device[id(e)] = joined
        return True

    def find(self, fn: Function) -> None:
        seen: set[int] = set()
        stack: list[Expr] = [fn]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            self.keep.append(node)
            if type(node) is not Call:
                stack.extend(reversed(CHILDREN_OF[type(node)](node)))
                continue
            call_vd = body_vd = self._of(node)
            props = on_device_props(node)
            copy = device_copy_props(node)
            if props is not None:
                if props[3]:
                    body_vd = props[1]
                if props[2]:
                    call_vd = props[1]
            elif copy is not None:
                body_vd, call_vd = copy[1], copy[2]
            if not self._update(node, call_vd) and props is None:
                raise DevicePlanningError(
                    f"{describe_expr(node)} produces its value on {call_vd} but its user "
                    f"needs it on {self._of(node)}: add a device_copy after it",
                    expr=node,
                )
            for arg in node.args:
                if not self._update(arg, body_vd):
                    self.conflicted.add(id(arg))
            stack.extend(reversed(node.args))

    def finish(self) -> None:
        """An ``on_device`` is never itself the conflicted argument."""
        for e in self.keep:
            if id(e) in self.conflicted and on_device_props(e) is not None:
                self.conflicted.discard(id(e))

    def rewrite(self, fn: Function) -> Expr:
        if not self.conflicted:
            return fn

        def step(rebuilt: Expr, original: Expr) -> Expr | None:
            if type(original) is not Call:
                return None
            args = []
            changed = False
            for old, new in zip(original.args, rebuilt.args, strict=True):
                if id(old) in self.conflicted and new is old:
                    src = self.config.canonical_virtual_device(self._of(old))
                    dst = self.config.canonical_virtual_device(self._of(original))
                    if src != dst:
                        new = device_copy(new, src, dst)
                        changed = True
                args.append(new)
            return rebuilt.with_fields(args=args) if changed else None

        return _rebuild_all(fn, None, step)


# -- phase 2: collect constraints -------------------------------------------------------------
def _analyze(mod: IRModule, domains: DeviceDomains) -> None:
    for gv, fn in _optimizable(mod):
        domains.unify_exprs(gv, fn)
        for node in _walk(fn):
            _constrain(node, domains)


def _constrain(node: Expr, d: DeviceDomains) -> None:
    t = type(node)
    if t is Call:
        callee = d.domain_for_callee(node)
        if callee.arity != len(node.args):
            raise DevicePlanningError(
                f"{describe_expr(node)} passes {len(node.args)} arguments to a function of "
                f"{callee.arity} parameters",
                expr=node,
            )
        implied = d.higher_order([*(d.domain_for(a) for a in node.args), d.domain_for(node)])
        if d.unify(callee, implied) is None:
            raise DevicePlanningError(
                f"the devices of the arguments and result of {describe_expr(node)} "
                f"({d.show(implied)}) contradict those of what it calls ({d.show(callee)}): "
                "move the on_device/device_copy that disagrees, or add a device_copy",
                expr=node,
            )
    elif t is Let:
        d.unify_exprs(node.var, node.value)
        d.unify_exprs(node, node.body)
    elif t is Function:
        fd = d.domain_for(node)
        d.unify_expr(node.body, fd.result)
        body_type = node.body._checked_type
        if node.virtual_device_:
            d.unify_expr(node.body, d.for_virtual_device(body_type, node.virtual_device_))
        for i, p in enumerate(node.params):
            d.unify_expr(p, d.lookup(fd).param(i))
            if p.virtual_device_:
                d.unify_expr(p, d.for_virtual_device(p._checked_type, p.virtual_device_))
    elif t is Tuple:
        for f in node.fields:
            d.unify_expr_collapsed(node, d.domain_for(f))
    elif t is TupleGetItem:
        d.unify_expr_collapsed(node.tuple_value, d.domain_for(node))
    elif t is If:
        dom = d.domain_for(node)
        d.unify_expr_collapsed(node.cond, dom)
        d.unify_expr(node.true_branch, dom)
        d.unify_expr(node.false_branch, dom)
    elif t is Match:
        dom = d.domain_for(node)
        d.unify_expr_collapsed(node.data, dom)
        for clause in node.clauses:
            for pv in _pattern_vars(clause.lhs):
                d.unify_expr_collapsed(node.data, d.domain_for(pv))
            d.unify_expr(clause.rhs, dom)
    elif t is RefCreate:
        d.unify_expr_collapsed(node, d.domain_for(node.value))
    elif t is RefRead:
        d.unify_expr_collapsed(node.ref, d.domain_for(node))
    elif t is RefWrite:
        dom = d.domain_for(node.value)
        d.unify_expr_collapsed(node.ref, dom)
        d.unify_expr_collapsed(node, dom)
    elif t in (Var, GlobalVar) or t.__name__ == "Constant":
        d.domain_for(node)


def _pattern_vars(pattern: object) -> Iterator[Var]:
    stack = [pattern]
    while stack:
        p = stack.pop()
        if isinstance(p, PatternVar):
            yield p.var
        stack.extend(getattr(p, "patterns", ()))


# -- phase 3: defaults ------------------------------------------------------------------------
def _default_free_on_devices(mod: IRModule, d: DeviceDomains) -> None:
    for _, fn in _optimizable(mod):
        for node in _walk(fn):
            props = on_device_props(node)
            if props is not None and not props[2] and not props[3]:
                d.optional_unify_exprs(node, props[0])


def _default(mod: IRModule, d: DeviceDomains) -> None:
    default = d.config.default_primitive_virtual_device
    for _, fn in _optimizable(mod):
        seen: set[int] = set()
        stack: list[Expr] = [fn]
        while stack:  # pre-order, children in program order, each node once
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            t = type(node)
            if t is Function:
                if _is_primitive(node):
                    continue
                fd = d.domain_for(node)
                if not d.is_fully_constrained(fd):
                    d.set_result_default_then_params(fd, default)
                stack.append(node.body)
                continue
            if t is Call:
                callee = d.domain_for_callee(node)
                if not d.is_fully_constrained(callee):
                    d.set_result_default_then_params(callee, default)
            elif t is Let:
                let_vd = d.result_virtual_device(d.domain_for(node))
                var_domain = d.domain_for(node.var)
                if not d.is_fully_constrained(var_domain) and not let_vd.is_fully_unconstrained:
                    d.set_default(var_domain, let_vd)
            kids = CHILDREN_OF[t](node)
            if t is Match:
                kids = (node.data, *(c.rhs for c in node.clauses))
            stack.extend(reversed(kids))


# -- phase 4: write the plan into the program ---------------------------------------------------
class _Capture:
    def __init__(self, d: DeviceDomains) -> None:
        self.d = d
        self.memo: dict[Expr, Expr] = {}
        self.param_of: dict[Var, tuple[Function, int]] = {}

    def vd(self, expr: Expr) -> VirtualDevice:
        props = on_device_props(expr)
        true_expr = props[0] if props is not None else expr
        if not self.d.contains(true_expr):
            raise DevicePlanningError(
                f"no device was planned for {describe_expr(true_expr)} (run InferType first?)",
                expr=true_expr,
            )
        vd = self.d.result_virtual_device(self.d.domain_for(true_expr))
        if vd.is_fully_unconstrained:
            raise DevicePlanningError(
                f"no device could be chosen for {describe_expr(true_expr)}", expr=true_expr
            )
        return vd

    def child(
        self, lexical: VirtualDevice, expected: VirtualDevice, child_vd: VirtualDevice, child: Expr
    ) -> Expr:
        if isinstance(child, (Op, Constructor)):
            return child
        out = self.memo[child]
        if child_vd != expected:
            out = maybe_on_device_fixed(out, child_vd)
            out = device_copy(out, child_vd, expected)
        if expected != lexical:
            out = maybe_on_device_fixed(out, expected)
        return out

    def same(self, parent: Expr, child: Expr) -> Expr:
        expected = self.vd(parent)
        return self.child(expected, expected, self.vd(child), child)

    def run(self, fn: Function) -> Expr:
        nodes = list(_walk(fn))
        for node in nodes:
            if type(node) is Function and not _is_primitive(node):
                for i, p in enumerate(node.params):
                    self.param_of[p] = (node, i)
        for node in nodes:
            if type(node) is Clause:
                continue  # rebuilt with its match
            self.memo[node] = self.visit(node)
        return self.memo[fn]

    def visit(self, node: Expr) -> Expr:  # noqa: C901 - one case per node kind
        d = self.d
        t = type(node)
        if t is Var:
            owner = self.param_of.get(node)
            if owner is None:
                return node
            pvd = d.result_virtual_device(d.lookup(d.domain_for(owner[0])).param(owner[1]))
            return node if node.virtual_device_ == pvd else node.with_fields(virtual_device_=pvd)
        if t is Function:
            if _is_primitive(node):
                return node
            result_vd = d.result_virtual_device(d.domain_for(node))
            params = [self.memo[p] for p in node.params]
            body = self.child(result_vd, result_vd, self.vd(node.body), node.body)
            return node.with_fields(params=params, body=body, virtual_device_=result_vd)
        if t is Call:
            props = on_device_props(node)
            if props is not None:
                return self.memo[props[0]]
            copy = device_copy_props(node)
            if copy is not None:
                body, src, dst = copy
                src = d.config.canonical_virtual_device(src)
                dst = d.config.canonical_virtual_device(dst)
                if src == dst:
                    return self.memo[body]
                return self.child(dst, dst, src, body)
            callee = d.domain_for_callee(node)
            call_vd = self.vd(node)
            op = self.child(call_vd, call_vd, d.result_virtual_device(callee), node.op)
            args = []
            for i, a in enumerate(node.args):
                pvd = d.result_virtual_device(d.lookup(callee).param(i))
                args.append(self.child(call_vd, pvd, self.vd(a), a))
            return node.with_fields(op=op, args=args)
        if t is Let:
            value = self.child(FULLY_UNCONSTRAINED, self.vd(node.var), self.vd(node.value), node.value)
            body = self.same(node, node.body)
            return node.with_fields(value=value, body=body)
        if t is Tuple:
            return node.with_fields(fields=[self.same(node, f) for f in node.fields])
        if t is TupleGetItem:
            return node.with_fields(tuple_value=self.same(node, node.tuple_value))
        if t is If:
            return node.with_fields(
                cond=self.same(node, node.cond),
                true_branch=self.same(node, node.true_branch),
                false_branch=self.same(node, node.false_branch),
            )
        if t is Match:
            clauses = [c.with_fields(rhs=self.same(node, c.rhs)) for c in node.clauses]
            return node.with_fields(data=self.same(node, node.data), clauses=clauses)
        if t is RefCreate:
            return node.with_fields(value=self.same(node, node.value))
        if t is RefRead:
            return node.with_fields(ref=self.same(node, node.ref))
        if t is RefWrite:
            return node.with_fields(
                ref=self.same(node, node.ref), value=self.same(node, node.value)
            )
        return node


def _type_in(mod: IRModule) -> Callable[[Expr], Type | None]:
    """Checked types, a global's being its function's."""

    def type_of(expr: Expr) -> Type | None:
        if type(expr) is GlobalVar:
            try:
                fn = mod[expr.name_hint]
            except (KeyError, ValueError, LookupError):
                return expr._checked_type
            return fn._checked_type if isinstance(fn, Function) else expr._checked_type
        return expr._checked_type

    return type_of


# -- the pass ---------------------------------------------------------------------------------
def _each_function(mod: IRModule, fn: object) -> IRModule:
    out = mod.copy()
    for gv, f in _optimizable(mod):
        new = fn(f)  # type: ignore[operator]
        if new is not f:
            out.update_func(gv, new)
    return out


def plan_devices(mod: IRModule, config: CompilationConfig) -> IRModule:
    """``mod`` with a virtual device planned for every value (see the module docstring).
    ``mod`` must be type-checked."""
    mod = _each_function(mod, _rewrite_on_devices)
    conflicts = _Conflicts(config)
    for _, fn in _optimizable(mod):
        conflicts.find(fn)
    conflicts.finish()
    mod = _each_function(mod, conflicts.rewrite)
    mod = InferType()(mod)
    domains = DeviceDomains(config, _type_in(mod))
    _analyze(mod, domains)
    _default_free_on_devices(mod, domains)
    _default(mod, domains)
    capture = _Capture(domains)
    return _each_function(mod, capture.run)


class PlanDevices(ModulePass):
    """TVM's ``relay.transform.PlanDevices(config)``: the pass form of
    :func:`plan_devices`; ``config`` is a ``CompilationConfig``
    (``tvm.target.make_compilation_config(ctx, targets)``)."""

    def __init__(self, config: CompilationConfig) -> None:
        if not isinstance(config, CompilationConfig):
            raise DevicePlanningError(
                "PlanDevices takes a CompilationConfig: build one with "
                f"tvm.target.make_compilation_config(ctx, targets), got {type(config).__name__}"
            )
        self.config = config
        super().__init__(self._transform, 0, "PlanDevices")

    def _transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return InferType()(plan_devices(mod, self.config))
