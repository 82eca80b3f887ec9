"""Defining operators: one call per op, rules in the registry's attribute tables.

An operator is defined once with its arity, attribute schema (names and
defaults), type relation and reference NumPy kernel::

    define_op(
        "nn.relu", num_inputs=1, pattern=OpPattern.ELEMWISE,
        type_rel=identity_rel, compute=lambda args, attrs: np.maximum(args[0], 0),
    )

and called through :func:`make_call`, which checks the arity and the attribute
names and fills in defaults. A type relation takes ``(arg_types, attrs)`` and
returns the output type or raises :class:`TypeRelError`; a kernel takes
``(inputs, attrs)`` (NumPy arrays) and returns an array or a tuple of arrays.

>>> from relaykit.ir import Var, TensorType
>>> call = make_call("nn.relu", [Var("x", TensorType((3,)))])
>>> call.op.name, len(call.attrs)
('nn.relu', 0)
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError, AttrError, IRError, RelayTypeError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, TupleWrapper
from relaykit.ir.op import Op, OpRegistry, default_registry
from relaykit.ir.types import Type

__all__ = [
    "OpPattern",
    "TypeRelError",
    "int_tuple",
    "TypeRelation",
    "Kernel",
    "define_op",
    "make_call",
    "make_attrs",
    "VARIADIC",
    "NoDefault",
    "caller_module",
    "no_default",
]

VARIADIC = -1

TypeRelation = Callable[[Sequence[Type], Attrs], Type]
Kernel = Callable[[Sequence[np.ndarray], Attrs], Any]


class OpPattern:
    """Fusion patterns, with TVM's numbering (``TOpPattern``)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


class TypeRelError(RelayTypeError):
    """Raised by a type relation; type inference adds the operator and IR context."""


class NoDefault:
    """An attribute that has no default in TVM's C++ attrs struct, in a schema given to
    :func:`define_op`: the schema holds ``placeholder`` (what a call without it gets),
    and the op attribute ``"attrs_without_default"`` lists the field, so the text
    printer always prints it (``units=None``, ``pool_size=[2, 2]``).

    >>> from relaykit.op import get
    >>> get("nn.dense").get_attr("attrs_without_default")
    ('units',)
    """

    __slots__ = ("placeholder",)

    def __init__(self, placeholder: Any = None) -> None:
        self.placeholder = placeholder

    def __repr__(self) -> str:
        return f"no_default({self.placeholder!r})"


def no_default(placeholder: Any = None) -> NoDefault:
    """Mark a schema field as having no default: ``attrs={"units": no_default()}``."""
    return NoDefault(placeholder)


def define_op(
    name: str,
    *,
    num_inputs: int,
    type_rel: TypeRelation,
    compute: Kernel | None,
    attrs: Mapping[str, Any] | None = None,
    attrs_type_key: str = "DictAttrs",
    pattern: int = OpPattern.OPAQUE,
    num_outputs: int = 1,
    doc: str = "",
    registry: OpRegistry = default_registry,
    module: str | None = None,
) -> Op:
    """Register operator ``name`` with its schema, type relation and kernel.

    A schema value ``no_default(placeholder)`` marks a field without a default (see
    :class:`NoDefault`). ``module`` (default: the caller's module) is recorded as the op
    attribute ``"defined_in"``: where the operator's definition stands (helpers that
    call ``define_op`` for their caller pass the caller's module on).
    """
    if module is None:
        module = caller_module()
    schema: dict[str, Any] = {}
    without_default: list[str] = []
    for key, value in (attrs or {}).items():
        if isinstance(value, NoDefault):
            without_default.append(key)
            value = value.placeholder
        schema[key] = value
    extra: dict[str, Any] = {}
    if without_default:
        extra["attrs_without_default"] = tuple(without_default)
    return registry.register(
        name,
        num_inputs=num_inputs,
        num_outputs=num_outputs,
        attrs_schema=MappingProxyType(schema),
        attrs_type_key=attrs_type_key,
        FTypeRelation=type_rel,
        FCompute=compute,
        TOpPattern=pattern,
        doc=doc,
        defined_in=module,
        **extra,
    )


def caller_module(depth: int = 1) -> str:
    """The ``__name__`` of the module ``depth`` frames above the function calling this
    (as :func:`typing.NamedTuple` finds the module of the class it makes)."""
    return str(sys._getframe(depth + 1).f_globals.get("__name__", "__main__"))


def make_attrs(op: Op, given: Mapping[str, Any]) -> Attrs:
    """The full attribute set of a call to ``op``: ``given`` plus schema defaults."""
    schema = op.attrs_schema
    unknown = [k for k in given if k not in schema]
    if unknown:
        hints = []
        for k in unknown:
            close = difflib.get_close_matches(k, schema, n=1)
            hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        known = ", ".join(schema) or "none"
        raise AttrError(
            f"operator {op.name} has no attribute {', '.join(hints)}; its attributes are: {known}"
        )
    values = {k: given.get(k, default) for k, default in schema.items()}
    return Attrs(values, op.get_attr("attrs_type_key") or "DictAttrs")


def make_call(name: str | Op, args: Sequence[Any], **attrs: Any) -> Call:
    """A call of a registered operator with checked arity and attributes."""
    op = name if isinstance(name, Op) else default_registry.get(name)
    arity = op.num_inputs
    args = [a.astuple() if isinstance(a, TupleWrapper) else a for a in args]
    if arity is not None and arity != VARIADIC and len(args) != arity:
        raise IRError(f"operator {op.name} takes {arity} inputs, got {len(args)}")
    for i, a in enumerate(args):
        if not isinstance(a, Expr):
            raise IRError(
                f"input {i} of {op.name} must be a relay expression, got {type(a).__name__}; "
                "wrap numbers and arrays with relay.const(...)"
            )
    return Call(op, args, make_attrs(op, attrs))


def int_tuple(value: Any, what: str) -> tuple[int, ...]:
    """A static shape-like argument (an int or a sequence of ints) as a tuple of ints.

    An expression here means the caller wanted the dynamic operator (the constructors
    dispatch to ``relay.op.dyn`` before calling this), so it is an error, as is any
    item that is not an integer.

    >>> int_tuple([2, np.int64(3)], "newshape")
    (2, 3)
    """
    if isinstance(value, (int, np.integer)):
        return (int(value),)
    if isinstance(value, Expr):
        raise ArgumentError(f"{what} must be a list of integers here, not an expression")
    try:
        items = list(value)
    except TypeError:
        raise ArgumentError(
            f"{what} must be an integer or a list of integers, got {type(value).__name__}"
        ) from None
    try:
        ints = tuple(int(v) for v in items)
    except (TypeError, ValueError):
        raise ArgumentError(f"{what} must be a list of integers, got {items!r}") from None
    if any(isinstance(v, float) and v != int(v) for v in items):
        raise ArgumentError(f"{what} must be a list of integers, got {items!r}")
    return ints
