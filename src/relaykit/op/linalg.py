"""Linear-algebra operators: ``einsum`` (TVM's ``relay.einsum``) and ``det``.

>>> from relaykit import relay
>>> a, b = relay.var("a", shape=(2, 3)), relay.var("b", shape=(3, 4))
>>> einsum([a, b], "ij,jk->ik").attrs.equation
'ij,jk->ik'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, Tuple
from relaykit.ir.types import TensorType, Type

from . import _numeric as num
from ._relations import FLOAT_DTYPES, tensor_arg, tuple_arg
from .define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["einsum", "det"]


def _einsum_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    tup = tuple_arg(arg_types, 0, "the operands of einsum")
    fields: tuple[TensorType, ...] = tup.fields  # type: ignore[assignment]
    if not fields:
        raise TypeRelError("einsum needs at least one operand")
    dtype = fields[0].dtype
    if any(f.dtype != dtype for f in fields):
        raise TypeRelError(f"einsum operands must share one dtype, got {tup}")
    parsed = _einsum_out_shape(attrs.equation, [f.shape for f in fields])
    if parsed is not None and math.prod(parsed) > _EINSUM_PROBE_LIMIT:
        return TensorType(parsed, dtype)  # too large to probe with NumPy: trust the parse
    # Zero-strided stand-ins: NumPy works out the output shape without real data.
    dummies = [np.broadcast_to(np.zeros((), dtype), f.shape) for f in fields]
    try:
        shape = np.einsum(attrs.equation, *dummies).shape
    except ValueError as err:
        raise TypeRelError(f"einsum {attrs.equation!r} does not fit {tup}: {err}") from None
    return TensorType(shape, dtype)


#: above this many output elements the relation does not run NumPy's einsum on stand-ins
#: (it would allocate and compute the whole output to learn its shape)
_EINSUM_PROBE_LIMIT = 2**20


def _einsum_out_shape(equation: str, shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The output shape of ``equation`` over operands of ``shapes`` from the subscripts
    alone, or None when it cannot tell (or the sizes do not fit)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes) or not all(c.isalpha() or c in ".,->" for c in eq):
        return None
    sizes: dict[str, int] = {}
    ell: tuple[int, ...] = ()
    for term, shape in zip(terms, shapes, strict=True):
        head, dots, tail = term.partition("...")
        if "." in head + tail or len(head) + len(tail) > len(shape):
            return None
        if not dots and len(head) != len(shape):
            return None
        n_ell = len(shape) - len(head) - len(tail)
        wider = _broadcast(ell, shape[len(head) : len(head) + n_ell])
        if wider is None:
            return None
        ell = wider
        for c, d in zip(head + tail, shape[: len(head)] + shape[len(head) + n_ell :], strict=True):
            known = sizes.setdefault(c, d)
            if known != d and 1 not in (known, d):
                return None  # NumPy's probe says what does not fit
            sizes[c] = max(known, d) if 1 in (known, d) else d
    if not arrow:
        labels = "".join(terms).replace(".", "")
        out = "..." + "".join(sorted(c for c in set(labels) if labels.count(c) == 1))
    else:
        out = rhs
    head, dots, tail = out.partition("...")
    if any(c not in sizes for c in head + tail) or "." in head + tail:
        return None
    return (*[sizes[c] for c in head], *(ell if dots else ()), *[sizes[c] for c in tail])


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def _einsum_kernel(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
    operands = tuple(inputs[0])
    acc = np.float64 if operands[0].dtype.kind == "f" else operands[0].dtype
    out = np.einsum(attrs.equation, *[o.astype(acc, copy=False) for o in operands])
    return num.as_out(out, operands[0].dtype)


define_op(
    "einsum",
    num_inputs=1,
    attrs={"equation": ""},
    attrs_type_key="relay.attrs.EinsumAttrs",
    type_rel=_einsum_rel,
    compute=_einsum_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Einstein summation over a tuple of tensors.",
)


def einsum(data: Sequence[Expr], equation: str) -> Call:
    """Einstein summation of the tensors in ``data`` by ``equation`` (NumPy's rules)."""
    return make_call("einsum", [Tuple(list(data))], equation=str(equation))


def _det_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.ndim < 2 or data.shape[-1] != data.shape[-2] or data.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"det needs floating-point square matrices (..., n, n), got {data}")
    return TensorType(data.shape[:-2], data.dtype)


define_op(
    "det",
    num_inputs=1,
    type_rel=_det_rel,
    compute=lambda ins, attrs: num.as_out(np.linalg.det(ins[0].astype(np.float64)), ins[0].dtype),
    pattern=OpPattern.OPAQUE,
    doc="Determinants of the trailing square matrices.",
)


def det(data: Expr) -> Call:
    """The determinant of each (n, n) matrix in the last two axes of ``data``."""
    return make_call("det", [data])
