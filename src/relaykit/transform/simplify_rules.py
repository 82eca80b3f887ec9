"""The rewrite rules of ``SimplifyExpr``, one function each.

A rule takes the rebuilt call ``new`` (its arguments already simplified) and the
typed call ``old`` it replaces, and returns the replacement or ``None``. Rules
only rewrite where the result computes the same values: a rule that needs a type,
a constant or a static shape it cannot see leaves the call alone. Binary
``add`` and ``multiply`` match with their operands either way round.

>>> from relaykit import relay
>>> from relaykit.transform.infer_type import infer_type
>>> x = relay.var("x", shape=(2,))
>>> old = relay.add(x, x); _ = infer_type(old)
>>> simplify_add(old, old).op.name
'multiply'
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from relaykit.ir.expr import Call, Constant, Expr, checked_type_or_none, const
from relaykit.ir.op import Op, default_registry, get_op
from relaykit.ir.structural import structural_equal
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType
from relaykit.op import (
    broadcast_to,
    cast,
    collapse_sum_to,
    full,
    layout_transform,
    ones,
    reshape,
    transpose,
    zeros,
)
from relaykit.op.define import OpPattern

__all__ = ["RULES", "simplify_add"]


# -- helpers -------------------------------------------------------------------------------
def name_of(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def type_of(e: Expr) -> Any:
    return checked_type_or_none(e) if e.has_checked_type else infer_type_local(e)


def tensor_type(e: Expr) -> TensorType | None:
    t = type_of(e)
    return t if isinstance(t, TensorType) else None


def static_shape(e: Expr) -> list[int] | None:
    t = tensor_type(e)
    if t is None or not all(isinstance(d, int) for d in t.shape):
        return None
    return [int(d) for d in t.shape]


def same_type(a: Expr, b: Expr) -> bool:
    ta, tb = type_of(a), type_of(b)
    return ta is not None and tb is not None and structural_equal(ta, tb)


def orders(call: Call) -> Iterator[tuple[Expr, Expr]]:
    """The two operands of a binary call, both ways round for add and multiply."""
    a, b = call.args
    yield a, b
    if name_of(call) in ("add", "multiply"):
        yield b, a


def call_op(name: str, args: list[Expr], attrs: Any = None) -> Call:
    return Call(get_op(name), args, attrs)


def scalar_value(e: Expr) -> float | None:
    if type(e) is not Constant or e.data.shape != ():
        return None
    try:
        return float(e.data.numpy())
    except (TypeError, ValueError):
        return None


def fold(name: str, a: Constant, b: Constant) -> Constant:
    """``a <name> b`` of two constants, in their dtype (NumPy broadcasting)."""
    x, y = a.data.numpy(), b.data.numpy()
    out = {"add": np.add, "multiply": np.multiply}[name](x, y)
    return const(np.asarray(out).astype(np.result_type(x, y)))


def _is_fill(e: Expr, unit: float) -> bool:
    """``zeros``/``zeros_like`` (unit 0), ``ones``/``ones_like`` (unit 1) or a scalar
    constant equal to ``unit``."""
    n = name_of(e)
    if n in ("zeros", "zeros_like"):
        return unit == 0.0
    if n in ("ones", "ones_like"):
        return unit == 1.0
    return scalar_value(e) == unit


# -- *_like with a static shape ------------------------------------------------------------
def concretize_like(new: Call, old: Call) -> Expr | None:
    n = name_of(new)
    if n == "cast_like":
        t = tensor_type(old)
        return None if t is None else cast(new.args[0], t.dtype)
    if n not in _LIKE:
        return None
    t = tensor_type(old)
    shape = static_shape(old)
    if t is None or shape is None:
        return None
    return _LIKE[n](new, shape, t.dtype)


_LIKE: dict[str, Any] = {
    "zeros_like": lambda c, s, d: zeros(s, d),
    "ones_like": lambda c, s, d: ones(s, d),
    "full_like": lambda c, s, d: full(c.args[1], s, d),
    "reshape_like": lambda c, s, d: reshape(c.args[0], s),
    "collapse_sum_like": lambda c, s, d: collapse_sum_to(c.args[0], s),
    "broadcast_to_like": lambda c, s, d: broadcast_to(c.args[0], s),
}


# -- arithmetic ----------------------------------------------------------------------------
def simplify_add(new: Call, old: Call) -> Expr | None:
    """``x + x`` is ``x * 2``."""
    if name_of(new) != "add" or new.args[0] is not new.args[1]:
        return None
    t = tensor_type(old)
    if t is None:
        return None
    return call_op("multiply", [new.args[0], const(2, t.dtype)])


def simplify_rsqrt(new: Call, old: Call) -> Expr | None:
    """``n / sqrt(x)`` is ``n * rsqrt(x)``."""
    if name_of(new) != "divide" or name_of(new.args[1]) != "sqrt":
        return None
    root = new.args[1]
    return call_op("multiply", [new.args[0], call_op("rsqrt", [root.args[0]])])  # type: ignore[attr-defined]


def eliminate_identity(new: Call, old: Call) -> Expr | None:
    """``x + 0``, ``x - 0``, ``x * 1``, ``x / 1`` (zeros, ones, their ``_like`` forms or a
    scalar constant) are ``x`` when ``x`` already has the result's type."""
    unit = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "divide": 1.0}.get(name_of(new))
    if unit is None:
        return None
    for x, other in orders(new):
        if _is_fill(other, unit) and same_type(x, old):
            return x
    return None


