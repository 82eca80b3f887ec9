"""Device domains: the unknowns device planning solves for, and their unification.

Every sub-expression gets a *domain*: for a first-order value one virtual device
(possibly still open), for a function one domain per parameter and one for the
result, ``fn(D1, ..., Dn):Dr``. Constraints unify domains (a union-find over
domain objects): two first-order domains unify when their virtual devices join;
two function domains unify argument by argument. A tuple, reference or ADT
holding a function *collapses* it: its parameters and result are forced onto
the first-order device of the container.

Operators are device-polymorphic: each call of ``add`` gets a fresh domain with
all arguments and the result on one (unknown) device. The few operators that
keep shapes on the host (``vm.shape_of``, ``vm.reshape_tensor``,
``memory.alloc_storage``, ``memory.alloc_tensor``) have their host arguments
fixed to the build's host device.

>>> from relaykit.target import make_compilation_config
>>> from relaykit.target import VirtualDevice
>>> from relaykit.runtime.ndarray import cpu
>>> domains = DeviceDomains(make_compilation_config(None, ["llvm"]))
>>> a, b = domains.first_order(VirtualDevice()), domains.first_order(VirtualDevice(cpu()))
>>> domains.unify(a, b) is not None, domains.result_virtual_device(a).device_type
(True, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from relaykit.errors import DevicePlanningError
from relaykit.ir.adt import Constructor
from relaykit.ir.expr import Call, Expr, Function, GlobalVar, checked_type_or_none
from relaykit.ir.fields import CHILDREN_OF
from relaykit.ir.hooks import has_printer as printer_hook_installed
from relaykit.ir.hooks import printer_hook
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import FuncType, Type
from relaykit.target import CompilationConfig, VirtualDevice
from relaykit.target.virtual_device import (
    FULLY_UNCONSTRAINED,
    default_virtual_device,
    join_virtual_devices,
)

__all__ = [
    "DeviceDomain",
    "DeviceDomains",
    "on_device_props",
    "device_copy_props",
    "is_primitive",
    "optimizable_functions",
    "walk_outside_primitives",
    "describe_expr",
]


def is_primitive(fn: Function) -> bool:
    return bool(fn.attrs.get("Primitive", 0))


def optimizable_functions(mod: IRModule) -> Iterator[tuple[GlobalVar, Function]]:
    """The module's Relay functions that device planning looks into (not those for an
    external compiler)."""
    for gv, fn in mod.functions.items():
        if not isinstance(fn, Function):
            continue
        if fn.attrs.get("Compiler") or fn.attrs.get("Extern") or fn.attrs.get("SkipOptimization"):
            continue
        yield gv, fn


def walk_outside_primitives(root: Expr) -> Iterator[Expr]:
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
        if type(node) is Function and is_primitive(node):
            stack.extend((p, False) for p in reversed(node.params))
            continue
        stack.extend((c, False) for c in reversed(CHILDREN_OF[type(node)](node)))


class DeviceDomain:
    """One unknown: a virtual device (first order) or ``args_and_result`` domains."""

    __slots__ = ("virtual_device", "args_and_result")

    def __init__(
        self,
        virtual_device: VirtualDevice = FULLY_UNCONSTRAINED,
        args_and_result: Sequence[DeviceDomain] = (),
    ) -> None:
        self.virtual_device = virtual_device
        self.args_and_result: tuple[DeviceDomain, ...] = tuple(args_and_result)

    @property
    def is_higher_order(self) -> bool:
        return bool(self.args_and_result)

    @property
    def arity(self) -> int:
        return len(self.args_and_result) - 1

    def param(self, i: int) -> DeviceDomain:
        return self.args_and_result[i]

    @property
    def result(self) -> DeviceDomain:
        return self.args_and_result[-1]


def on_device_props(expr: Expr) -> tuple[Expr, VirtualDevice, bool, bool] | None:
    """``(body, virtual_device, constrain_result, constrain_body)`` of an ``on_device``
    call, else None."""
    if type(expr) is Call and isinstance(expr.op, Op) and expr.op.name == "on_device":
        a = expr.attrs
        return (
            expr.args[0],
            a.get("virtual_device") or FULLY_UNCONSTRAINED,
            bool(a.get("constrain_result", False)),
            bool(a.get("constrain_body", True)),
        )
    return None


def device_copy_props(expr: Expr) -> tuple[Expr, VirtualDevice, VirtualDevice] | None:
    """``(body, src, dst)`` of a ``device_copy`` call, else None."""
    if type(expr) is Call and isinstance(expr.op, Op) and expr.op.name == "device_copy":
        a = expr.attrs
        return (
            expr.args[0],
            a.get("src_virtual_device") or FULLY_UNCONSTRAINED,
            a.get("dst_virtual_device") or FULLY_UNCONSTRAINED,
        )
    return None


class DeviceDomains:
    """The domains of one module's expressions and the union-find over them."""

    def __init__(
        self,
        config: CompilationConfig,
        mod: IRModule | None = None,
        type_of: Callable[[Expr], Type | None] | None = None,
    ) -> None:
        self.config = config
        self._type_of = type_of or _types_in(mod)
        self._equiv: dict[int, DeviceDomain] = {}  # id(domain) -> a domain it was unified into
        self._keep: list[DeviceDomain] = []  # keeps unified-away domains alive (ids stay unique)
        # while a unification may be undone: (key, previous value or None) of each write
        self._journal: list[tuple[int, DeviceDomain | None]] | None = None
        self._fixed: dict[VirtualDevice, DeviceDomain] = {}
        self._expr: dict[object, DeviceDomain] = {}
        self._callee: dict[int, DeviceDomain] = {}
        self._exprs_kept: list[Expr] = []
        self.host_domain = self.first_order(config.host_virtual_device)

    # -- making domains -------------------------------------------------------------
    def first_order(self, vd: VirtualDevice) -> DeviceDomain:
        """A first-order domain; fully constrained ones are shared per virtual device."""
        if vd.is_fully_constrained:
            found = self._fixed.get(vd)
            if found is None:
                found = self._fixed[vd] = DeviceDomain(vd)
            return found
        return DeviceDomain(vd)

    def higher_order(self, args_and_result: Sequence[DeviceDomain]) -> DeviceDomain:
        return DeviceDomain(FULLY_UNCONSTRAINED, args_and_result)

    def make(self, ty: Type | None, vd: VirtualDevice) -> DeviceDomain:
        """The domain of a value of type ``ty`` whose (result) device is ``vd``."""
        if isinstance(ty, FuncType):
            parts = [self.make(t, FULLY_UNCONSTRAINED) for t in ty.arg_types]
            parts.append(self.make(ty.ret_type, vd))
            return self.higher_order(parts)
        return self.first_order(vd)

    def free(self, ty: Type | None) -> DeviceDomain:
        return self.make(ty, FULLY_UNCONSTRAINED)

    def for_virtual_device(self, ty: Type | None, vd: VirtualDevice) -> DeviceDomain:
        """The domain of ``ty`` whose result lives on ``vd`` (made canonical)."""
        return self.make(ty, self.config.canonical_virtual_device(vd))

    # -- union-find -----------------------------------------------------------------
    def lookup(self, domain: DeviceDomain) -> DeviceDomain:
        root = domain
        while id(root) in self._equiv:
            root = self._equiv[id(root)]
        while domain is not root:  # path compression
            nxt = self._equiv[id(domain)]
            self._set(id(domain), root)
            domain = nxt
        return root

    def _join(self, lhs: DeviceDomain, rhs: DeviceDomain) -> DeviceDomain | None:
        if lhs is rhs:
            return lhs
        if len(lhs.args_and_result) != len(rhs.args_and_result):
            raise DevicePlanningError(
                f"device domains {self.show(lhs)} and {self.show(rhs)} are of different "
                "kinds (a function's and a value's, or functions of different arity)"
            )
        if not lhs.is_higher_order:
            if rhs.virtual_device.is_fully_unconstrained:
                return lhs
            if lhs.virtual_device.is_fully_unconstrained:
                return rhs
            joined = join_virtual_devices(lhs.virtual_device, rhs.virtual_device)
            if joined is None:
                return None
            return self.first_order(self.config.canonical_virtual_device(joined))
        parts = []
        for a, b in zip(lhs.args_and_result, rhs.args_and_result, strict=True):
            j = self.unify(a, b)
            if j is None:
                return None
            parts.append(j)
        return self.higher_order(parts)

    def unify(self, lhs: DeviceDomain, rhs: DeviceDomain) -> DeviceDomain | None:
        """The two domains made one, or None when their devices contradict."""
        lhs, rhs = self.lookup(lhs), self.lookup(rhs)
        joined = self._join(lhs, rhs)
        if joined is None:
            return None
        for d in (lhs, rhs):
            if d is not joined:
                self._set(id(d), joined)
                self._keep.append(d)
        return joined

    def unify_collapsed(self, first: DeviceDomain, other: DeviceDomain) -> bool:
        """Unify ``first`` (first order) with ``other``; a function domain is collapsed:
        each parameter and the result unify with ``first``."""
        other = self.lookup(other)
        if not other.is_higher_order:
            return self.unify(first, other) is not None
        return all(
            self.unify_collapsed(first, d) for d in other.args_and_result
        )  # nested functions collapse too

    def _set(self, key: int, domain: DeviceDomain) -> None:
        if self._journal is not None:
            self._journal.append((key, self._equiv.get(key)))
        self._equiv[key] = domain

    # -- domains of expressions -----------------------------------------------------
    def _key(self, expr: Expr) -> object:
        return ("global", expr.name_hint) if type(expr) is GlobalVar else id(expr)

    def contains(self, expr: Expr) -> bool:
        return self._key(expr) in self._expr

    def domain_for(self, expr: Expr) -> DeviceDomain:
        key = self._key(expr)
        found = self._expr.get(key)
        if found is not None:
            return self.lookup(found)
        domain = self.free(self._type_of(expr))
        self._expr[key] = domain
        self._exprs_kept.append(expr)
        return domain

    def domain_for_callee(self, call: Call) -> DeviceDomain:
        """The domain of what ``call`` calls: fresh for an operator (with the host
        constraints of the shape and memory operators), the callee's own otherwise."""
        found = self._callee.get(id(call))
        if found is not None:
            return self.lookup(found)
        op = call.op
        ty = self._type_of
        parts: list[DeviceDomain]
        on_dev = on_device_props(call)
        copy = device_copy_props(call)
        if on_dev is not None:
            body, vd, constrain_result, constrain_body = on_dev
            bt = ty(body)
            parts = [
                self.for_virtual_device(bt, vd) if constrain_body else self.free(bt),
                self.for_virtual_device(bt, vd) if constrain_result else self.free(bt),
            ]
        elif copy is not None:
            body, src, dst = copy
            bt = ty(body)
            parts = [self.for_virtual_device(bt, src), self.for_virtual_device(bt, dst)]
        elif isinstance(op, Op):
            parts = self._op_domain(call)
        elif isinstance(op, Constructor):
            result = self.free(ty(call))
            parts = []
            for arg in call.args:
                d = self.free(ty(arg))
                self.unify_collapsed(result, d)
                parts.append(d)
            parts.append(result)
        else:
            return self.domain_for(op)
        domain = self.higher_order(parts)
        self._callee[id(call)] = domain
        self._exprs_kept.append(call)
        return domain

    def _op_domain(self, call: Call) -> list[DeviceDomain]:
        name = call.op.name  # type: ignore[attr-defined]
        host = self.host_domain
        n = len(call.args)
        if name == "memory.alloc_storage" and n == 3:
            vd = call.attrs.get("virtual_device") or FULLY_UNCONSTRAINED
            result = (
                self.free(self._type_of(call))
                if vd.is_fully_unconstrained
                else self.for_virtual_device(self._type_of(call), vd)
            )
            return [host, host, host, result]
        if name == "memory.alloc_tensor" and n == 3:
            free = self.free(self._type_of(call))
            return [free, host, host, free]
        if name == "vm.shape_of" and n == 1:
            return [self.free(self._type_of(call.args[0])), host]
        if name == "vm.reshape_tensor" and n == 2:
            free = self.free(self._type_of(call))
            return [free, host, free]
        if name == "vm.invoke_tvm_op" and n == 3:
            free = self.free(self._type_of(call))
            return [self.free(self._type_of(call.args[0])), free, free, free]
        free = self.first_order(FULLY_UNCONSTRAINED)
        return [free] * (n + 1)

    # -- unifying expressions -------------------------------------------------------
    def unify_exprs(self, lhs: Expr, rhs: Expr) -> None:
        a, b = self.domain_for(lhs), self.domain_for(rhs)
        if self.unify(a, b) is None:
            raise self._contradiction(lhs, a, b)

    def unify_expr(self, expr: Expr, expected: DeviceDomain) -> None:
        actual = self.domain_for(expr)
        if self.unify(actual, expected) is None:
            raise self._contradiction(expr, actual, expected)

    def unify_expr_collapsed(self, expr: Expr, expected: DeviceDomain) -> None:
        actual = self.domain_for(expr)
        if not self.unify_collapsed(actual, expected):
            raise self._contradiction(expr, actual, expected)

    def optional_unify_exprs(self, lhs: Expr, rhs: Expr) -> None:
        """Unify when the devices agree; otherwise leave both as they were (the writes
        of the failed attempt are undone from a journal: no copy of the whole table)."""
        a, b = self.domain_for(lhs), self.domain_for(rhs)
        self._journal = []
        try:
            ok = self.unify(a, b) is not None
            if not ok:
                for key, old in reversed(self._journal):
                    if old is None:
                        del self._equiv[key]
                    else:
                        self._equiv[key] = old
        finally:
            self._journal = None

    def _contradiction(
        self, expr: Expr, actual: DeviceDomain, expected: DeviceDomain
    ) -> DevicePlanningError:
        return DevicePlanningError(
            f"contradictory devices for {describe_expr(expr)}: one constraint puts it on "
            f"{self.show(actual)}, another on {self.show(expected)}. Remove one of the "
            "on_device annotations or virtual devices that disagree, or insert a device_copy "
            "between the two uses",
            expr=expr,
        )

    # -- defaults and results -------------------------------------------------------
    def is_fully_constrained(self, domain: DeviceDomain) -> bool:
        domain = self.lookup(domain)
        if not domain.is_higher_order:
            return domain.virtual_device.is_fully_constrained
        return all(self.is_fully_constrained(d) for d in domain.args_and_result)

    def set_default(self, domain: DeviceDomain, vd: VirtualDevice) -> None:
        """Fill each open field of ``domain`` (every part, for a function) from ``vd``."""
        domain = self.lookup(domain)
        if domain.is_higher_order:
            for d in domain.args_and_result:
                self.set_default(d, vd)
            return
        filled = self.config.canonical_virtual_device(
            default_virtual_device(domain.virtual_device, vd)
        )
        if self.unify(domain, self.first_order(filled)) is None:
            raise DevicePlanningError(f"cannot default {self.show(domain)} to {vd}")

    def set_result_default_then_params(self, domain: DeviceDomain, vd: VirtualDevice) -> None:
        """Default the result to ``vd``, then everything else to the result's device."""
        domain = self.lookup(domain)
        if not domain.is_higher_order:
            self.set_default(domain, vd)
            return
        self.set_default(self.result_domain(domain), vd)
        self.set_default(domain, self.result_virtual_device(domain))

    def result_domain(self, domain: DeviceDomain) -> DeviceDomain:
        domain = self.lookup(domain)
        while domain.is_higher_order:
            domain = self.lookup(domain.result)
        return domain

    def result_virtual_device(self, domain: DeviceDomain) -> VirtualDevice:
        """The device of a value of this domain (of a function: of its result)."""
        return self.result_domain(domain).virtual_device

    def show(self, domain: DeviceDomain) -> str:
        domain = self.lookup(domain)
        if not domain.is_higher_order:
            vd = domain.virtual_device
            return "an unknown device" if vd.is_fully_unconstrained else _short(vd)
        inner = ", ".join(self.show(d) for d in domain.args_and_result[:-1])
        return f"fn({inner}):{self.show(domain.result)}"


