"""Text of patterns (in the sugar that builds them) and one-line descriptions of nodes.

>>> from relaykit.dataflow_pattern import is_op, wildcard
>>> pattern_to_str(is_op("nn.relu")(wildcard()).has_attr({"x": 1}))
"is_op('nn.relu')(wildcard()).has_attr({'x': 1})"
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
)
from relaykit.ir.op import Op

from .pattern import (
    AltPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataTypePattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    IfPattern,
    LetPattern,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
)

__all__ = ["pattern_to_str", "describe_expr"]

#: Sub-patterns nested deeper than this print as ``...``.
_MAX_DEPTH = 6


def pattern_to_str(pattern: DFPattern, max_depth: int = _MAX_DEPTH) -> str:
    """``pattern`` written the way it is built; nesting below ``max_depth`` prints ``...``."""
    return _fmt(pattern, max_depth)


def _list(items: Any, depth: int) -> str:
    if items is None:
        return "None"
    return ", ".join(_fmt(p, depth) for p in items)


def _fmt_expr_pattern(p: Any) -> str:
    if isinstance(p.expr, Op):
        return f"is_op({p.expr.name!r})"
    return f"is_expr({describe_expr(p.expr)})"


#: Patterns printed without their children: (pattern) -> text.
_LEAVES: dict[type, Callable[[Any], str]] = {
    WildcardPattern: lambda p: "wildcard()",
    ConstantPattern: lambda p: "is_constant()",
    VarPattern: lambda p: f"is_var({p.name!r})" if p.name else "is_var()",
    ExprPattern: _fmt_expr_pattern,
}

#: Patterns with children: (pattern, depth, depth - 1) -> text. A suffix
#: (``.has_attr(...)``, ``| ...``) keeps the depth of the pattern it is attached to.
_COMPOUNDS: dict[type, Callable[[Any, int, int], str]] = {
    CallPattern: lambda p, depth, d: (
        f"{_fmt(p.op, depth)}({'None' if p.args is None else _list(p.args, d)})"
    ),
    AltPattern: lambda p, depth, d: f"({_fmt(p.left, depth)} | {_fmt(p.right, depth)})",
    AttrPattern: lambda p, depth, d: f"{_fmt(p.pattern, depth)}.has_attr({dict(p.attrs)!r})",
    TypePattern: lambda p, depth, d: f"{_fmt(p.pattern, depth)}.has_type({p.type})",
    DataTypePattern: lambda p, depth, d: f"{_fmt(p.pattern, depth)}.has_dtype({p.dtype!r})",
    ShapePattern: lambda p, depth, d: f"{_fmt(p.pattern, depth)}.has_shape({list(p.shape)})",
    TuplePattern: lambda p, depth, d: (
        "is_tuple(None)" if p.fields is None else f"is_tuple([{_list(p.fields, d)}])"
    ),
    TupleGetItemPattern: lambda p, depth, d: (
        f"is_tuple_get_item({_fmt(p.tuple, d)}{'' if p.index is None else f', {p.index}'})"
    ),
    FunctionPattern: lambda p, depth, d: (
        f"FunctionPattern({'None' if p.params is None else f'[{_list(p.params, d)}]'}, "
        f"{_fmt(p.body, d)})"
    ),
    DominatorPattern: lambda p, depth, d: (
        f"dominates({_fmt(p.parent, d)}, {_fmt(p.path, d)}, {_fmt(p.child, d)})"
    ),
    IfPattern: lambda p, depth, d: (
        f"is_if({_fmt(p.cond, d)}, {_fmt(p.true_branch, d)}, {_fmt(p.false_branch, d)})"
    ),
    LetPattern: lambda p, depth, d: (
        f"is_let({_fmt(p.var, d)}, {_fmt(p.value, d)}, {_fmt(p.body, d)})"
    ),
}


def _fmt(p: DFPattern, depth: int) -> str:
    leaf = _LEAVES.get(type(p))
    if leaf is not None:
        return leaf(p)
    if depth <= 0:
        return "..."
    compound = _COMPOUNDS.get(type(p))
    if compound is None:
        return f"<{type(p).__name__}>"
    return compound(p, depth, depth - 1)


def _describe_call(expr: Call) -> str:
    op = expr.op
    if isinstance(op, Op):
        return f"call to {op.name}"
    if isinstance(op, GlobalVar):
        return f"call to @{op.name_hint}"
    if isinstance(op, Function):
        composite = op.attrs.get("Composite")
        return f"call to composite {composite}" if composite else "call to a function"
    return f"call to {describe_expr(op)}"


def _describe_constant(expr: Constant) -> str:
    shape = "x".join(str(d) for d in expr.data.shape)
    return f"constant {expr.data.dtype}[{shape}]" if shape else f"constant {expr.data.dtype}"


#: One line per node kind: (node) -> description.
_DESCRIBE: dict[type, Callable[[Any], str]] = {
    Call: _describe_call,
    Var: lambda e: f"variable %{e.name_hint}",
    Constant: _describe_constant,
    Op: lambda e: f"op {e.name}",
    GlobalVar: lambda e: f"global @{e.name_hint}",
    Tuple: lambda e: f"tuple of {len(e.fields)} fields",
    TupleGetItem: lambda e: f"tuple projection .{e.index}",
    Function: lambda e: f"function of {len(e.params)} parameters",
    Let: lambda e: f"let %{e.var.name_hint}",
    If: lambda e: "if expression",
}


def describe_expr(expr: Any) -> str:
    """A short description of one node: ``call to nn.relu``, ``%x``, ``constant float32[3]``."""
    describe = _DESCRIBE.get(type(expr))
    if describe is not None:
        return describe(expr)
    if isinstance(expr, Expr):
        return type(expr).__name__
    return repr(expr)
