"""Masking operators: ``sequence_mask`` and ``matrix_set_diag`` (TVM's names).

``sequence_mask(data, valid_length, mask_value, axis)`` replaces the steps of
each sequence at or past its valid length by ``mask_value``; ``data`` is
``(max_length, batch, ...)`` for ``axis=0`` or ``(batch, max_length, ...)`` for
``axis=1``. ``matrix_set_diag(data, diagonal, k, align)`` writes ``diagonal``
into the diagonals ``k`` (one offset, or a band ``(k_lo, k_hi)``) of the
innermost matrices of ``data`` (TensorFlow's ``MatrixSetDiagV3``).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(4, 2))
>>> sequence_mask(x, relay.var("n", shape=(2,), dtype="int32")).attrs.axis
0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import Type

from ._numeric import as_out
from ._relations import differ, tensor_arg
from .define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["sequence_mask", "matrix_set_diag"]


# -- sequence_mask ---------------------------------------------------------------------------------


def _sequence_mask_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    length = tensor_arg(arg_types, 1, "valid_length")
    if data.ndim < 2 or attrs.axis not in (0, 1):
        raise TypeRelError(
            f"sequence_mask needs data of at least 2 dimensions and axis 0 or 1, "
            f"got {data} and axis={attrs.axis}"
        )
    batch = data.shape[1 - attrs.axis]
    if length.ndim != 1 or differ(length.shape[0], batch):
        raise TypeRelError(f"valid_length must be a ({batch},) vector for {data}, got {length}")
    return data


def _sequence_mask_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, length = ins
    axis = attrs.axis
    steps = np.arange(data.shape[axis]).reshape([-1 if i == axis else 1 for i in range(data.ndim)])
    limit = length.reshape([-1 if i == 1 - axis else 1 for i in range(data.ndim)])
    masked = steps >= limit
    return as_out(np.where(masked, np.asarray(attrs.mask_value, data.dtype), data), data.dtype)


define_op(
    "sequence_mask",
    num_inputs=2,
    attrs={"mask_value": 0.0, "axis": 0},
    attrs_type_key="relay.attrs.SequenceMaskAttrs",
    type_rel=_sequence_mask_rel,
    compute=_sequence_mask_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Steps of each sequence at or past its valid length set to mask_value.",
)


def sequence_mask(data: Expr, valid_length: Expr, mask_value: float = 0.0, axis: int = 0) -> Call:
    """``data`` with every step ``t >= valid_length[b]`` of sequence ``b`` set to
    ``mask_value``; ``axis`` (0 or 1) is the length axis, ``1 - axis`` the batch axis."""
    if axis not in (0, 1):
        raise ArgumentError(f"sequence_mask: axis must be 0 or 1, got {axis!r}")
    return make_call(
        "sequence_mask", [data, valid_length], mask_value=float(mask_value), axis=int(axis)
    )


# -- matrix_set_diag -------------------------------------------------------------------------------


def _diag_len(rows: int, cols: int, k: int) -> int:
    return min(cols - max(k, 0), rows + min(k, 0))


def _matrix_set_diag_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    diag = tensor_arg(arg_types, 1, "diagonal")
    if data.ndim < 2:
        raise TypeRelError(f"matrix_set_diag needs data of at least 2 dimensions, got {data}")
    if diag.dtype != data.dtype:
        raise TypeRelError(f"diagonal {diag} and data {data} must have one dtype")
    band = attrs.k1 != attrs.k2
    want = data.ndim if band else data.ndim - 1
    if diag.ndim != want:
        raise TypeRelError(
            f"diagonal must have {want} dimensions for k=({attrs.k1}, {attrs.k2}) and {data}, "
            f"got {diag}"
        )
    return data


def _matrix_set_diag_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, diag = ins
    out = np.array(data, copy=True)
    rows, cols = data.shape[-2:]
    k_lo, k_hi = attrs.k1, attrs.k2
    band = k_lo != k_hi
    for k in range(k_lo, k_hi + 1):
        n = _diag_len(rows, cols, k)
        if n <= 0:
            continue
        values = diag[..., k_hi - k, :] if band else diag
        right = attrs.super_diag_right_align if k >= 0 else attrs.sub_diag_right_align
        offset = values.shape[-1] - n if (band and right) else 0
        i = np.arange(n)
        r, c = (i, i + k) if k >= 0 else (i - k, i)
        out[..., r, c] = values[..., offset : offset + n]
    return as_out(out, data.dtype)


define_op(
    "matrix_set_diag",
    num_inputs=2,
    attrs={"k1": 0, "k2": 0, "super_diag_right_align": True, "sub_diag_right_align": False},
    attrs_type_key="relay.attrs.MatrixSetDiagAttrs",
    type_rel=_matrix_set_diag_rel,
    compute=_matrix_set_diag_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="data with the diagonals k1..k2 of its innermost matrices replaced by diagonal.",
)

_ALIGNS = ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT")


def matrix_set_diag(data: Expr, diagonal: Expr, k: Any = 0, align: str = "RIGHT_LEFT") -> Call:
    """``data`` with the diagonal ``k`` (or the band ``k = (k_lo, k_hi)``) of each
    innermost matrix replaced by ``diagonal``. For a band, ``diagonal[..., d, :]`` is
    diagonal ``k_hi - d``; ``align`` (``"<super>_<sub>"``, each ``LEFT`` or ``RIGHT``)
    says how diagonals shorter than the longest are padded."""
    if align not in _ALIGNS:
        raise ArgumentError(f"matrix_set_diag: align must be one of {_ALIGNS}, got {align!r}")
    if isinstance(k, (tuple, list)):
        if not 1 <= len(k) <= 2:
            raise ArgumentError(f"matrix_set_diag: k must be an int or (k_lo, k_hi), got {k!r}")
        k1, k2 = int(k[0]), int(k[-1])
    else:
        k1 = k2 = int(k)
    if k1 > k2:
        raise ArgumentError(f"matrix_set_diag: k_lo {k1} is above k_hi {k2}")
    super_right, sub_right = (part == "RIGHT" for part in align.split("_"))
    return make_call(
        "matrix_set_diag",
        [data, diagonal],
        k1=k1,
        k2=k2,
        super_diag_right_align=super_right,
        sub_diag_right_align=sub_right,
    )
