"""Writing the planned devices into the program: phase 4 of ``PlanDevices``.

Every parameter and function gets its virtual device; where a value is used on
another device than the one it is computed on, it is wrapped in a fixed
``on_device`` and a ``device_copy``; a let-bound value, and an argument on another
device than its call, is wrapped in a fixed ``on_device`` so that later passes can
read devices lexically. The rewrite is one bottom-up walk: what a node becomes
does not depend on its context, only the wrapping of each edge does.

>>> from relaykit import relay
>>> from relaykit.runtime.ndarray import cpu
>>> from relaykit.target import VirtualDevice
>>> call = maybe_on_device_fixed(relay.var("x") + relay.var("y"), VirtualDevice(cpu()))
>>> call.op.name, call.attrs.constrain_result, call.attrs.constrain_body
('on_device', True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaykit.errors import DevicePlanningError
from relaykit.ir.adt import Clause, Constructor, Match
from relaykit.ir.expr import Call, Expr, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from relaykit.ir.op import Op
from relaykit.ir.ref import RefCreate, RefRead, RefWrite
from relaykit.op.device import device_copy, on_device
from relaykit.target import VirtualDevice
from relaykit.target.virtual_device import FULLY_UNCONSTRAINED

from .device_domains import (
    DeviceDomains,
    describe_expr,
    device_copy_props,
    is_primitive,
    on_device_props,
    walk_outside_primitives,
)

__all__ = ["DeviceCapture", "maybe_on_device_fixed"]


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


class DeviceCapture:
    """The bottom-up rewrite of one function with the solved ``domains``."""

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
        nodes = list(walk_outside_primitives(fn))
        for node in nodes:
            if type(node) is Function and not is_primitive(node):
                for i, p in enumerate(node.params):
                    self.param_of[p] = (node, i)
        for node in nodes:
            if type(node) is Clause:
                continue  # rebuilt with its match
            self.memo[node] = self.visit(node)
        return self.memo[fn]

    def visit(self, node: Expr) -> Expr:
        method = _VISIT.get(type(node))
        return node if method is None else method(self, node)

    def _var(self, node: Var) -> Expr:
        owner = self.param_of.get(node)
        if owner is None:
            return node
        d = self.d
        pvd = d.result_virtual_device(d.lookup(d.domain_for(owner[0])).param(owner[1]))
        return node if node.virtual_device_ == pvd else node.with_fields(virtual_device_=pvd)

    def _function(self, node: Function) -> Expr:
        if is_primitive(node):
            return node
        result_vd = self.d.result_virtual_device(self.d.domain_for(node))
        params = [self.memo[p] for p in node.params]
        body = self.child(result_vd, result_vd, self.vd(node.body), node.body)
        return node.with_fields(params=params, body=body, virtual_device_=result_vd)

    def _call(self, node: Call) -> Expr:
        d = self.d
        props = on_device_props(node)
        if props is not None:  # replaced by what the plan writes around its body
            return self.memo[props[0]]
        copy = device_copy_props(node)
        if copy is not None:
            body, src, dst = copy
            src = d.config.canonical_virtual_device(src)
            dst = d.config.canonical_virtual_device(dst)
            return self.memo[body] if src == dst else self.child(dst, dst, src, body)
        callee = d.domain_for_callee(node)
        call_vd = self.vd(node)
        op = self.child(call_vd, call_vd, d.result_virtual_device(callee), node.op)
        args = []
        for i, a in enumerate(node.args):
            pvd = d.result_virtual_device(d.lookup(callee).param(i))
            args.append(self.child(call_vd, pvd, self.vd(a), a))
        return node.with_fields(op=op, args=args)

    def _let(self, node: Let) -> Expr:
        # the value is always wrapped in a fixed on_device (an unconstrained lexical device)
        value = self.child(FULLY_UNCONSTRAINED, self.vd(node.var), self.vd(node.value), node.value)
        return node.with_fields(value=value, body=self.same(node, node.body))

    def _tuple(self, node: Tuple) -> Expr:
        return node.with_fields(fields=[self.same(node, f) for f in node.fields])

    def _projection(self, node: TupleGetItem) -> Expr:
        return node.with_fields(tuple_value=self.same(node, node.tuple_value))

    def _if(self, node: If) -> Expr:
        return node.with_fields(
            cond=self.same(node, node.cond),
            true_branch=self.same(node, node.true_branch),
            false_branch=self.same(node, node.false_branch),
        )

    def _match(self, node: Match) -> Expr:
        clauses = [c.with_fields(rhs=self.same(node, c.rhs)) for c in node.clauses]
        return node.with_fields(data=self.same(node, node.data), clauses=clauses)

    def _ref_create(self, node: RefCreate) -> Expr:
        return node.with_fields(value=self.same(node, node.value))

    def _ref_read(self, node: RefRead) -> Expr:
        return node.with_fields(ref=self.same(node, node.ref))

    def _ref_write(self, node: RefWrite) -> Expr:
        return node.with_fields(ref=self.same(node, node.ref), value=self.same(node, node.value))


_VISIT: dict[type, Callable[[DeviceCapture, Any], Expr]] = {
    Var: DeviceCapture._var,
    Function: DeviceCapture._function,
    Call: DeviceCapture._call,
    Let: DeviceCapture._let,
    Tuple: DeviceCapture._tuple,
    TupleGetItem: DeviceCapture._projection,
    If: DeviceCapture._if,
    Match: DeviceCapture._match,
    RefCreate: DeviceCapture._ref_create,
    RefRead: DeviceCapture._ref_read,
    RefWrite: DeviceCapture._ref_write,
}
