"""Text of patterns (in the sugar that builds them) and one-line descriptions of nodes.

>>> from relaykit.dataflow_pattern import is_op, wildcard
>>> pattern_to_str(is_op("nn.relu")(wildcard()).has_attr({"x": 1}))
"is_op('nn.relu')(wildcard()).has_attr({'x': 1})"
"""

from __future__ import annotations

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


def _fmt(p: DFPattern, depth: int) -> str:
    if type(p) is WildcardPattern:
        return "wildcard()"
    if type(p) is ConstantPattern:
        return "is_constant()"
    if type(p) is VarPattern:
        return f"is_var({p.name!r})" if p.name else "is_var()"
    if type(p) is ExprPattern:
        if isinstance(p.expr, Op):
            return f"is_op({p.expr.name!r})"
        return f"is_expr({describe_expr(p.expr)})"
    if depth <= 0:
        return "..."
    d = depth - 1
    if type(p) is CallPattern:
        args = "None" if p.args is None else _list(p.args, d)
        return f"{_fmt(p.op, depth)}({args})"
    if type(p) is AltPattern:
        return f"({_fmt(p.left, depth)} | {_fmt(p.right, depth)})"
    if type(p) is AttrPattern:
        return f"{_fmt(p.pattern, depth)}.has_attr({dict(p.attrs)!r})"
    if type(p) is TypePattern:
        return f"{_fmt(p.pattern, depth)}.has_type({p.type})"
    if type(p) is DataTypePattern:
        return f"{_fmt(p.pattern, depth)}.has_dtype({p.dtype!r})"
    if type(p) is ShapePattern:
        return f"{_fmt(p.pattern, depth)}.has_shape({list(p.shape)})"
    if type(p) is TuplePattern:
        return "is_tuple(None)" if p.fields is None else f"is_tuple([{_list(p.fields, d)}])"
    if type(p) is TupleGetItemPattern:
        index = "" if p.index is None else f", {p.index}"
        return f"is_tuple_get_item({_fmt(p.tuple, d)}{index})"
    if type(p) is FunctionPattern:
        params = "None" if p.params is None else f"[{_list(p.params, d)}]"
        return f"FunctionPattern({params}, {_fmt(p.body, d)})"
    if type(p) is DominatorPattern:
        return f"dominates({_fmt(p.parent, d)}, {_fmt(p.path, d)}, {_fmt(p.child, d)})"
    if type(p) is IfPattern:
        return f"is_if({_fmt(p.cond, d)}, {_fmt(p.true_branch, d)}, {_fmt(p.false_branch, d)})"
    if type(p) is LetPattern:
        return f"is_let({_fmt(p.var, d)}, {_fmt(p.value, d)}, {_fmt(p.body, d)})"
    return f"<{type(p).__name__}>"


def describe_expr(expr: Any) -> str:
    """A short description of one node: ``call to nn.relu``, ``%x``, ``constant float32[3]``."""
    if type(expr) is Call:
        op = expr.op
        if isinstance(op, Op):
            return f"call to {op.name}"
        if isinstance(op, GlobalVar):
            return f"call to @{op.name_hint}"
        if isinstance(op, Function):
            composite = op.attrs.get("Composite")
            return f"call to composite {composite}" if composite else "call to a function"
        return f"call to {describe_expr(op)}"
    if type(expr) is Var:
        return f"variable %{expr.name_hint}"
    if type(expr) is Constant:
        shape = "x".join(str(d) for d in expr.data.shape)
        return f"constant {expr.data.dtype}[{shape}]" if shape else f"constant {expr.data.dtype}"
    if type(expr) is Op:
        return f"op {expr.name}"
    if type(expr) is GlobalVar:
        return f"global @{expr.name_hint}"
    if type(expr) is Tuple:
        return f"tuple of {len(expr.fields)} fields"
    if type(expr) is TupleGetItem:
        return f"tuple projection .{expr.index}"
    if type(expr) is Function:
        return f"function of {len(expr.params)} parameters"
    if type(expr) is Let:
        return f"let %{expr.var.name_hint}"
    if type(expr) is If:
        return "if expression"
    if isinstance(expr, Expr):
        return type(expr).__name__
    return repr(expr)
