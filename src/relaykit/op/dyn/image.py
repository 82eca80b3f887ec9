"""``relay.op.dyn.image``: ``dyn.image.resize2d`` with a run-time output size."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant, Expr
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import resolve_dtype, tensor_arg
from relaykit.op.define import TypeRelError, make_call

from ._base import define_dyn_op, shape_input

__all__ = ["resize2d"]

_RESIZE_ATTRS = {
    "layout": "NCHW",
    "method": "linear",
    "coordinate_transformation_mode": "half_pixel",
    "rounding_method": "",
    "cubic_alpha": -0.5,
    "cubic_exclude": 0,
    "extrapolation_value": 0.0,
    "out_dtype": "",
}


def _resize2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if shape_input(arg_types, 1, "size") != 2:
        raise TypeRelError("size must hold two values (height, width)")
    layout = attrs.layout
    if data.ndim != 4 or sorted(layout) != sorted("NCHW"):
        raise TypeRelError(f"resize2d needs 4-D data in a layout like NCHW, got {data} {layout}")
    shape = list(data.shape)
    shape[layout.index("H")] = AnyDim()
    shape[layout.index("W")] = AnyDim()
    return TensorType(shape, resolve_dtype(attrs.out_dtype, data.dtype))


def _resize_convert(v: Sequence[Any], a: Attrs) -> tuple[list[Any], dict[str, Any]]:
    size = tuple(int(x) for x in np.asarray(v[1]).reshape(-1))
    roi = tuple(float(x) for x in np.asarray(v[2]).reshape(-1)) if len(v) > 2 else None
    attrs = {k: a[k] for k in _RESIZE_ATTRS}
    return [v[0]], {"size": size, "roi": roi or (0.0, 0.0, 0.0, 0.0), **attrs}


define_dyn_op(
    "dyn.image.resize2d",
    "image.resize2d",
    3,
    _resize2d_rel,
    _resize_convert,
    attrs=_RESIZE_ATTRS,
    value_inputs=(1, 2),
    doc="image.resize2d with a run-time (height, width) size and region of interest.",
)


def resize2d(
    data: Expr,
    size: Expr,
    roi: Any = None,
    layout: str = "NCHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "",
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
    extrapolation_value: float = 0.0,
    out_dtype: str = "",
) -> Call:
    """``data`` resized to the run-time ``size`` (two integers)."""
    if not isinstance(roi, Expr):
        roi = Constant(np.asarray(roi if roi is not None else (0.0,) * 4, dtype="float32"))
    return make_call(
        "dyn.image.resize2d",
        [data, size, roi],
        layout=layout,
        method=method,
        coordinate_transformation_mode=coordinate_transformation_mode,
        rounding_method=rounding_method,
        cubic_alpha=cubic_alpha,
        cubic_exclude=cubic_exclude,
        extrapolation_value=extrapolation_value,
        out_dtype=out_dtype,
    )