def full_elementwise(new: Call, old: Call) -> Expr | None:
    """A broadcasting operator with a ``full``/``ones``/``zeros`` operand (or a ``_like``
    form) takes the fill value as a scalar constant when the other operand already has
    the result's shape."""
    if type(new.op) is not Op or len(new.args) != 2:
        return None
    pattern = default_registry.get_attr(new.op.name, "TOpPattern")
    if pattern is None or int(pattern) != int(OpPattern.BROADCAST):
        return None
    t = tensor_type(old)
    if t is None:
        return None
    a, b = new.args
    for i, (fill, x) in enumerate(((a, b), (b, a))):
        value = _fill_value(fill, t.dtype)
        if value is not None and same_type(x, old):
            args = [value, x] if i == 0 else [x, value]
            return Call(new.op, args, new.attrs, new.type_args, span=new.span)
    return None


def _fill_value(e: Expr, dtype: str) -> Expr | None:
    n = name_of(e)
    if n in ("zeros", "zeros_like"):
        return const(0, dtype)
    if n in ("ones", "ones_like"):
        return const(1, dtype)
    if n in ("full", "full_like"):
        value = e.args[-1]  # type: ignore[attr-defined]
        return value if type(value) is Constant and value.data.shape == () else None
    return None


def switch_add_multiply(new: Call, old: Call) -> Expr | None:
    """``(x + c1) * c2`` is ``x * c2 + c1 * c2`` (the constant product folded)."""
    if name_of(new) != "multiply":
        return None
    for inner, c2 in orders(new):
        if type(c2) is not Constant or name_of(inner) != "add":
            continue
        for x, c1 in orders(inner):  # type: ignore[arg-type]
            if type(c1) is Constant and type(x) is not Constant:
                scaled = call_op("multiply", [x, c2])
                return call_op("add", [scaled, fold("multiply", c1, c2)])
    return None


def adjacent_multiply_or_add(new: Call, old: Call) -> Expr | None:
    """``(x * c1) * c2`` is ``x * (c1 * c2)`` and ``(x + c1) + c2`` is ``x + (c1 + c2)``,
    the constants folded."""
    n = name_of(new)
    if n not in ("add", "multiply"):
        return None
    for inner, c2 in orders(new):
        if type(c2) is not Constant or name_of(inner) != n:
            continue
        for x, c1 in orders(inner):  # type: ignore[arg-type]
            if type(c1) is Constant and type(x) is not Constant:
                return call_op(n, [x, fold(n, c1, c2)])
    return None


