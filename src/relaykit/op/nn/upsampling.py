"""Upsampling by a scale factor: ``nn.upsampling`` (2-D: nearest, bilinear or bicubic)
and ``nn.upsampling3d`` (nearest or trilinear), TVM's names and attributes.

Each spatial size becomes ``round(size * scale)``; the values are those of the image
resize of the same method to that size, with ``align_corners`` (2-D) or the given
coordinate transformation (3-D) mapping output to input positions.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 2, 3, 4))
>>> upsampling(x, 2, 2).attrs.scale_h
2.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant, Expr
from relaykit.ir.op import default_registry
from relaykit.ir.types import AnyDim, TensorType, Type
from relaykit.op._relations import static, static_value, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_attrs, make_call
from relaykit.op.layout import parse_layout, transform_layout

__all__ = ["upsampling", "upsampling3d", "upsampling_resize_attrs"]

#: method name of each upsampling -> the image resize method it computes with
_METHODS_2D = {"nearest_neighbor": "nearest_neighbor", "bilinear": "linear", "bicubic": "cubic"}
_METHODS_3D = {"nearest_neighbor": "nearest_neighbor", "trilinear": "linear"}
_LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _scales(attrs: Attrs, rank: int) -> tuple[float, ...]:
    names = ("scale_h", "scale_w") if rank == 2 else ("scale_d", "scale_h", "scale_w")
    return tuple(float(getattr(attrs, n)) for n in names)


def _primal(layout: str) -> str:
    """The layout without its channel blocks (``NCHW16c`` -> ``NCHW``)."""
    return "".join(ch for ch in layout if ch.isupper())


def _out_shape(data: TensorType, attrs: Attrs, rank: int, what: str) -> tuple[Any, ...]:
    blocks = len(parse_layout(attrs.layout)) - len(_primal(attrs.layout))
    if data.ndim != rank + 2 + blocks:
        raise TypeRelError(f"{what} takes a {rank + 2 + blocks}-d tensor, got {data}")
    if any(ch in attrs.layout for ch in "dhw"):
        raise TypeRelError(f"{what} cannot scale a blocked spatial axis ({attrs.layout})")
    if _primal(attrs.layout) not in _LAYOUTS[rank]:
        raise TypeRelError(
            f"{what} layout must be one of {', '.join(_LAYOUTS[rank])}, got {attrs.layout!r}"
        )
    methods = _METHODS_2D if rank == 2 else _METHODS_3D
    if attrs.method not in methods:
        raise TypeRelError(
            f"{what} method must be one of {', '.join(methods)}, got {attrs.method!r}"
        )
    shape = list(data.shape)
    axes = [i for i, c in enumerate(attrs.layout) if c in "DHW"]
    for axis, scale in zip(axes, _scales(attrs, rank), strict=True):
        if scale <= 0:
            raise TypeRelError(f"{what} scales must be positive, got {scale}")
        d = shape[axis]
        shape[axis] = int(np.round(int(d) * scale)) if static(d) else AnyDim()
    return tuple(shape)


def upsampling_resize_attrs(attrs: Attrs, shape: tuple[int, ...], rank: int) -> Attrs:
    """The ``image.resize{rank}d`` attributes computing this upsampling to ``shape``."""
    axes = [i for i, c in enumerate(attrs.layout) if c in "DHW"]
    if rank == 2:
        method = _METHODS_2D[attrs.method]
        mode = "align_corners" if attrs.align_corners else "asymmetric"
    else:
        method = _METHODS_3D[attrs.method]
        mode = attrs.coordinate_transformation_mode
    op = default_registry.get(f"image.resize{rank}d")
    given = {
        "size": tuple(shape[a] for a in axes),
        "layout": attrs.layout,
        "method": method,
        "coordinate_transformation_mode": mode,
    }
    return make_attrs(op, given)


def _make(rank: int, what: str) -> tuple[Any, Any]:
    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        return TensorType(_out_shape(data, attrs, rank, what), data.dtype)

    def kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        x = inputs[0]
        layout, primal = attrs.layout, _primal(attrs.layout)
        if layout != primal:  # blocked channels: resize in the primal layout
            x = transform_layout(x, layout, primal)
            attrs = attrs.with_updates(layout=primal)
        shape = _out_shape(TensorType(x.shape, x.dtype.name), attrs, rank, what)
        resize = default_registry.get_attr(f"image.resize{rank}d", "FCompute")
        out = resize([x], upsampling_resize_attrs(attrs, shape, rank))
        return out if layout == primal else transform_layout(out, primal, layout)

    return rel, kernel


_rel2, _kernel2 = _make(2, "upsampling")
_rel3, _kernel3 = _make(3, "upsampling3d")

define_op(
    "nn.upsampling",
    num_inputs=1,
    attrs={
        "scale_h": 1.0,
        "scale_w": 1.0,
        "layout": "NCHW",
        "method": "nearest_neighbor",
        "align_corners": False,
    },
    attrs_type_key="relay.attrs.UpSamplingAttrs",
    type_rel=_rel2,
    compute=_kernel2,
    pattern=OpPattern.INJECTIVE,
    doc="2-D upsampling by scale_h and scale_w.",
)
define_op(
    "nn.upsampling3d",
    num_inputs=1,
    attrs={
        "scale_d": 1.0,
        "scale_h": 1.0,
        "scale_w": 1.0,
        "layout": "NCDHW",
        "method": "nearest_neighbor",
        "coordinate_transformation_mode": "half_pixel",
    },
    attrs_type_key="relay.attrs.UpSampling3DAttrs",
    type_rel=_rel3,
    compute=_kernel3,
    pattern=OpPattern.INJECTIVE,
    doc="3-D upsampling by scale_d, scale_h and scale_w.",
)


def _scale_expr(scale: Any) -> Expr:
    """A scale as a float32 scalar expression (numbers become constants)."""
    return scale if isinstance(scale, Expr) else Constant(np.asarray(scale, dtype="float32"))


def upsampling(
    data: Expr,
    scale_h: float = 1,
    scale_w: float = 1,
    layout: str = "NCHW",
    method: str = "nearest_neighbor",
    align_corners: bool = False,
) -> Call:
    """``data`` (NCHW or NHWC) upsampled: each of H and W times its scale, rounded.
    A scale given as a relay expression (known at run time) makes ``dyn.nn.upsampling``."""
    sh, sw = static_value(scale_h), static_value(scale_w)
    if isinstance(sh, Expr) or isinstance(sw, Expr):
        return make_call(
            "dyn.nn.upsampling",
            [data, _scale_expr(sh), _scale_expr(sw)],
            layout=layout,
            method=method,
            align_corners=bool(align_corners),
        )
    scale_h, scale_w = sh, sw
    return make_call(
        "nn.upsampling",
        [data],
        scale_h=float(scale_h),
        scale_w=float(scale_w),
        layout=layout,
        method=method,
        align_corners=bool(align_corners),
    )


def upsampling3d(
    data: Expr,
    scale_d: float = 1,
    scale_h: float = 1,
    scale_w: float = 1,
    layout: str = "NCDHW",
    method: str = "nearest_neighbor",
    coordinate_transformation_mode: str = "half_pixel",
) -> Call:
    """``data`` (NCDHW or NDHWC) upsampled: each of D, H and W times its scale, rounded.
    A scale given as a relay expression (known at run time) makes ``dyn.nn.upsampling3d``."""
    scales = [static_value(s) for s in (scale_d, scale_h, scale_w)]
    if any(isinstance(s, Expr) for s in scales):
        return make_call(
            "dyn.nn.upsampling3d",
            [data, *(_scale_expr(s) for s in scales)],
            layout=layout,
            method=method,
            coordinate_transformation_mode=coordinate_transformation_mode,
        )
    scale_d, scale_h, scale_w = scales
    return make_call(
        "nn.upsampling3d",
        [data],
        scale_d=float(scale_d),
        scale_h=float(scale_h),
        scale_w=float(scale_w),
        layout=layout,
        method=method,
        coordinate_transformation_mode=coordinate_transformation_mode,
    )
