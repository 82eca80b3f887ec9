"""``nn.matmul``: ``a @ b`` with optional transposes (TVM's ``relay.nn.matmul``).

``tensor_a`` is ``(..., M, K)`` (``(..., K, M)`` with ``transpose_a``) or just
``(..., K)``; ``tensor_b`` is ``(K, N)`` (``(N, K)`` with ``transpose_b``). The
constructor builds ``nn.dense`` for the ``transpose_b`` case without ``transpose_a``,
as TVM does. An unannotated ``tensor_b`` gets its shape from ``units``.

>>> from relaykit import relay
>>> a, b = relay.var("a", shape=(5, 10)), relay.var("b", shape=(5, 2))
>>> matmul(a, b, transpose_a=True).op.name
'nn.matmul'
>>> matmul(a, relay.var("w", shape=(3, 10)), transpose_b=True).op.name
'nn.dense'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import IncompleteType, TensorType, Type, check_dtype
from relaykit.op._numeric import as_out
from relaykit.op._relations import differ, resolve_dtype, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call
from relaykit.op.define import default_registry as _registry

__all__ = ["matmul"]


def _a_dims(a: TensorType, transpose_a: bool) -> tuple[tuple[object, ...], object]:
    """The batch-and-M dims of ``tensor_a`` and its reduction dim K."""
    if transpose_a:
        if a.ndim < 2:
            raise TypeRelError(f"tensor_a must have rank >= 2 with transpose_a, got {a}")
        return (*a.shape[:-2], a.shape[-1]), a.shape[-2]
    if a.ndim < 1:
        raise TypeRelError(f"tensor_a must have at least one dimension, got {a}")
    return a.shape[:-1], a.shape[-1]


def _matmul_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    a = tensor_arg(arg_types, 0, "tensor_a")
    b = tensor_arg(arg_types, 1, "tensor_b")
    if b.ndim != 2:
        raise TypeRelError(f"tensor_b must be 2-D, got {b}")
    if a.dtype != b.dtype:
        raise TypeRelError(f"tensor_a and tensor_b must have one dtype, got {a} and {b}")
    lead, k = _a_dims(a, attrs.transpose_a)
    n, kb = (b.shape[0], b.shape[1]) if attrs.transpose_b else (b.shape[1], b.shape[0])
    if differ(k, kb):
        raise TypeRelError(
            f"reduction dimensions differ: {k} in {a} and {kb} in {b} "
            f"(transpose_a={attrs.transpose_a}, transpose_b={attrs.transpose_b})"
        )
    if attrs.units is not None and differ(attrs.units, n):
        raise TypeRelError(f"units={attrs.units} but tensor_b {b} has {n} output columns")
    return TensorType((*lead, n), resolve_dtype(attrs.out_dtype, a.dtype))


def _matmul_solve(arg_types: Sequence[Type], attrs: Attrs) -> list[Type | None]:
    """An unannotated ``tensor_b``: ``(K, units)`` (``(units, K)`` with ``transpose_b``)."""
    a, b = arg_types[0], arg_types[1]
    if not isinstance(a, TensorType) or not isinstance(b, IncompleteType):
        return list(arg_types)
    if attrs.units is None:
        raise TypeRelError(
            "cannot deduce the shape of tensor_b of nn.matmul: it has no type annotation "
            "and the call does not give units=; give units= or annotate it"
        )
    _, k = _a_dims(a, attrs.transpose_a)
    shape = (attrs.units, k) if attrs.transpose_b else (k, attrs.units)
    return [a, TensorType(shape, a.dtype)]


def _matmul_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    a, b = ins
    out_dtype = np.dtype(check_dtype(attrs.out_dtype)) if attrs.out_dtype else a.dtype
    acc = np.float64 if out_dtype.kind in "fc" else np.int64
    a = a.astype(acc)
    if attrs.transpose_a:
        a = np.swapaxes(a, -1, -2)
    b = b.astype(acc)
    return as_out(np.matmul(a, b.T if attrs.transpose_b else b), out_dtype)


define_op(
    "nn.matmul",
    num_inputs=2,
    attrs={"units": None, "out_dtype": "", "transpose_a": False, "transpose_b": False},
    attrs_type_key="relay.attrs.MatmulAttrs",
    type_rel=_matmul_rel,
    compute=_matmul_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="tensor_a @ tensor_b, either optionally transposed.",
)
_registry.set_attr("nn.matmul", "FTypeSolveInputs", _matmul_solve)


def matmul(
    tensor_a: Expr,
    tensor_b: Expr,
    units: int | None = None,
    out_dtype: str = "",
    transpose_a: bool = False,
    transpose_b: bool = False,
) -> Call:
    """``tensor_a @ tensor_b`` (see the module docstring); ``transpose_b`` alone builds
    ``nn.dense``, whose weight is already ``(units, K)``."""
    units = None if units is None else int(units)
    out_dtype = check_dtype(out_dtype) if out_dtype else ""
    if transpose_b and not transpose_a:
        return make_call("nn.dense", [tensor_a, tensor_b], units=units, out_dtype=out_dtype)
    return make_call(
        "nn.matmul",
        [tensor_a, tensor_b],
        units=units,
        out_dtype=out_dtype,
        transpose_a=bool(transpose_a),
        transpose_b=bool(transpose_b),
    )