# -- casts and clips -----------------------------------------------------------------------
def _lossless(src: str, dst: str) -> bool:
    """Whether every value of dtype ``src`` survives a cast to ``dst``."""
    try:
        return bool(np.can_cast(np.dtype(src), np.dtype(dst), casting="safe"))
    except TypeError:  # a dtype NumPy does not know (bfloat16): it may lose values
        return False


def same_cast(new: Call, old: Call) -> Expr | None:
    """A cast to the dtype its input already has is its input."""
    if name_of(new) not in ("cast", "cast_like"):
        return None
    src, out = tensor_type(new.args[0]), tensor_type(old)
    if src is None or out is None or src.dtype != out.dtype:
        return None
    return new.args[0]


def consecutive_cast(new: Call, old: Call) -> Expr | None:
    """``cast(cast(x, a), b)`` whose inner cast keeps every value of ``x`` is ``cast(x, b)``."""
    casts = ("cast", "cast_like")
    if name_of(new) not in casts or name_of(new.args[0]) not in casts:
        return None
    inner = new.args[0]
    x = inner.args[0]  # type: ignore[attr-defined]
    tx, tmid, tout = tensor_type(x), tensor_type(inner), tensor_type(old)
    if tx is None or tmid is None or tout is None or not _lossless(tx.dtype, tmid.dtype):
        return None
    return cast(x, tout.dtype)


def _dtype_range(dtype: str) -> tuple[float, float] | None:
    try:
        d = np.dtype(dtype)
    except TypeError:
        if dtype == "bfloat16":
            return (-3.3895313892515355e38, 3.3895313892515355e38)
        return None
    if d.kind in "iu":
        info = np.iinfo(d)
        return float(info.min), float(info.max)
    if d.kind == "f":
        finfo = np.finfo(d)
        return float(finfo.min), float(finfo.max)
    return None


def clip_and_consecutive_cast(new: Call, old: Call) -> Expr | None:
    """``cast(...cast(clip(x, lo, hi))...)``: the casts to dtypes holding all of
    ``[lo, hi]`` drop out (a final cast keeps the result's dtype)."""
    if name_of(new) != "cast":
        return None
    chain: list[Call] = []
    node: Expr = new
    while name_of(node) == "cast":
        chain.append(node)  # type: ignore[arg-type]
        node = node.args[0]  # type: ignore[attr-defined]
    if name_of(node) != "clip":
        return None
    clip = node
    lo, hi = float(clip.attrs.a_min), float(clip.attrs.a_max)  # type: ignore[attr-defined]
    tclip, tout = tensor_type(clip), tensor_type(old)
    if tclip is None or tout is None:
        return None
    kept: list[str] = []
    for c in chain:  # outermost first
        rng = _dtype_range(c.attrs.dtype)
        if rng is None or not (rng[0] <= lo and hi <= rng[1]):
            kept.append(str(c.attrs.dtype))
    if len(kept) == len(chain):
        return None
    out: Expr = clip
    for dtype in reversed(kept):
        out = cast(out, dtype)
    last = kept[0] if kept else tclip.dtype
    if last != tout.dtype:
        out = cast(out, tout.dtype)
    return out


def simplify_clip(new: Call, old: Call) -> Expr | None:
    """A clip whose bounds hold every value of its dtype is its input."""
    if name_of(new) != "clip" or name_of(new.args[0]) in ("qnn.requantize", "qnn.add"):
        return None
    t = tensor_type(old)
    rng = None if t is None else _dtype_range(t.dtype)
    if rng is None:
        return None
    if float(new.attrs.a_min) <= rng[0] and float(new.attrs.a_max) >= rng[1]:
        return new.args[0]
    return None


