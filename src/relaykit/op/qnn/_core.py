"""The QNN operators built on a float operator's integer core (``qnn.dense``,
``qnn.batch_matmul``, ``qnn.conv2d``): both inputs have their zero points subtracted
in int32 and the plain operator runs on them with an int32 (or ``out_dtype``) result,
which is how TVM's lowering computes them (its four-term expansion gives the same
integers). The scales only describe the result (``input_scale * kernel_scale``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.op import default_registry
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_attrs

from ._common import QUANT_DTYPES, channel_shape, check_qparam_type, runtime_qparams

__all__ = ["define_core_op", "core_attrs", "shift"]

# the qnn operator's inputs 2..5 and what they are called
_PARAMS = (
    ("input_zero_point", "int32"),
    ("kernel_zero_point", "int32"),
    ("input_scale", "float32"),
    ("kernel_scale", "float32"),
)


def core_attrs(float_op: str, attrs: Attrs) -> Attrs:
    """The float operator's attributes for a call of the QNN operator."""
    op = default_registry.get(float_op)
    given = {k: attrs[k] for k in op.attrs_schema if k in attrs}
    given["out_dtype"] = str(attrs.out_dtype or "int32")
    return make_attrs(op, given)


def shift(x: np.ndarray, zp: np.ndarray, axis: int) -> np.ndarray:
    """``x - zp`` in int32 (``zp`` a scalar or a vector along ``axis``)."""
    x = np.asarray(x)
    z = channel_shape(np.asarray(zp), max(x.ndim, 1), axis).astype(np.int64)
    return (x.astype(np.int64) - z).astype(np.int32)


def define_core_op(
    name: str,
    float_op: str,
    kernel_axis: Callable[[Attrs, int], int],
    extra_attrs: dict[str, Any],
    attrs_type_key: str,
    doc: str,
) -> None:
    """Register QNN operator ``name`` over ``float_op``; ``kernel_axis(attrs, ndim)`` is
    the axis of the second input a per-channel kernel zero point / scale runs along."""
    base = default_registry.get(float_op)
    schema = dict(base.attrs_schema)
    schema.update(extra_attrs)
    schema["out_dtype"] = "int32"

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        weight = tensor_arg(arg_types, 1, "kernel")
        for t, what in ((data, "data"), (weight, "kernel")):
            if t.dtype not in QUANT_DTYPES:
                raise TypeRelError(f"{name}: {what} must be one of {QUANT_DTYPES}, got {t.dtype}")
        k_axis = kernel_axis(attrs, len(weight.shape))
        for k, (what, dtype) in enumerate(_PARAMS, start=2):
            on_kernel = what.startswith("kernel")
            shape = weight.shape if on_kernel else (1,)
            check_qparam_type(arg_types[k], dtype, what, name, shape, k_axis if on_kernel else 0)
        plain = base.get_attr("FTypeRelation")
        shifted = [TensorType(data.shape, "int32"), TensorType(weight.shape, "int32")]
        return plain(shifted, core_attrs(float_op, attrs))

    plain_kernel = base.get_attr("FCompute")

    def kernel(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
        data, weight, izp, kzp, isc, ksc = (np.asarray(a) for a in inputs)
        runtime_qparams(
            name,
            [("input_scale", isc), ("kernel_scale", ksc)],
            [
                ("input_zero_point", izp, str(data.dtype)),
                ("kernel_zero_point", kzp, str(weight.dtype)),
            ],
        )
        a = shift(data, izp, 0)
        b = shift(weight, kzp, kernel_axis(attrs, weight.ndim))
        return plain_kernel([a, b], core_attrs(float_op, attrs))

    define_op(
        name,
        num_inputs=6,
        attrs=schema,
        attrs_type_key=attrs_type_key,
        type_rel=rel,
        compute=kernel,
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        doc=doc,
        module=_home(name),
    )


def _home(name: str) -> str:
    """The module an operator built here is defined in (its family file)."""
    family = "convolution" if name.startswith("qnn.conv") else "linear"
    return f"relaykit.op.qnn.{family}"
