"""Helpers shared by the type relations: argument checks, broadcasting, axes.

Every helper raises :class:`~relaykit.op.define.TypeRelError` with a message
that names what was wrong; type inference adds the operator and IR context.

>>> from relaykit.ir import TensorType
>>> broadcast_shape((2, 1, 3), (4, 1))
(2, 4, 3)
>>> normalize_axis(-1, 3)
2
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import IRError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Constant
from relaykit.ir.types import DTYPES, AnyDim, TensorType, TupleType, Type, check_dtype, dtype_kind

from .define import TypeRelError

__all__ = [
    "tensor_arg",
    "tuple_arg",
    "broadcast_shape",
    "broadcast_dim",
    "static",
    "static_value",
    "differ",
    "broadcast_rel",
    "identity_rel",
    "make_broadcast_rel",
    "make_unary_rel",
    "normalize_axis",
    "normalize_axes",
    "resolve_dtype",
    "is_float",
    "is_int",
    "INT_DTYPES",
    "FLOAT_DTYPES",
]

# dtype_kind, not NumPy's kind: NumPy calls bfloat16 and most float8 types "V" (void) but
# float8_e5m2 "f", so only the relaykit classification puts all ml_dtypes floats here.
FLOAT_DTYPES = frozenset(n for n in DTYPES if dtype_kind(n) == "f")
INT_DTYPES = frozenset(n for n, d in DTYPES.items() if d.kind in "iu")

_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")


def _nth(i: int) -> str:
    return _ORDINALS[i] if i < len(_ORDINALS) else f"input {i}"


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def is_int(dtype: str) -> bool:
    return dtype in INT_DTYPES


def tensor_arg(arg_types: Sequence[Type], i: int, name: str = "") -> TensorType:
    """``arg_types[i]``, which must be a tensor type."""
    if i >= len(arg_types):
        raise TypeRelError(f"expected at least {i + 1} inputs, got {len(arg_types)}")
    t = arg_types[i]
    if not isinstance(t, TensorType):
        what = f"{name} ({_nth(i)} input)" if name else f"the {_nth(i)} input"
        raise TypeRelError(f"{what} must be a tensor, got {t}")
    return t


def tuple_arg(arg_types: Sequence[Type], i: int, name: str = "") -> TupleType:
    """``arg_types[i]``, which must be a tuple of tensors."""
    t = arg_types[i] if i < len(arg_types) else None
    what = name or f"the {_nth(i)} input"
    if not isinstance(t, TupleType):
        raise TypeRelError(f"{what} must be a tuple of tensors, got {t}")
    for j, f in enumerate(t.fields):
        if not isinstance(f, TensorType):
            raise TypeRelError(f"field {j} of {what} must be a tensor, got {f}")
    return t


def broadcast_dim(x: Any, y: Any, where: str = "") -> Any:
    """The broadcast of two dimensions, with TVM's rules for dynamic ones: equal dims
    (by structure) give themselves, ``1`` gives the other, ``?`` with ``k != 1`` gives
    ``k`` (the run-time dim must be 1 or k), ``?`` with ``1`` or with a symbol gives ``?``,
    and two different symbols give ``?``. Two different integers (neither 1) fail."""
    if x == y:
        return x
    if isinstance(x, int) and isinstance(y, int):
        if y == 1:
            return x
        if x == 1:
            return y
        raise TypeRelError(where or f"dimensions {x} and {y} cannot be broadcast")
    if isinstance(x, AnyDim) and isinstance(y, int):
        return AnyDim() if y == 1 else y
    if isinstance(y, AnyDim) and isinstance(x, int):
        return AnyDim() if x == 1 else x
    if y == 1:
        return x
    if x == 1:
        return y
    return AnyDim()


def broadcast_shape(a: Sequence[Any], b: Sequence[Any]) -> tuple[Any, ...]:
    """The NumPy broadcast of two shapes, or a TypeRelError naming the bad dimension."""
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + tuple(a)
    pb = (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(pa, pb, strict=True)):
        where = (
            f"shapes {tuple(a)} and {tuple(b)} cannot be broadcast: dimension {i - n} "
            f"is {x} in one and {y} in the other (each pair must be equal or 1)"
        )
        out.append(broadcast_dim(x, y, where))
    return tuple(out)


def static(*dims: Any) -> bool:
    """Whether every dimension is a concrete int (not ``?`` nor symbolic).

    Relations check a size (``if span < 0``) only when it is static; with dynamic
    dims they leave the check to run time, as TVM does."""
    return all(isinstance(d, int) for d in dims)


def differ(a: Any, b: Any) -> bool:
    """Whether two dimensions are known to differ: both static and unequal. A ``?`` or
    a symbol may equal anything at run time, so it never differs at compile time."""
    return isinstance(a, int) and isinstance(b, int) and a != b


def _same_dtype(types: Sequence[TensorType], what: str = "inputs") -> str:
    dtypes = [t.dtype for t in types]
    if any(d != dtypes[0] for d in dtypes):
        shown = ", ".join(str(t) for t in types)
        raise TypeRelError(
            f"{what} must have the same dtype, got {shown}; insert a cast (relay.cast) first"
        )
    return dtypes[0]


def make_broadcast_rel(
    out_dtype: str | None = None, allowed: frozenset[str] | None = None, kind: str = ""
):
    """A relation for a binary broadcasting op.

    ``out_dtype`` fixes the result dtype (``"bool"`` for comparisons), otherwise
    it is the inputs' dtype; ``allowed`` restricts the input dtypes.
    """

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        if len(arg_types) != 2:
            raise TypeRelError(f"expected 2 inputs, got {len(arg_types)}")
        lhs = tensor_arg(arg_types, 0, "lhs")
        rhs = tensor_arg(arg_types, 1, "rhs")
        dtype = _same_dtype([lhs, rhs], "both operands")
        if allowed is not None and dtype not in allowed:
            raise TypeRelError(f"operands must be {kind} tensors, got dtype {dtype}")
        return TensorType(broadcast_shape(lhs.shape, rhs.shape), out_dtype or dtype)

    return rel


broadcast_rel = make_broadcast_rel()


def make_unary_rel(allowed: frozenset[str] | None = None, kind: str = "", out_dtype: str = ""):
    """A relation for a one-input elementwise op (optionally restricting dtypes)."""

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        if len(arg_types) != 1:
            raise TypeRelError(f"expected 1 input, got {len(arg_types)}")
        t = tensor_arg(arg_types, 0, "data")
        if allowed is not None and t.dtype not in allowed:
            raise TypeRelError(f"data must be a {kind} tensor, got dtype {t.dtype}")
        return TensorType(t.shape, out_dtype) if out_dtype else t

    return rel


def identity_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    """The output type is the (tensor) type of the first input."""
    return tensor_arg(arg_types, 0, "data")


def static_value(value: Any) -> Any:
    """A constant's numbers (TVM's Python API reads a ``relay.Constant`` shape, axis or
    count as the values it holds); any other value unchanged. Constructors build the
    static op for numbers and the ``dyn.*`` op for an expression."""
    if isinstance(value, Constant):
        arr = value.data.numpy()
        return arr.item() if arr.ndim == 0 else arr.tolist()
    return value


def normalize_axis(axis: Any, ndim: int, what: str = "axis", extra: int = 0) -> int:
    """``axis`` in ``[-(ndim+extra), ndim+extra)`` mapped to ``[0, ndim+extra)``."""
    n = ndim + extra
    try:
        a = int(axis)
    except (TypeError, ValueError):
        raise TypeRelError(f"{what} must be an integer, got {axis!r}") from None
    if not -n <= a < n:
        raise TypeRelError(
            f"{what} {a} is out of range for a tensor of rank {ndim} (valid: {-n}..{n - 1})"
        )
    return a + n if a < 0 else a


def normalize_axes(axes: Any, ndim: int, what: str = "axis") -> tuple[int, ...]:
    """A list of axes, normalised and checked for duplicates; ``None`` means all."""
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, int):
        axes = (axes,)
    out = tuple(normalize_axis(a, ndim, what) for a in axes)
    if len(set(out)) != len(out):
        raise TypeRelError(f"{what} {tuple(axes)} names an axis more than once")
    return out


def resolve_dtype(dtype: Any, default: str, what: str = "out_dtype") -> str:
    """``dtype`` checked and canonicalised; ``""``/``None`` means ``default``."""
    if dtype in ("", None):
        return default
    try:
        return check_dtype(dtype)
    except IRError as e:
        raise TypeRelError(f"{what}: {e}") from None


def np_dtype(dtype: str) -> np.dtype[Any]:
    return DTYPES[dtype]