def dequantize_arg(new: Call, old: Call) -> Expr | None:
    """``argmax``/``argmin``/``argsort`` of ``qnn.dequantize(x, s, z)`` with a positive
    constant scale is the same function of ``x`` (dequantizing keeps the order)."""
    if name_of(new) not in ("argmax", "argmin", "argsort"):
        return None
    dq = new.args[0]
    if name_of(dq) != "qnn.dequantize":
        return None
    scale = dq.args[1]  # type: ignore[attr-defined]
    if type(scale) is not Constant or not bool(np.all(scale.data.numpy() > 0)):
        return None
    return Call(new.op, [dq.args[0]], new.attrs, span=new.span)  # type: ignore[attr-defined]


# -- reshapes and transposes ---------------------------------------------------------------
_SHAPE_OPS = frozenset(
    {"reshape", "contrib_reverse_reshape", "squeeze", "expand_dims", "nn.batch_flatten"}
)


def simplify_reshape(new: Call, old: Call) -> Expr | None:
    """A reshape of a chain of shape operators is one reshape of the chain's input (when
    the result's shape is static); a shape operator that changes nothing is its input."""
    n = name_of(new)
    if n not in _SHAPE_OPS:
        return None
    src = new.args[0]
    if same_type(src, old):
        return src
    if n not in ("reshape", "contrib_reverse_reshape"):
        return None
    shape = static_shape(old)
    if shape is None:
        return None
    inner = src
    while name_of(inner) in _SHAPE_OPS:
        inner = inner.args[0]  # type: ignore[attr-defined]
    return None if inner is src else reshape(inner, shape)


def _axes(call: Call, ndim: int) -> list[int]:
    axes = call.attrs.axes
    if not axes:
        return list(reversed(range(ndim)))
    return [int(a) % ndim for a in axes]


def _pure(layout: str) -> bool:
    """A layout that only names axes (``NCHW``), no split ones (``NCHW4c``)."""
    return layout.isalpha() and layout.isupper() and len(set(layout)) == len(layout)


def _as_layouts(call: Call, ndim_in: int) -> tuple[str, str] | None:
    """``(src, dst)`` layouts of a layout_transform, or None."""
    if name_of(call) != "layout_transform":
        return None
    return str(call.attrs.src_layout), str(call.attrs.dst_layout)


def _finish(x: Expr, src: str, dst: str) -> Expr:
    if src == dst:
        return x
    if _pure(src) and _pure(dst) and sorted(src) == sorted(dst):
        return transpose(x, [src.index(a) for a in dst])
    return layout_transform(x, src, dst)


def simplify_transpose(new: Call, old: Call) -> Expr | None:
    """Two transposes are one (or none); a layout_transform next to a transpose or
    another layout_transform is one layout_transform (a transpose when both layouts
    only permute axes; nothing when they are equal); a transpose or layout_transform
    that keeps every axis in place is its input."""
    outer_name = name_of(new)
    if outer_name not in ("transpose", "layout_transform"):
        return None
    src = new.args[0]
    t_mid = tensor_type(src)
    if t_mid is None:
        return None
    ndim = len(t_mid.shape)
    inner_name = name_of(src)
    if inner_name not in ("transpose", "layout_transform"):
        if outer_name == "transpose":
            return src if _axes(new, ndim) == list(range(ndim)) else None
        return src if new.attrs.src_layout == new.attrs.dst_layout else None
    x = src.args[0]  # type: ignore[attr-defined]
    if outer_name == "transpose" and inner_name == "transpose":
        inner, outer = _axes(src, ndim), _axes(new, ndim)  # type: ignore[arg-type]
        combined = [inner[p] for p in outer]
        return x if combined == list(range(ndim)) else transpose(x, combined)
    if outer_name == "layout_transform" and inner_name == "layout_transform":
        a, b = str(src.attrs.src_layout), str(src.attrs.dst_layout)  # type: ignore[attr-defined]
        b2, c = str(new.attrs.src_layout), str(new.attrs.dst_layout)
        return _finish(x, a, c) if b == b2 else None
    if outer_name == "layout_transform":  # transpose, then layout_transform
        b, c = str(new.attrs.src_layout), str(new.attrs.dst_layout)
        if not _pure(b) or len(b) != ndim:
            return None
        axes = _axes(src, ndim)  # type: ignore[arg-type]
        letters = [""] * ndim
        for i, ax in enumerate(axes):
            letters[ax] = b[i]
        return _finish(x, "".join(letters), c)
    a, b = str(src.attrs.src_layout), str(src.attrs.dst_layout)  # type: ignore[attr-defined]
    if not _pure(b) or len(b) != ndim:  # layout_transform, then transpose
        return None
    return _finish(x, a, "".join(b[ax] for ax in _axes(new, ndim)))