def _short(vd: VirtualDevice) -> str:
    parts = [vd.device_name or "?"]
    if vd.virtual_device_id >= 0:
        parts[0] += f"({vd.virtual_device_id})"
    if vd.target is not None:
        parts.append(f"target {vd.target.kind.name}")
    if vd.memory_scope:
        parts.append(f"scope {vd.memory_scope!r}")
    return " ".join(parts)


def describe_expr(expr: Expr, width: int = 80) -> str:
    """A short description of ``expr`` for messages: ``the call of @f``, ``%x``, or its
    kind and the start of its text (with where it came from, when the text had a span)."""
    where = f" (at {expr.span})" if getattr(expr, "span", None) is not None else ""
    if isinstance(expr, Call):
        op = expr.op
        if isinstance(op, Op):
            name = op.name
        elif isinstance(op, GlobalVar):
            name = f"@{op.name_hint}"
        else:
            name = "a local function"
        return f"the call of {name}{where}"
    if isinstance(expr, GlobalVar):
        return f"@{expr.name_hint}"
    if type(expr).__name__ == "Var":
        return f"%{getattr(expr, 'name_hint', '')}{where}"
    if printer_hook_installed():
        text = " ".join(printer_hook().astext(expr, show_meta_data=False).split())
        if len(text) > width:
            text = text[: width - 3] + "..."
        return f"{type(expr).__name__} `{text}`{where}"
    return f"a {type(expr).__name__}{where}"


def _types_in(mod: IRModule | None) -> Callable[[Expr], Type | None]:
    """Checked types, a global's being its function's in ``mod``."""

    def type_of(expr: Expr) -> Type | None:
        if isinstance(expr, GlobalVar) and mod is not None:
            try:
                fn = mod[expr.name_hint]
            except (KeyError, LookupError, ValueError):
                return checked_type_or_none(expr)
            if isinstance(fn, Function):
                return checked_type_or_none(fn)
        return checked_type_or_none(expr)

    return type_of
