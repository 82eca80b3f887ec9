"""Shared helpers of the partitioning passes: annotation calls, composite
functions, the dataflow children of a node and the error type.

>>> from relaykit.ir import Var, TensorType
>>> x = Var("x", TensorType((2,)))
>>> b = make_begin(x, "dnnl")
>>> is_begin(b), annotation_target(b)
(True, 'dnnl')
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import (
    Call,
    Expr,
    Function,
    If,
    Let,
    Tuple,
    TupleGetItem,
    checked_type_or_none,
)
from relaykit.ir.functor import rebuild
from relaykit.ir.op import Op, get_op
from relaykit.ir.type_check import infer_function
from relaykit.ir.types import Type
from relaykit.op import annotation  # noqa: F401 - registers compiler_begin/compiler_end

__all__ = [
    "DEFAULT_TARGET",
    "PartitionError",
    "annotation_ops",
    "make_begin",
    "make_end",
    "is_begin",
    "is_end",
    "is_annotation",
    "annotation_target",
    "composite_name",
    "is_composite",
    "data_children",
    "copy_type",
    "ensure_typed",
    "new_call",
    "new_tuple",
    "new_tuple_get_item",
    "rebuild_with",
    "no_gc",
]

#: The target of everything that stays on the host (TVM's ``"default"``).
DEFAULT_TARGET = "default"


class PartitionError(IRError):
    """The annotations or regions of a module are inconsistent, or a partitioning
    option is invalid; the message says which node or option and what to do."""


_OPS: tuple[Op, Op] | None = None
_ATTRS: dict[str, Attrs] = {}


def annotation_ops() -> tuple[Op, Op]:
    """``(annotation.compiler_begin, annotation.compiler_end)``."""
    global _OPS
    if _OPS is None:
        _OPS = (get_op("annotation.compiler_begin"), get_op("annotation.compiler_end"))
    return _OPS


def _compiler_attrs(target: str) -> Attrs:
    attrs = _ATTRS.get(target)
    if attrs is None:
        attrs = Attrs({"compiler": target}, "relay.attrs.CompilerAttrs")
        _ATTRS[target] = attrs
    return attrs


def _annotate(op: Op, expr: Expr, target: str) -> Call:
    return new_call(op, (expr,), _compiler_attrs(target), (), None, checked_type_or_none(expr))


def make_begin(expr: Expr, target: str) -> Call:
    """``compiler_begin(expr, target)``, typed like ``expr``."""
    return _annotate(annotation_ops()[0], expr, target)


def make_end(expr: Expr, target: str) -> Call:
    """``compiler_end(expr, target)``, typed like ``expr``."""
    return _annotate(annotation_ops()[1], expr, target)


def is_begin(expr: Expr) -> bool:
    return type(expr) is Call and expr.op is annotation_ops()[0]


def is_end(expr: Expr) -> bool:
    return type(expr) is Call and expr.op is annotation_ops()[1]


def is_annotation(expr: Expr) -> bool:
    if type(expr) is not Call:
        return False
    begin, end = annotation_ops()
    return expr.op is begin or expr.op is end


def annotation_target(call: Call) -> str:
    """The ``compiler`` attribute of an annotation call."""
    return str(call.attrs["compiler"])


def composite_name(expr: Any) -> str | None:
    """The ``Composite`` attribute of a function (or of a call's callee), else None."""
    if type(expr) is Call:
        expr = expr.op
    if type(expr) is Function:
        name = expr.attrs.get("Composite")
        return None if name is None else str(name)
    return None


def is_composite(expr: Any) -> bool:
    return composite_name(expr) is not None


def data_children(node: Any) -> tuple[Expr, ...]:
    """The sub-expressions whose values ``node`` consumes, in evaluation order.

    Differs from :func:`relaykit.ir.children` in two ways: the callee of an
    operator or composite call is not data, and ``Let`` evaluates its value
    before its variable and body.
    """
    t = type(node)
    if t is Call:
        op = node.op
        if type(op) is Op or (type(op) is Function and "Composite" in op.attrs):
            return node.args
        return (op, *node.args)
    if t is Tuple:
        return node.fields
    if t is TupleGetItem:
        return (node.tuple_value,)
    if t is Let:
        return (node.value, node.var, node.body)
    if t is If:
        return (node.cond, node.true_branch, node.false_branch)
    if t is Function:
        if "Composite" in node.attrs:
            return ()
        return (*node.params, node.body)
    return ()


def copy_type(new: Expr, old: Expr) -> Expr:
    """Give ``new`` (rebuilt from ``old``) the checked type of ``old`` when it has one
    and ``new`` has none; return ``new``."""
    if new is not old:
        ty = checked_type_or_none(old)
        if ty is not None and checked_type_or_none(new) is None:
            new.set_checked_type(ty)
    return new


def ensure_typed(func: Function, mod: Any = None) -> Function:
    """``func`` with types inferred, when its body has none yet."""
    if func.has_checked_type and func.body.has_checked_type:
        return func
    return infer_function(func, mod)


# -- fast node construction ---------------------------------------------------------------
# The partitioning passes build hundreds of thousands of nodes from children that are
# already valid expressions. These constructors use the IR's unvalidated constructors
# (``Call.unchecked`` ...), which skip the argument checks of the public constructors
# (they dominate their cost) and set the checked type in the same step.

_call = Call.unchecked
_tuple = Tuple.unchecked
_tuple_get_item = TupleGetItem.unchecked


def new_call(
    op: Expr, args: Any, attrs: Attrs, type_args: Any = (), span: Any = None, ty: Type | None = None
) -> Call:
    """``Call(op, args, attrs, type_args, span)`` with checked type ``ty``, unvalidated."""
    return _call(op, tuple(args), attrs, tuple(type_args), span=span, checked_type=ty)


def new_tuple(fields: Any, span: Any = None, ty: Type | None = None) -> Tuple:
    """``Tuple(fields, span)`` with checked type ``ty``, unvalidated."""
    return _tuple(tuple(fields), span=span, checked_type=ty)


def new_tuple_get_item(
    value: Expr, index: int, span: Any = None, ty: Type | None = None
) -> TupleGetItem:
    """``TupleGetItem(value, index, span)`` with checked type ``ty``, unvalidated."""
    return _tuple_get_item(value, index, span=span, checked_type=ty)


def rebuild_with(node: Any, memo: dict[Expr, Expr]) -> Expr:
    """``node`` with each child found in ``memo`` replaced by its value (``node`` itself
    when none is), typed like ``node``."""
    t = type(node)
    get = memo.get
    if t is Call:
        args = node.args
        nargs = None
        for i, a in enumerate(args):
            na = get(a)
            if na is not None:
                if nargs is None:
                    nargs = list(args)
                nargs[i] = na
        op = node.op
        nop = get(op, op)
        if nargs is None:
            if nop is op:
                return node
            nargs = args
        return _call(
            nop,
            tuple(nargs),
            node.attrs,
            node.type_args,
            span=node.span,
            checked_type=checked_type_or_none(node),
        )
    if t is Tuple:
        fields = node.fields
        nfields = None
        for i, f in enumerate(fields):
            nf = get(f)
            if nf is not None:
                if nfields is None:
                    nfields = list(fields)
                nfields[i] = nf
        if nfields is None:
            return node
        return _tuple(tuple(nfields), span=node.span, checked_type=checked_type_or_none(node))
    if t is TupleGetItem:
        tv = get(node.tuple_value)
        if tv is None:
            return node
        return _tuple_get_item(
            tv, node.index, span=node.span, checked_type=checked_type_or_none(node)
        )
    return copy_type(rebuild(node, lambda c: get(c, c)), node)


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block.

    The passes allocate hundreds of thousands of acyclic IR nodes; each collection
    would rescan all of them, making a pass superlinear in the size of the graph.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
