"""``tvm.relay.testing.nat``: Peano naturals (``nat.rly``) as values and expressions.

>>> import relaykit as tvm
>>> from relaykit.relay.prelude import Prelude
>>> p = Prelude(tvm.IRModule())
>>> p.mod.import_from_std("nat.rly")
>>> count(p, make_nat_value(p, 3)), make_nat_expr(p, 2).op.name_hint
(3, 'succ')
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import ArgumentError
from relaykit.ir.expr import Call, Expr
from relaykit.runtime.container import ConstructorValue

__all__ = ["get_type", "count", "make_nat_value", "make_nat_expr"]


def get_type(prelude: Any, name: str) -> tuple[Any, ...]:
    """The type ``name`` of the prelude's module and its constructors."""
    return tuple(prelude.mod.get_type(name))


def _nat(prelude: Any) -> tuple[Any, Any]:
    mod = prelude.mod
    if not any(g.name_hint == "nat" for g in mod.get_global_type_vars()):
        mod.import_from_std("nat.rly")
    _, zero, succ = mod.get_type("nat")
    return zero, succ


def count(prelude: Any, n: Any) -> int:
    """The number a ``nat`` value (a :class:`ConstructorValue`) stands for."""
    zero, succ = _nat(prelude)
    total = 0
    while True:
        if not isinstance(n, ConstructorValue):
            raise ArgumentError(f"count takes a nat value, got {type(n).__name__}")
        if n.tag == zero.tag:
            return total
        if n.tag != succ.tag:
            raise ArgumentError(f"count takes a nat value, got a value of tag {n.tag}")
        total += 1
        n = n.fields[0]


def make_nat_value(prelude: Any, n: int) -> ConstructorValue:
    """The ``nat`` value of ``n``, as the interpreter builds it."""
    zero, succ = _nat(prelude)
    value = ConstructorValue(zero.tag, [], zero)
    for _ in range(int(n)):
        value = ConstructorValue(succ.tag, [value], succ)
    return value


def make_nat_expr(prelude: Any, n: int) -> Expr:
    """The expression ``succ(...succ(zero()))`` of ``n``."""
    zero, succ = _nat(prelude)
    expr: Expr = Call(zero, [])
    for _ in range(int(n)):
        expr = Call(succ, [expr])
    return expr