# -- a * x * x + b * x * y + c * y * y -----------------------------------------------------
def _scaled_product(e: Expr) -> tuple[float, Expr, Expr] | None:
    """``(k, u, v)`` for ``u * v``, ``k * (u * v)`` or ``u * (k * v)`` (k a scalar constant)."""
    if name_of(e) != "multiply":
        return None
    for p, q in orders(e):  # type: ignore[arg-type]
        k = scalar_value(p)
        if k is not None and name_of(q) == "multiply" and scalar_value(q.args[0]) is None:  # type: ignore[attr-defined]
            u, v = q.args  # type: ignore[attr-defined]
            if scalar_value(v) is None:
                return k, u, v
        if name_of(q) == "multiply":
            for r, s in orders(q):  # type: ignore[arg-type]
                k = scalar_value(r)
                if k is not None and scalar_value(p) is None and scalar_value(s) is None:
                    return k, p, s
    a, b = e.args  # type: ignore[attr-defined]
    if scalar_value(a) is None and scalar_value(b) is None:
        return 1.0, a, b
    return None


def simplify_binomial(new: Call, old: Call) -> Expr | None:
    """``a*x*x + b*x*y + c*y*y`` with real roots is ``a * ((x + p*y) * (x + q*y))``; for
    an integer dtype only when ``a``, ``p`` and ``q`` are integers."""
    if name_of(new) != "add":
        return None
    t = tensor_type(old)
    if t is None:
        return None
    for inner, third in orders(new):
        if name_of(inner) != "add":
            continue
        parts = (*inner.args, third)  # type: ignore[attr-defined]
        terms = [_scaled_product(p) for p in parts]
        if any(term is None for term in terms):
            continue
        out = _factor(terms, t.dtype)  # type: ignore[arg-type]
        if out is not None:
            return out
    return None


def _factor(terms: list[tuple[float, Expr, Expr]], dtype: str) -> Expr | None:
    squares = [(k, u) for k, u, v in terms if u is v]
    mixed = [(k, u, v) for k, u, v in terms if u is not v]
    if len(squares) != 2 or len(mixed) != 1 or squares[0][1] is squares[1][1]:
        return None
    (a, x), (c, y) = squares
    b, u, v = mixed[0]
    if {id(u), id(v)} != {id(x), id(y)}:
        return None
    if c == 1 and a > 1:
        a, c, x, y = c, a, y, x
    det = b * b - 4 * a * c
    if det < 0:
        return None
    root = float(np.sqrt(det))
    p, q = (b + root) / (2 * a), (b - root) / (2 * a)
    integer = np.dtype(dtype).kind in "iu" if dtype != "bfloat16" else False
    if integer and not all(float(v).is_integer() for v in (a, p, q)):
        return None
    first = call_op("add", [x, call_op("multiply", [y, const(p, dtype)])])
    second = first if det < 1e-4 else call_op("add", [x, call_op("multiply", [y, const(q, dtype)])])
    return call_op("multiply", [const(a, dtype), call_op("multiply", [first, second])])


#: The rules in the order one round applies them (TVM's order); rounds repeat until
#: nothing changes.
RULES: tuple[Any, ...] = (
    concretize_like,
    simplify_add,
    simplify_rsqrt,
    eliminate_identity,
    simplify_reshape,
    simplify_transpose,
    same_cast,
    consecutive_cast,
    full_elementwise,
    switch_add_multiply,
    adjacent_multiply_or_add,
    dequantize_arg,
    clip_and_consecutive_cast,
    simplify_clip,
    simplify_binomial,
)
