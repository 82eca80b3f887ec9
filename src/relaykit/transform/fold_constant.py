"""``FoldConstant``: evaluate operator calls whose inputs are all constants.

Each such call is run once with its operator's reference kernel and replaced
by the resulting constant (a tuple of constants for multi-output operators);
``TupleGetItem`` of a tuple literal becomes the field. Annotations
(``annotation.*``), operators without inputs (``zeros``, ``full``..., cheaper
to keep than to store) and functions handed to a backend or marked
``Primitive``/``Composite`` are left alone, as in TVM. A call whose kernel
fails is kept, so the error surfaces, with its context, when the model runs.
As in TVM, ``nn.dropout`` (and any stateful operator) is never evaluated, an
``If`` whose condition is a constant becomes the branch it takes, and a ``let``
whose value folds to a constant is inlined into its uses (which fold in turn).

Folding is bounded: a call whose result (from its inferred type, checked
*before* the kernel runs) holds a tensor of more than
:data:`DEFAULT_MAX_FOLD_BYTES` (64 MiB) stays a runtime operator, so a few
bytes of program (``broadcast_to(1f, shape=[16384, 16384])``) never make the
compiler allocate gigabytes. The limit is the ``PassContext`` config option
``"relay.FoldConstant.max_bytes"`` (bytes per tensor; ``0`` folds nothing).
Products and convolutions (``nn.dense``, ``nn.batch_matmul``, ``nn.matmul``,
``nn.conv*``) are also bounded by their work: at most
:data:`DEFAULT_MAX_FOLD_MACS` multiply-adds (``"relay.FoldConstant.max_macs"``),
so two expanded constants cannot make folding run for minutes.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2,))
>>> two = relay.add(relay.const([1.0, 1.0]), relay.const([1.0, 1.0]))
>>> mod = FoldConstant()(IRModule.from_expr(relay.Function([x], x * two)))
>>> mod["main"].body.args[1].data.numpy().tolist()
[2.0, 2.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.dtypes import DTYPES
from relaykit.errors import ArgumentError, RelayKitError
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    checked_type_or_none,
)
from relaykit.ir.functor import post_order, rebuild
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType, TupleType, Type

from .pass_infra import FunctionPass, PassContext

__all__ = [
    "FoldConstant",
    "fold_constant",
    "DEFAULT_MAX_FOLD_BYTES",
    "MAX_FOLD_BYTES_CONFIG",
    "max_fold_bytes",
    "largest_tensor_bytes",
    "DEFAULT_MAX_FOLD_MACS",
    "MAX_FOLD_MACS_CONFIG",
    "max_fold_macs",
    "fold_macs",
]

#: The largest tensor (in bytes) constant folding materialises by default: 64 MiB.
DEFAULT_MAX_FOLD_BYTES = 64 * 2**20

#: The ``PassContext`` config option that overrides :data:`DEFAULT_MAX_FOLD_BYTES`.
MAX_FOLD_BYTES_CONFIG = "relay.FoldConstant.max_bytes"


def max_fold_bytes(ctx: PassContext | None = None) -> int:
    """The per-tensor folding limit of ``ctx`` (the current ``PassContext`` by default).

    >>> with PassContext(config={"relay.FoldConstant.max_bytes": 1024}):
    ...     max_fold_bytes()
    1024
    >>> max_fold_bytes() == DEFAULT_MAX_FOLD_BYTES
    True
    """
    ctx = PassContext.current() if ctx is None else ctx
    value = ctx.config.get(MAX_FOLD_BYTES_CONFIG, DEFAULT_MAX_FOLD_BYTES)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ArgumentError(
            f"PassContext config {MAX_FOLD_BYTES_CONFIG!r} must be a number of bytes "
            f"(an int >= 0), got {value!r}"
        )
    return int(value)


#: The most multiply-adds one folded product or convolution may take by default (2**32).
DEFAULT_MAX_FOLD_MACS = 2**32

#: The ``PassContext`` config option that overrides :data:`DEFAULT_MAX_FOLD_MACS`.
MAX_FOLD_MACS_CONFIG = "relay.FoldConstant.max_macs"


def max_fold_macs(ctx: PassContext | None = None) -> int:
    """The work limit of ``ctx`` (the current ``PassContext`` by default)."""
    ctx = PassContext.current() if ctx is None else ctx
    value = ctx.config.get(MAX_FOLD_MACS_CONFIG, DEFAULT_MAX_FOLD_MACS)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ArgumentError(
            f"PassContext config {MAX_FOLD_MACS_CONFIG!r} must be a number of multiply-adds "
            f"(an int >= 0), got {value!r}"
        )
    return int(value)


def _shape_of(e: Expr) -> tuple[int, ...] | None:
    if type(e) is Constant:
        return tuple(e.data.shape)
    ty = checked_type_or_none(e)
    return ty.shape if isinstance(ty, TensorType) else None


def fold_macs(call: Call, ty: Type | None) -> int:
    """An upper bound of the multiply-adds of evaluating ``call`` (of result type ``ty``)
    for products and convolutions; 0 for other operators, whose work is bounded by the
    sizes of their tensors.

    >>> from relaykit import relay
    >>> a = relay.const(np.ones((64, 32), "float32"))
    >>> w = relay.const(np.ones((16, 32), "float32"))
    >>> fold_macs(relay.nn.dense(a, w), TensorType((64, 16), "float32"))
    32768
    """
    op = call.op
    if type(op) is not Op or not isinstance(ty, TensorType) or len(call.args) < 2:
        return 0
    name = op.name
    shapes = [_shape_of(a) for a in call.args[:2]]
    if shapes[0] is None or shapes[1] is None:
        return 0
    if name == "nn.dense" and shapes[0]:
        return ty.size * shapes[0][-1]
    if name in ("nn.batch_matmul", "nn.matmul") and shapes[0]:
        return ty.size * max(shapes[0][-2:])
    if name.startswith("nn.conv"):
        return ty.size * math.prod(shapes[1])
    return 0


def largest_tensor_bytes(ty: Type | None) -> int | None:
    """The size in bytes of the largest tensor a value of type ``ty`` holds, or None
    when ``ty`` is not a tensor or a tuple of them.

    >>> largest_tensor_bytes(TupleType([TensorType((4, 4), "float32"), TensorType((3,), "int8")]))
    64
    """
    if isinstance(ty, TensorType):
        if not ty.is_static:  # a ? or symbolic dim: the size is known at run time only
            return None
        return ty.size * DTYPES[ty.dtype].itemsize
    if isinstance(ty, TupleType):
        sizes = [largest_tensor_bytes(f) for f in ty.fields]
        if any(s is None for s in sizes):
            return None
        return max((s for s in sizes if s is not None), default=0)
    return None


_OPAQUE_FUNCTION_ATTRS = ("Primitive", "Composite", "Compiler")

#: Operators never evaluated at compile time, as in TVM: ``nn.dropout`` is random at
#: training time (``SimplifyInference`` removes it for inference), so folding it would
#: fix one outcome. Operators registered as stateful (``TOpIsStateful``) are kept too.
NEVER_FOLDED = frozenset({"nn.dropout"})


def _is_opaque(fn: Function) -> bool:
    return any(k in fn.attrs for k in _OPAQUE_FUNCTION_ATTRS)


def _constant_value(e: Expr) -> Any:
    """The array (or tuple of arrays) of a constant or tuple of constants, else None."""
    if type(e) is Constant:
        return e.data.numpy()
    if type(e) is Tuple:
        vals = [_constant_value(f) for f in e.fields]
        if all(v is not None for v in vals):
            return tuple(vals)
    return None


def _matches(value: Any, ty: Any) -> bool:
    if ty is None:
        return True
    if isinstance(ty, TensorType):
        return (
            isinstance(value, np.ndarray)
            and value.shape == ty.shape
            and (value.dtype.name == ty.dtype)
        )
    if isinstance(ty, TupleType):
        return (
            isinstance(value, tuple)
            and len(value) == len(ty.fields)
            and all(_matches(v, t) for v, t in zip(value, ty.fields, strict=True))
        )
    return False


def _as_expr(value: Any) -> Expr:
    if isinstance(value, tuple):
        return Tuple([_as_expr(v) for v in value])
    return Constant(np.asarray(value, order="C"))


def _result_type(new: Call, old: Call) -> Type | None:
    """The type of the call's result: the original's, else inferred for the new call
    (whose arguments are constants, so that is cheap); None when it does not type."""
    ty = checked_type_or_none(old)
    if ty is not None:
        return ty
    try:
        return infer_type_local(new)
    except RelayKitError:  # keep the call: the type error shows when the model is typed
        return None


def _fold_call(new: Call, old: Call, limit: int, macs: int, fold_qnn: bool) -> Expr | None:
    op = new.op
    if type(op) is not Op or not new.args or op.name.startswith("annotation."):
        return None
    if not fold_qnn and op.name.startswith("qnn."):
        return None
    if op.name in NEVER_FOLDED or op.name in PLACEMENT_OPS or op.get_attr("TOpIsStateful"):
        return None
    kernel = op.get_attr("FCompute")
    if kernel is None:
        return None
    if any(type(a) is not Constant and type(a) is not Tuple for a in new.args):
        stripped = [_placed_constant(a) for a in new.args]
        if any(a is None for a in stripped):
            return None
        new = new.with_fields(args=stripped)  # constants placed by on_device fold too
    # decide from the type, before the kernel allocates anything
    ty = _result_type(new, old)
    size = largest_tensor_bytes(ty)
    if size is None or size > limit or fold_macs(new, ty) > macs:
        return None
    args = [_constant_value(a) for a in new.args]
    if any(a is None for a in args):
        return None
    try:
        with np.errstate(all="ignore"):
            out = kernel(args, new.attrs)
    except Exception:  # keep the call: the error shows, with context, at run time
        return None
    if isinstance(out, list):
        out = tuple(out)
    if isinstance(out, np.generic):
        out = np.asarray(out)
    if not _matches(out, ty):
        return None
    return _as_expr(out)


#: placement markers: never folded themselves (an ``on_device`` around a constant keeps
#: saying where the constant lives), but looked through when their body is a constant
PLACEMENT_OPS = frozenset({"on_device", "device_copy"})


def _placed_constant(e: Expr) -> Expr | None:
    """``e`` when it is a constant or tuple, the constant inside ``on_device`` wrappers,
    else None."""
    while type(e) is Call and type(e.op) is Op and e.op.name == "on_device" and len(e.args) == 1:
        e = e.args[0]
    return e if type(e) is Constant or type(e) is Tuple else None


#: operators that read only their input's shape: folded when it is static (as TVM's
#: FoldConstant does), whether or not the input's value is known
SHAPE_QUERIES = frozenset({"shape_of", "ndarray_size"})


def _fold_shape_query(new: Call, old: Call) -> Expr | None:
    """``shape_of(x)`` / ``ndarray_size(x)`` of an ``x`` with a static type, as a constant."""
    op = new.op
    if type(op) is not Op or op.name not in SHAPE_QUERIES or len(new.args) != 1:
        return None
    ty = checked_type_or_none(old.args[0]) or checked_type_or_none(new.args[0])
    if not isinstance(ty, TensorType) or not ty.is_static:
        return None
    dtype = new.attrs.dtype or "int32"
    if op.name == "shape_of":
        return Constant(np.array(ty.shape, dtype=dtype).reshape(len(ty.shape)))
    return Constant(np.array(int(np.prod(ty.shape, dtype=np.int64)), dtype=dtype))


def rewrite_outside_opaque(expr: Expr, post: Callable[[Expr, Expr], Expr | None]) -> Expr:
    """``rewrite_post_order(expr, post)`` in one walk that does not enter functions for
    backends or composites (``Compiler``, ``Primitive``, ``Composite``), except ``expr``."""
    memo: dict[Expr, Expr] = {}

    def skip(node: Expr) -> bool:
        if node in memo:
            return True
        if type(node) is Function and node is not expr and _is_opaque(node):
            memo[node] = node
            return True
        return False

    lookup = memo.__getitem__
    for node in post_order(expr, skip=skip):
        rebuilt = rebuild(node, lookup)
        out = post(rebuilt, node)
        memo[node] = rebuilt if out is None else out
    return memo[expr]


def _constant_condition(cond: Expr) -> bool | None:
    """The truth of a scalar boolean constant condition, else None."""
    if type(cond) is not Constant or cond.data.shape != ():
        return None
    return bool(cond.data.numpy())


def _fold_walk(expr: Expr, post: Callable[[Expr, Expr], Expr | None]) -> Expr:
    """``rewrite_outside_opaque(expr, post)`` that also inlines every ``let`` whose value
    folds to a constant (TVM's ``FoldConstant`` does): the variable's uses see the
    constant, so what depends on it folds in the same walk, and the binding goes."""
    memo: dict[Expr, Expr] = {}
    let_var_of: dict[Expr, Var] = {}  # a let's value -> its variable
    bound: dict[Expr, Expr] = {}  # a let variable -> the constant it is bound to

    def skip(node: Expr) -> bool:
        if node in memo:
            return True
        if type(node) is Function and node is not expr and _is_opaque(node):
            memo[node] = node
            return True
        if type(node) is Let:  # seen before its value is rewritten (children come later)
            let_var_of[node.value] = node.var
        return False

    def lookup(e: Expr) -> Expr:
        c = bound.get(e)
        return memo[e] if c is None else c

    for node in post_order(expr, skip=skip):
        if type(node) is Let and node.var in bound:
            memo[node] = memo[node.body]
            continue
        rebuilt = rebuild(node, lookup)
        out = post(rebuilt, node)
        result = memo[node] = rebuilt if out is None else out
        var = let_var_of.get(node)
        if var is not None and type(_placed_constant(result)) is Constant:
            bound[var] = result  # inlined with its on_device, as TVM does
    return memo[expr]


def fold_constant(
    expr: Expr,
    mod: IRModule | None = None,
    max_bytes: int | None = None,
    max_macs: int | None = None,
    fold_qnn: bool = False,
) -> Expr:
    """``expr`` with constant sub-expressions evaluated (TVM's ``relay.transform.FoldConstant``
    on one expression). No tensor above ``max_bytes`` (default: :func:`max_fold_bytes`
    of the current ``PassContext``) is computed, nor a product or convolution of more
    than ``max_macs`` multiply-adds; such calls stay runtime operators. QNN operators
    (``qnn.*``) are folded only with ``fold_qnn=True``, as in TVM."""
    if type(expr) is Function and _is_opaque(expr):
        return expr
    limit = max_fold_bytes() if max_bytes is None else int(max_bytes)
    macs = max_fold_macs() if max_macs is None else int(max_macs)

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is Call:
            shape = _fold_shape_query(new, old)  # type: ignore[arg-type]
            if shape is not None:
                return shape
            return _fold_call(new, old, limit, macs, fold_qnn)  # type: ignore[arg-type]
        if type(new) is TupleGetItem and type(new.tuple_value) is Tuple:
            return new.tuple_value.fields[new.index]
        if type(new) is If:
            truth = _constant_condition(new.cond)
            if truth is not None:
                return new.true_branch if truth else new.false_branch
        return None

    return _fold_walk(expr, post)


class FoldConstant(FunctionPass):
    """``relay.transform.FoldConstant()`` (opt_level 2)."""

    def __init__(self, fold_qnn: bool = False) -> None:
        self._fold_qnn = bool(fold_qnn)
        super().__init__(self._transform, opt_level=2, name="FoldConstant")

    def _transform(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = fold_constant(fn, mod, max_fold_bytes(ctx), max_fold_macs(ctx), self._fold_qnn)
        return out if isinstance(out, Function) else fn
