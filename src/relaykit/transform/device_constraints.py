"""Collecting and solving device constraints: phases 2 and 3 of ``PlanDevices``.

:func:`collect_constraints` unifies the domain of each expression with those it
must agree with: a call's arguments and result with its callee's parameters and
result, a let's variable with its value and the let with its body, a function's
body with its result (and the virtual devices already on the function and its
parameters), an ``if`` or ``match`` with its branches, and a tuple, reference or
constructor with what it holds (collapsing functions held there onto one device).
:func:`apply_defaults` then fixes what is still open: free ``on_device`` calls take
their body's device where that is possible, a function's result defaults to the
build's default device and its parameters to its result's device, a let-bound
variable to its let's device.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], x + x)))
>>> domains = DeviceDomains(tvm.target.make_compilation_config(None, ["llvm"]), mod)
>>> collect_constraints(mod, domains)
>>> apply_defaults(mod, domains)
>>> domains.result_virtual_device(domains.domain_for(mod["main"])).device_type
1
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from relaykit.errors import DevicePlanningError
from relaykit.ir.adt import Match, PatternVar
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    checked_type_or_none,
)
from relaykit.ir.fields import CHILDREN_OF
from relaykit.ir.module import IRModule
from relaykit.ir.ref import RefCreate, RefRead, RefWrite

from .device_domains import (
    DeviceDomains,
    describe_expr,
    is_primitive,
    on_device_props,
    optimizable_functions,
    walk_outside_primitives,
)

__all__ = ["collect_constraints", "apply_defaults", "DeviceDomains"]


def collect_constraints(mod: IRModule, domains: DeviceDomains) -> None:
    """Unify the domains of every expression of ``mod``'s functions (phase 2)."""
    for gv, fn in optimizable_functions(mod):
        domains.unify_exprs(gv, fn)
        for node in walk_outside_primitives(fn):
            rule = _RULES.get(type(node))
            if rule is not None:
                rule(node, domains)


def _call(node: Call, d: DeviceDomains) -> None:
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


def _let(node: Let, d: DeviceDomains) -> None:
    d.unify_exprs(node.var, node.value)
    d.unify_exprs(node, node.body)


def _function(node: Function, d: DeviceDomains) -> None:
    fd = d.domain_for(node)
    d.unify_expr(node.body, fd.result)
    if node.virtual_device_:
        d.unify_expr(
            node.body, d.for_virtual_device(checked_type_or_none(node.body), node.virtual_device_)
        )
    for i, p in enumerate(node.params):
        d.unify_expr(p, d.lookup(fd).param(i))
        if p.virtual_device_:
            d.unify_expr(p, d.for_virtual_device(checked_type_or_none(p), p.virtual_device_))


def _tuple(node: Tuple, d: DeviceDomains) -> None:
    for f in node.fields:
        d.unify_expr_collapsed(node, d.domain_for(f))


def _projection(node: TupleGetItem, d: DeviceDomains) -> None:
    d.unify_expr_collapsed(node.tuple_value, d.domain_for(node))


def _if(node: If, d: DeviceDomains) -> None:
    dom = d.domain_for(node)
    d.unify_expr_collapsed(node.cond, dom)
    d.unify_expr(node.true_branch, dom)
    d.unify_expr(node.false_branch, dom)


def _match(node: Match, d: DeviceDomains) -> None:
    dom = d.domain_for(node)
    d.unify_expr_collapsed(node.data, dom)
    for clause in node.clauses:
        for pv in _pattern_vars(clause.lhs):
            d.unify_expr_collapsed(node.data, d.domain_for(pv))
        d.unify_expr(clause.rhs, dom)


def _ref_create(node: RefCreate, d: DeviceDomains) -> None:
    d.unify_expr_collapsed(node, d.domain_for(node.value))


def _ref_read(node: RefRead, d: DeviceDomains) -> None:
    d.unify_expr_collapsed(node.ref, d.domain_for(node))


def _ref_write(node: RefWrite, d: DeviceDomains) -> None:
    dom = d.domain_for(node.value)
    d.unify_expr_collapsed(node.ref, dom)
    d.unify_expr_collapsed(node, dom)


def _leaf(node: Expr, d: DeviceDomains) -> None:
    d.domain_for(node)


_RULES: dict[type, Callable[[Any, DeviceDomains], None]] = {
    Call: _call,
    Let: _let,
    Function: _function,
    Tuple: _tuple,
    TupleGetItem: _projection,
    If: _if,
    Match: _match,
    RefCreate: _ref_create,
    RefRead: _ref_read,
    RefWrite: _ref_write,
    Var: _leaf,
    GlobalVar: _leaf,
    Constant: _leaf,
}


def _pattern_vars(pattern: object) -> Iterator[Var]:
    stack = [pattern]
    while stack:
        p = stack.pop()
        if isinstance(p, PatternVar):
            yield p.var
        stack.extend(getattr(p, "patterns", ()))


def apply_defaults(mod: IRModule, domains: DeviceDomains) -> None:
    """Fix every domain still open (phase 3)."""
    _default_free_on_devices(mod, domains)
    _default(mod, domains)


def _default_free_on_devices(mod: IRModule, d: DeviceDomains) -> None:
    for _, fn in optimizable_functions(mod):
        for node in walk_outside_primitives(fn):
            props = on_device_props(node)
            if props is not None and not props[2] and not props[3]:
                d.optional_unify_exprs(node, props[0])


def _default(mod: IRModule, d: DeviceDomains) -> None:
    default = d.config.default_primitive_virtual_device
    for _, fn in optimizable_functions(mod):
        seen: set[int] = set()
        stack: list[Expr] = [fn]
        while stack:  # pre-order, children in program order, each node once
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, Function):
                if is_primitive(node):
                    continue
                fd = d.domain_for(node)
                if not d.is_fully_constrained(fd):
                    d.set_result_default_then_params(fd, default)
                stack.append(node.body)
                continue
            if isinstance(node, Call):
                callee = d.domain_for_callee(node)
                if not d.is_fully_constrained(callee):
                    d.set_result_default_then_params(callee, default)
            elif isinstance(node, Let):
                let_vd = d.result_virtual_device(d.domain_for(node))
                var_domain = d.domain_for(node.var)
                if not d.is_fully_constrained(var_domain) and not let_vd.is_fully_unconstrained:
                    d.set_default(var_domain, let_vd)
            kids = CHILDREN_OF[type(node)](node)
            if isinstance(node, Match):
                kids = (node.data, *(c.rhs for c in node.clauses))
            stack.extend(reversed(kids))
