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
from relaykit.ir.expr import Call, Expr, Function, If, Let, Tuple, TupleGetItem
from relaykit.ir.op import Op, get_op
from relaykit.ir.types import Type

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
    "fast_rebuild",
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
        from relaykit.op import annotation  # noqa: F401  (registers the operators)

        _OPS = (get_op("annotation.compiler_begin"), get_op("annotation.compiler_end"))
    return _OPS


def _compiler_attrs(target: str) -> Attrs:
    attrs = _ATTRS.get(target)
    if attrs is None:
        attrs = Attrs({"compiler": target}, "relay.attrs.CompilerAttrs")
        _ATTRS[target] = attrs
    return attrs


def _annotate(op: Op, expr: Expr, target: str) -> Call:
    return new_call(op, (expr,), _compiler_attrs(target), (), None, expr._checked_type)


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


def data_children(node: Expr) -> tuple[Expr, ...]:
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
    """Give ``new`` the checked type of ``old`` (when it has one) and return it."""
    if new is not old:
        ty: Type | None = old._checked_type
        if ty is not None and new._checked_type is None:
            new._set_checked_type(ty)
    return new


def ensure_typed(func: Function, mod: Any = None) -> Function:
    """``func`` with types inferred, when its body has none yet."""
    if func.has_checked_type and func.body.has_checked_type:
        return func
    from relaykit.transform.infer_type import infer_function

    return infer_function(func, mod)


# -- fast node construction ---------------------------------------------------------------
# The partitioning passes build hundreds of thousands of nodes from children that are
# already valid expressions. These constructors skip the argument validation of the
# public constructors (which dominates their cost) and set the checked type in the same
# step. They fall back to the public constructors if the node layout ever changes.

_set = object.__setattr__
_new = object.__new__
_FAST = (
    Expr.__slots__ == ("_checked_type", "span", "__weakref__")
    and Call.__slots__ == ("op", "args", "attrs", "type_args")
    and Tuple.__slots__ == ("fields",)
    and TupleGetItem.__slots__ == ("tuple_value", "index")
)


def new_call(
    op: Expr, args: Any, attrs: Attrs, type_args: Any = (), span: Any = None, ty: Type | None = None
) -> Call:
    """``Call(op, args, attrs, type_args, span)`` with checked type ``ty``, unvalidated."""
    if not _FAST:  # pragma: no cover - only if the IR's node layout changes
        call = Call(op, list(args), attrs, list(type_args), span)
    else:
        call = _new(Call)
        _set(call, "op", op)
        _set(call, "args", tuple(args))
        _set(call, "attrs", attrs)
        _set(call, "type_args", tuple(type_args))
        _set(call, "span", span)
    _set(call, "_checked_type", ty)
    return call


def new_tuple(fields: Any, span: Any = None, ty: Type | None = None) -> Tuple:
    """``Tuple(fields, span)`` with checked type ``ty``, unvalidated."""
    if not _FAST:  # pragma: no cover
        tup = Tuple(list(fields), span)
    else:
        tup = _new(Tuple)
        _set(tup, "fields", tuple(fields))
        _set(tup, "span", span)
    _set(tup, "_checked_type", ty)
    return tup


def new_tuple_get_item(
    value: Expr, index: int, span: Any = None, ty: Type | None = None
) -> TupleGetItem:
    """``TupleGetItem(value, index, span)`` with checked type ``ty``, unvalidated."""
    if not _FAST:  # pragma: no cover
        tgi = TupleGetItem(value, index, span)
    else:
        tgi = _new(TupleGetItem)
        _set(tgi, "tuple_value", value)
        _set(tgi, "index", index)
        _set(tgi, "span", span)
    _set(tgi, "_checked_type", ty)
    return tgi


def fast_rebuild(node: Expr, new: Any) -> Expr:
    """``node`` with each child ``c`` replaced by ``new(c)``, typed like ``node``
    (``node`` itself when no child changed)."""
    t = type(node)
    if t is Call:
        op = node.op
        nop = new(op)
        args = node.args
        nargs = [new(a) for a in args]
        if nop is op and all(a is b for a, b in zip(nargs, args, strict=True)):
            return node
        return new_call(nop, nargs, node.attrs, node.type_args, node.span, node._checked_type)
    if t is Tuple:
        fields = node.fields
        nfields = [new(f) for f in fields]
        if all(a is b for a, b in zip(nfields, fields, strict=True)):
            return node
        return new_tuple(nfields, node.span, node._checked_type)
    if t is TupleGetItem:
        tv = new(node.tuple_value)
        if tv is node.tuple_value:
            return node
        return new_tuple_get_item(tv, node.index, node.span, node._checked_type)
    if t is Function:
        out = node.with_fields(params=[new(p) for p in node.params], body=new(node.body))
    elif t is Let:
        out = node.with_fields(var=new(node.var), value=new(node.value), body=new(node.body))
    elif t is If:
        out = node.with_fields(
            cond=new(node.cond),
            true_branch=new(node.true_branch),
            false_branch=new(node.false_branch),
        )
    else:
        return node
    return copy_type(out, node)


def rebuild_with(node: Expr, memo: dict[Expr, Expr]) -> Expr:
    """``node`` with each child found in ``memo`` replaced by its value (``node`` itself
    when none is): :func:`fast_rebuild` specialised to a replacement table."""
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
        return new_call(nop, nargs, node.attrs, node.type_args, node.span, node._checked_type)
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
        return new_tuple(nfields, node.span, node._checked_type)
    if t is TupleGetItem:
        tv = get(node.tuple_value)
        if tv is None:
            return node
        return new_tuple_get_item(tv, node.index, node.span, node._checked_type)
    return fast_rebuild(node, lambda c: get(c, c))


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
