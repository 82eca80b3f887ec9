"""``qnn.contrib_dense_pack`` (TVM's ``relay.qnn.op.contrib_dense_pack``): ``qnn.dense``
with its weight stored in a packed layout, ``NC`` (plain ``(N, C)``), ``NC<n>n``
(``(N/n, C, n)``) or ``NC<n>n<c>c`` (``(N/n, C/c, n, c)``, the layout of int8 dot-product
kernels). The weight is unpacked to ``(N, C)`` and the product computed as ``qnn.dense``
computes it: ``(data - input_zp) @ (weight - kernel_zp).T`` in int32.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 8), dtype="uint8")
>>> w = relay.var("w", shape=(1, 2, 4, 4), dtype="int8")
>>> z, s = relay.const(0), relay.const(0.5)
>>> contrib_dense_pack(x, w, z, z, s, s, kernel_layout="NC4n4c").attrs.weight_layout
'NC4n4c'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import static, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

from ._common import QUANT_DTYPES, check_qparam_type, runtime_qparams
from ._core import shift
from .linear import check_params

__all__ = ["contrib_dense_pack", "parse_layout", "unpack_weight", "unpacked_shape"]

_LAYOUT = re.compile(r"^NC(?:(\d+)n(?:(\d+)c)?)?$")


def parse_layout(layout: str) -> tuple[int, int]:
    """The inner block sizes ``(n, c)`` of a packed weight layout (1 when not packed)."""
    m = _LAYOUT.match(str(layout))
    if m is None:
        raise TypeRelError(
            f"qnn.contrib_dense_pack: weight layout must be NC, NC<n>n or NC<n>n<c>c, "
            f"got {layout!r}"
        )
    return int(m.group(1) or 1), int(m.group(2) or 1)


def unpacked_shape(shape: Sequence[Any], layout: str) -> tuple[Any, Any]:
    """``(N, C)`` of a weight of ``shape`` in ``layout``."""
    parse_layout(layout)
    want = 2 + str(layout).count("n") + str(layout).count("c")
    if len(shape) != want:
        raise TypeRelError(
            f"qnn.contrib_dense_pack: a weight in layout {layout} has {want} dimensions, "
            f"got shape {tuple(shape)}"
        )
    if len(shape) == 2:
        return shape[0], shape[1]
    if len(shape) == 3:
        return shape[0] * shape[2], shape[1]
    return shape[0] * shape[2], shape[1] * shape[3]


def unpack_weight(w: np.ndarray, layout: str) -> np.ndarray:
    """The ``(N, C)`` weight of a packed one."""
    if w.ndim == 2:
        return w
    if w.ndim == 3:
        return w.transpose(0, 2, 1).reshape(w.shape[0] * w.shape[2], w.shape[1])
    return w.transpose(0, 2, 1, 3).reshape(w.shape[0] * w.shape[2], w.shape[1] * w.shape[3])


def _rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    op = "qnn.contrib_dense_pack"
    data = tensor_arg(arg_types, 0, "data")
    weight = tensor_arg(arg_types, 1, "weight")
    for t, what in ((data, "data"), (weight, "weight")):
        if t.dtype not in QUANT_DTYPES:
            raise TypeRelError(f"{op}: {what} must be one of {QUANT_DTYPES}, got {t.dtype}")
    n, c = unpacked_shape(weight.shape, str(attrs.weight_layout))
    if data.ndim < 1:
        raise TypeRelError(f"{op}: data must have at least one dimension, got {data}")
    k = data.shape[-1]
    if static(k) and static(c) and k != c:
        raise TypeRelError(f"{op}: data has {k} features but the weight expects {c}")
    if attrs.units is not None and static(n) and int(attrs.units) != n:
        raise TypeRelError(f"{op}: units={attrs.units} but the weight has {n} output units")
    params = (
        ("input_zero_point", "int32", (1,)),
        ("kernel_zero_point", "int32", (n,)),
        ("input_scale", "float32", (1,)),
        ("kernel_scale", "float32", (n,)),
    )
    for i, (what, dtype, shape) in enumerate(params, start=2):
        check_qparam_type(arg_types[i], dtype, what, op, shape, 0)
    return TensorType((*data.shape[:-1], n), str(attrs.out_dtype or "int32"))


def _kernel(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
    data, weight, izp, kzp, isc, ksc = (np.asarray(a) for a in inputs)
    runtime_qparams(
        "qnn.contrib_dense_pack",
        [("input_scale", isc), ("kernel_scale", ksc)],
        [
            ("input_zero_point", izp, str(data.dtype)),
            ("kernel_zero_point", kzp, str(weight.dtype)),
        ],
    )
    w = unpack_weight(weight, str(attrs.weight_layout))
    a = shift(data, izp, 0).astype(np.int64)
    b = shift(w, kzp, 0).astype(np.int64)
    out = np.matmul(a, b.T)
    return out.astype(str(attrs.out_dtype or "int32"))


define_op(
    "qnn.contrib_dense_pack",
    num_inputs=6,
    attrs={"units": None, "out_dtype": "int32", "weight_layout": "NC"},
    attrs_type_key="relay.attrs.DensePackAttrs",
    type_rel=_rel,
    compute=_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Quantized dense with a packed weight: (data - izp) @ (unpacked weight - kzp).T.",
)


def contrib_dense_pack(
    data: Expr,
    weight: Expr,
    input_zero_point: Expr,
    kernel_zero_point: Expr,
    input_scale: Expr,
    kernel_scale: Expr,
    kernel_layout: str = "NC",
    units: int | None = None,
    out_dtype: str = "int32",
) -> Call:
    """TVM's ``relay.qnn.op.contrib_dense_pack``."""
    params = (input_zero_point, kernel_zero_point, input_scale, kernel_scale)
    check_params("qnn.contrib_dense_pack", data, weight, params)
    parse_layout(kernel_layout)
    return make_call(
        "qnn.contrib_dense_pack",
        [data, weight, *params],
        units=None if units is None else int(units),
        out_dtype=str(out_dtype),
        weight_layout=str(kernel_layout),
    )
