"""QNN operators computed as TVM's floating-point emulation does: dequantize (per
tensor), the float32 operator, quantize to the input's dtype with the output's
parameters (``qnn.avg_pool2d``, ``qnn.softmax``). One definition gives the type
relation, the kernel and the canonical form, so they agree bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, default_registry, define_op, make_attrs

from ._common import QUANT_DTYPES, check_qparam_type, runtime_qparams
from .quantize import _dequantize, _quantize

__all__ = ["define_emulated_op", "float_attrs", "PARAMS"]

PARAMS = (
    ("input_scale", "float32"),
    ("input_zero_point", "int32"),
    ("output_scale", "float32"),
    ("output_zero_point", "int32"),
)


def float_attrs(float_op: str, attrs: Attrs) -> Attrs:
    """The float operator's attributes taken from the QNN call's."""
    op = default_registry.get(float_op)
    return make_attrs(op, {k: attrs[k] for k in op.attrs_schema if k in attrs})


def define_emulated_op(
    name: str, float_op: str, attrs_type_key: str, doc: str, module: str
) -> None:
    """Register ``name(data, input_scale, input_zero_point, output_scale,
    output_zero_point)`` over ``float_op`` (same attributes)."""
    base = default_registry.get(float_op)

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        if data.dtype not in QUANT_DTYPES:
            raise TypeRelError(f"{name} takes {QUANT_DTYPES} data, got {data.dtype}")
        for k, (what, dtype) in enumerate(PARAMS, start=1):
            t = arg_types[k]
            if isinstance(t, TensorType) and any(d != 1 for d in t.shape):
                raise TypeRelError(
                    f"{name}: {what} must be a scalar (per tensor), got shape {tuple(t.shape)}"
                )
            check_qparam_type(t, dtype, what, name, (1,), 0)
        float_rel = base.get_attr("FTypeRelation")
        out = float_rel([TensorType(data.shape, "float32")], float_attrs(float_op, attrs))
        return TensorType(out.shape, data.dtype)

    plain = base.get_attr("FCompute")

    def kernel(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
        x, s, z, os, oz = (np.asarray(a) for a in inputs)
        dtype = str(x.dtype)
        runtime_qparams(
            name,
            [("input_scale", s), ("output_scale", os)],
            [("input_zero_point", z, dtype), ("output_zero_point", oz, dtype)],
        )
        deq = _dequantize([x, s, z], Attrs({"axis": -1, "out_dtype": "float32"}))
        with np.errstate(all="ignore"):
            y = np.asarray(plain([deq], float_attrs(float_op, attrs)), np.float32)
        return _quantize([y, os, oz], Attrs({"axis": -1, "out_dtype": dtype}))

    define_op(
        name,
        num_inputs=5,
        attrs=dict(base.attrs_schema),
        attrs_type_key=attrs_type_key,
        type_rel=rel,
        compute=kernel,
        pattern=OpPattern.OPAQUE,
        doc=doc,
        module=module,
    )
