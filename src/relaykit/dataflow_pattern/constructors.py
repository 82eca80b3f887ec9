"""The functions that build patterns, with TVM's names.

>>> from relaykit.dataflow_pattern import is_op, wildcard, is_constant, is_var
>>> pat = is_op("nn.conv2d")(is_var("x"), is_constant()).has_attr({"data_layout": "NCHW"})
>>> type(pat).__name__
'AttrPattern'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from relaykit.ir.expr import Expr
from relaykit.ir.op import get_op
from relaykit.ir.types import Type

from .pattern import (
    AttrPattern,
    ConstantPattern,
    DataTypePattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
    IfPattern,
    LetPattern,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
)

__all__ = [
    "wildcard",
    "is_op",
    "is_constant",
    "is_var",
    "is_expr",
    "is_tuple",
    "is_tuple_get_item",
    "is_if",
    "is_let",
    "has_attr",
    "has_type",
    "has_dtype",
    "has_shape",
    "dominates",
]


def wildcard() -> WildcardPattern:
    """A pattern matching anything (each call is a distinct pattern)."""
    return WildcardPattern()


def is_op(op_name: str) -> ExprPattern:
    """The operator ``op_name``; call it to match calls: ``is_op("nn.relu")(wildcard())``.

    Raises :class:`relaykit.errors.OpNotFoundError` (with close names) for an unknown op.
    """
    return ExprPattern(get_op(op_name))


def is_constant() -> ConstantPattern:
    """A pattern matching any constant; partitioning embeds what it matched."""
    return ConstantPattern()


def is_var(name: str = "") -> VarPattern:
    """A pattern matching a variable, named ``name`` if given."""
    return VarPattern(name)


def is_expr(expr: Expr) -> ExprPattern:
    """A pattern matching expressions structurally equal to ``expr``."""
    return ExprPattern(expr)


def is_tuple(fields: Sequence[Any] | None) -> TuplePattern:
    """A tuple of the given field patterns; ``None`` matches tuples of any size."""
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value: DFPattern, index: int | None = None) -> TupleGetItemPattern:
    """``tuple_value[index]``; ``index=None`` matches any index."""
    return TupleGetItemPattern(tuple_value, index)


def is_if(cond: DFPattern, true_branch: DFPattern, false_branch: DFPattern) -> IfPattern:
    """An ``if`` whose condition and branches match the given patterns."""
    return IfPattern(cond, true_branch, false_branch)


def is_let(var: DFPattern, value: DFPattern, body: DFPattern) -> LetPattern:
    """A ``let`` whose variable, value and body match the given patterns."""
    return LetPattern(var, value, body)


def has_attr(attrs: Mapping[str, Any], pattern: DFPattern | None = None) -> AttrPattern:
    """``pattern`` (default: ``wildcard()``) with the given attributes."""
    return AttrPattern(WildcardPattern() if pattern is None else pattern, attrs)


def has_type(ttype: Type, pattern: DFPattern | None = None) -> TypePattern:
    """``pattern`` (default: ``wildcard()``) of type ``ttype``."""
    return TypePattern(WildcardPattern() if pattern is None else pattern, ttype)


def has_dtype(dtype: Any, pattern: DFPattern | None = None) -> DataTypePattern:
    """``pattern`` (default: ``wildcard()``) with element type ``dtype``."""
    return DataTypePattern(WildcardPattern() if pattern is None else pattern, dtype)


def has_shape(shape: Sequence[int], pattern: DFPattern | None = None) -> ShapePattern:
    """``pattern`` (default: ``wildcard()``) with tensor shape ``shape``."""
    return ShapePattern(WildcardPattern() if pattern is None else pattern, shape)


def dominates(parent: DFPattern, path: DFPattern, child: DFPattern) -> DominatorPattern:
    """``child`` post-dominates ``parent``, every node in between matching ``path``.

    ``dominates(is_op("nn.conv2d")(wildcard(), wildcard()), elemwise, is_op("add")(...))``
    matches a diamond of element-wise ops from a convolution to an ``add``.
    """
    return DominatorPattern(parent, path, child)
