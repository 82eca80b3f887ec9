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

from collections.abc import Callable

from relaykit.errors import DevicePlanningError
from relaykit.ir.expr import (
    Call,
    Expr,
    Function,
    Let,
    TupleGetItem,
)
from relaykit.ir.fields import CHILDREN_OF
from relaykit.ir.functor import rebuild
from relaykit.ir.module import IRModule
from relaykit.op.device import device_copy, on_device
from relaykit.target import CompilationConfig, VirtualDevice
from relaykit.target.virtual_device import FULLY_UNCONSTRAINED, join_virtual_devices

from .device_capture import DeviceCapture, maybe_on_device_fixed
from .device_constraints import apply_defaults, collect_constraints
from .device_domains import (
    DeviceDomains,
    describe_expr,
    device_copy_props,
    is_primitive,
    on_device_props,
    optimizable_functions,
    walk_outside_primitives,
)
from .infer_type import InferType
from .pass_infra import ModulePass, PassContext

__all__ = ["PlanDevices", "plan_devices"]


def _rebuild_all(root: Expr, step: Callable[[Expr, Expr], Expr | None]) -> Expr:
    """Bottom-up rebuild of ``root``; ``step(rebuilt, original)`` may replace a node."""
    memo: dict[Expr, Expr] = {}
    for node in walk_outside_primitives(root):
        if type(node) is Function and is_primitive(node):
            memo[node] = node
            continue
        rebuilt = rebuild(node, memo.__getitem__)
        out = step(rebuilt, node)
        memo[node] = rebuilt if out is None else out
    return memo[root]


def _normal_props(expr: Expr) -> tuple[Expr, VirtualDevice, bool, bool] | None:
    """The ``on_device`` properties of ``expr`` when it constrains its body only."""
    props = on_device_props(expr)
    return props if props is not None and props[3] and not props[2] else None


# -- phase 0: rewrite on_device ---------------------------------------------------------------
def _rewrite_step(rebuilt: Expr, original: Expr) -> Expr | None:
    if isinstance(rebuilt, TupleGetItem):
        props = _normal_props(rebuilt.tuple_value)
        if props is not None:  # project, then copy the field
            return on_device(rebuilt, props[1], constrain_result=False, constrain_body=True)
    elif isinstance(rebuilt, Let):
        props = _normal_props(rebuilt.value)
        if props is not None:  # the variable is fixed too
            return rebuilt.with_fields(value=maybe_on_device_fixed(props[0], props[1]))
    elif isinstance(rebuilt, Function):
        props = _normal_props(rebuilt.body)
        if props is not None:  # the result is fixed too
            return rebuilt.with_fields(body=maybe_on_device_fixed(props[0], props[1]))
    return None


def _rewrite_on_devices(fn: Function) -> Expr:
    return _rebuild_all(fn, _rewrite_step)


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
            if not isinstance(original, Call) or not isinstance(rebuilt, Call):
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

        return _rebuild_all(fn, step)


# -- the pass ---------------------------------------------------------------------------------
def _each_function(mod: IRModule, fn: object) -> IRModule:
    out = mod.copy()
    for gv, f in optimizable_functions(mod):
        new = fn(f)  # type: ignore[operator]
        if new is not f:
            out.update_func(gv, new)
    return out


def plan_devices(mod: IRModule, config: CompilationConfig) -> IRModule:
    """``mod`` with a virtual device planned for every value (see the module docstring).
    ``mod`` must be type-checked."""
    mod = _each_function(mod, _rewrite_on_devices)
    conflicts = _Conflicts(config)
    for _, fn in optimizable_functions(mod):
        conflicts.find(fn)
    conflicts.finish()
    mod = _each_function(mod, conflicts.rewrite)
    mod = InferType()(mod)
    domains = DeviceDomains(config, mod)
    collect_constraints(mod, domains)
    apply_defaults(mod, domains)
    capture = DeviceCapture(domains)
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
