"""Boundary control: pin chosen operators to the host or to a target.

A pin overrides the target rules for the calls it matches. Match by operator
name (a composite call matches its ``Composite`` name and the names of the
operators inside it) or by a predicate on the typed call::

    AnnotateTarget(["dnnl"], pin=[
        pin("nn.softmax"),                                  # always on the host
        pin(lambda call: call.checked_type.shape[0] > 64),  # big batches on the host
        pin("nn.dense", to="dnnl"),                         # force onto dnnl
    ])

The first matching pin wins.

>>> p = pin("nn.softmax", "nn.relu")
>>> p.to, p.names
('host', ('nn.softmax', 'nn.relu'))
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from relaykit.ir.expr import Call, Expr, Function
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op

from ._common import DEFAULT_TARGET, PartitionError, composite_name

__all__ = ["HOST", "Pin", "pin", "as_pins", "find_pin"]

#: The name pins use for the host (``"default"`` is accepted too).
HOST = "host"


@dataclass(frozen=True)
class Pin:
    """Send calls matching ``names`` or ``predicate`` to ``to`` (``"host"`` or a target)."""

    names: tuple[str, ...] = ()
    predicate: Callable[[Call], Any] | None = None
    to: str = HOST

    @property
    def target(self) -> str:
        """``to`` as annotations spell it (the host is ``"default"``)."""
        return DEFAULT_TARGET if self.to in (HOST, DEFAULT_TARGET) else self.to

    def describe(self) -> str:
        what = ", ".join(self.names) if self.names else "predicate"
        return f"pin({what}) to {self.to}"

    def matches(self, call: Call) -> bool:
        if self.names:
            names = _call_op_names(call)
            if not any(n in names for n in self.names):
                return False
        if self.predicate is not None:
            return bool(self.predicate(call))
        return bool(self.names)


_NAMES_CACHE: weakref.WeakKeyDictionary[Function, frozenset[str]] = weakref.WeakKeyDictionary()


def _call_op_names(call: Call) -> frozenset[str]:
    """The operator name of a call; for a composite call, its name and its operators'."""
    op = call.op
    if type(op) is Op:
        return frozenset((op.name,))
    name = composite_name(op)
    if name is None:
        return frozenset()
    if type(op) is not Function:  # pragma: no cover - composite_name saw a function
        return frozenset((name,))
    cached = _NAMES_CACHE.get(op)
    if cached is not None:
        return cached
    names = {name}
    for node in post_order(op.body):
        if type(node) is Call and type(node.op) is Op:
            names.add(node.op.name)
    result = frozenset(names)
    _NAMES_CACHE[op] = result
    return result


def pin(*ops: str | Callable[[Call], Any], to: str = HOST) -> Pin:
    """A pin for operator names and/or one predicate: ``pin("nn.softmax", to="host")``."""
    names: list[str] = []
    predicate = None
    for item in ops:
        if isinstance(item, str):
            names.append(item)
        elif callable(item) and not isinstance(item, Expr):  # an Expr is callable: f(x)
            if predicate is not None:
                raise PartitionError("give pin(...) at most one predicate")
            predicate = item
        else:
            raise PartitionError(
                f"pin(...) takes operator names or a predicate on the call, got {item!r}"
            )
    if not names and predicate is None:
        raise PartitionError("pin(...) needs an operator name or a predicate")
    if not isinstance(to, str) or not to:
        raise PartitionError(f"pin(..., to=) must be 'host' or a target name, got {to!r}")
    return Pin(tuple(names), predicate, to)


def as_pins(value: Any, targets: Sequence[str]) -> tuple[Pin, ...]:
    """Normalise the ``pin=`` option of the passes: pins, names or predicates.

    A bare name or predicate pins to the host. A pin to a target that is not
    in ``targets`` is an error.
    """
    if value is None:
        return ()
    items: Iterable[Any] = [value] if isinstance(value, (str, Pin)) or callable(value) else value
    pins = []
    for item in items:
        p = item if isinstance(item, Pin) else pin(item)
        if p.target != DEFAULT_TARGET and p.target not in targets:
            raise PartitionError(
                f"{p.describe()}: {p.to!r} is not one of the targets {list(targets)}; "
                "pin to 'host' or to one of them"
            )
        pins.append(p)
    return tuple(pins)


def find_pin(pins: Sequence[Pin], call: Call) -> Pin | None:
    """The first pin that matches ``call``."""
    for p in pins:
        if p.matches(call):
            return p
    return None
