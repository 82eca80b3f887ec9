"""``relay.op.dyn.nn``: ``dyn.nn.pad`` with run-time pad widths, and the dynamic twins of
``nn.matmul`` (``dyn.matmul``, broadcasting over ``?`` dimensions), ``nn.dropout``
(``dyn.dropout``, ONNX's, with a run-time ratio and training mode) and ``nn.upsampling`` /
``nn.upsampling3d`` (``dyn.nn.upsampling*``, run-time scales)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant, Expr
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op._relations import INT_DTYPES, tensor_arg
from relaykit.op.define import TypeRelError, make_call

from ._base import define_dyn_op, unknown

__all__ = ["dropout", "dropout_ref", "matmul", "pad", "upsampling", "upsampling3d"]


def _pad_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    width = tensor_arg(arg_types, 1, "pad_width")
    value = tensor_arg(arg_types, 2, "pad_value")
    if width.dtype not in INT_DTYPES or width.ndim != 2 or width.shape[1] not in (2,):
        raise TypeRelError(f"pad_width must be an integer tensor of shape (rank, 2), got {width}")
    if isinstance(width.shape[0], int) and width.shape[0] != data.ndim:
        raise TypeRelError(f"pad_width {width} needs one (before, after) row per axis of {data}")
    if value.ndim != 0:
        raise TypeRelError(f"pad_value must be a scalar, got {value}")
    return TensorType(unknown(data.ndim), data.dtype)


def _pad_convert(v: Sequence[Any], a: Attrs) -> tuple[list[Any], dict[str, Any]]:
    width = tuple(tuple(int(x) for x in row) for row in np.asarray(v[1]).reshape(-1, 2))
    return [v[0], v[2]], {"pad_width": width, "pad_mode": a.pad_mode}


define_dyn_op(
    "dyn.nn.pad",
    3,
    _pad_rel,
    static="nn.pad",
    convert=_pad_convert,
    attrs={"pad_mode": "constant"},
    value_inputs=(1,),
    doc="nn.pad with run-time pad widths (a (rank, 2) integer tensor).",
)


def pad(data: Expr, pad_width: Expr, pad_value: Any = 0.0, pad_mode: str = "constant") -> Call:
    """``data`` padded by the run-time ``pad_width`` (rank x 2 integers)."""
    if not isinstance(pad_value, Expr):
        pad_value = Constant(np.asarray(pad_value, dtype="float32"))
    return make_call("dyn.nn.pad", [data, pad_width, pad_value], pad_mode=pad_mode)


# -- dropout with a run-time ratio ----------------------------------------------------------------


def dropout_ref(
    x: np.ndarray, ratio: float, training: bool, seed: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """ONNX ``Dropout``: in training mode with a nonzero ratio, keep each element with
    probability 1 - ratio (scaled by 1 / (1 - ratio)); the mask draws
    ``RandomState(seed).uniform`` as ONNX's reference does. Otherwise the identity."""
    if ratio == 0 or not training:
        return x.copy(), np.ones(x.shape, dtype=bool)
    mask = np.random.RandomState(seed).uniform(0, 1.0, x.shape) >= ratio
    return (mask * x / (1.0 - ratio)).astype(x.dtype), mask


def _dropout_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    x = tensor_arg(arg_types, 0, "data")
    tensor_arg(arg_types, 1, "ratio")
    tensor_arg(arg_types, 2, "training_mode")
    return TupleType([x, TensorType(x.shape, "bool")])


define_dyn_op(
    "dyn.dropout",
    3,
    _dropout_rel,
    kernel=lambda ins, attrs: dropout_ref(
        np.asarray(ins[0]),
        float(np.asarray(ins[1]).reshape(-1)[0]),
        bool(np.asarray(ins[2]).reshape(-1)[0]),
        None if attrs.seed is None else int(attrs.seed),
    ),
    attrs={"seed": None},
    data_dependent=False,  # the output has the input's shape: the relation's shape function
    doc="ONNX Dropout with a run-time ratio and training mode: (output, mask).",
)


def dropout(data: Expr, ratio: Expr, training_mode: Expr, seed: int | None = None) -> Call:
    """ONNX ``Dropout`` with run-time ``ratio`` and ``training_mode``: ``(out, mask)``."""
    return make_call(
        "dyn.dropout", [data, ratio, training_mode], seed=None if seed is None else int(seed)
    )


# -- matmul over ? dimensions ---------------------------------------------------------------------


def _broadcast_dim(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:
        if a != b and 1 not in (a, b):
            raise TypeRelError(f"cannot broadcast dimensions {a} and {b}")
        return max(a, b) if 1 in (a, b) else a
    if a == 1:
        return b
    if b == 1:
        return a
    return a if type(a) is int else b if type(b) is int else AnyDim()


def _matmul_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    a = tensor_arg(arg_types, 0, "a")
    b = tensor_arg(arg_types, 1, "b")
    if not a.ndim or not b.ndim:
        raise TypeRelError(f"matmul needs inputs of rank >= 1, got {a} and {b}")
    sa = (1, *a.shape) if a.ndim == 1 else a.shape
    sb = (*b.shape, 1) if b.ndim == 1 else b.shape
    k1, k2 = sa[-1], sb[-2]
    if type(k1) is int and type(k2) is int and k1 != k2:
        raise TypeRelError(f"cannot multiply {a.shape} by {b.shape}: inner dimensions differ")
    la, lb = sa[:-2], sb[:-2]
    n = max(len(la), len(lb))
    la = (1,) * (n - len(la)) + tuple(la)
    lb = (1,) * (n - len(lb)) + tuple(lb)
    batch = tuple(_broadcast_dim(x, y) for x, y in zip(la, lb, strict=True))
    out = (*batch, sa[-2], sb[-1])
    if a.ndim == 1:
        out = out[:-2] + out[-1:]
    if b.ndim == 1:
        out = out[:-1]
    return TensorType(out, a.dtype)


define_dyn_op(
    "dyn.matmul",
    2,
    _matmul_rel,
    kernel=lambda ins, attrs: np.ascontiguousarray(np.matmul(ins[0], ins[1])),
    doc="NumPy matmul (batch broadcasting, 1-D operands) over ? dimensions.",
)


def matmul(a: Expr, b: Expr) -> Call:
    """NumPy ``matmul`` of ``a`` and ``b``, whose dimensions may be ``?``."""
    return make_call("dyn.matmul", [a, b])


# -- dyn.nn.upsampling, dyn.nn.upsampling3d: run-time scales --------------------------------------


def _scaled_axes(layout: str, axes: str) -> list[int]:
    return [layout.index(a) for a in axes]


def _upsampling_rel(axes: str) -> Any:
    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        for i, name in enumerate(axes, start=1):
            scale = tensor_arg(arg_types, i, f"scale_{name.lower()}")
            if scale.ndim != 0:
                raise TypeRelError(f"scale_{name.lower()} must be a scalar, got {scale}")
        layout = str(attrs.layout)
        if len(layout) != data.ndim or any(a not in layout for a in axes):
            raise TypeRelError(f"layout {layout!r} does not describe {data}")
        shape = list(data.shape)
        for i in _scaled_axes(layout, axes):
            shape[i] = AnyDim()
        return TensorType(tuple(shape), data.dtype)

    return rel


def _scales(values: Sequence[Any], names: str) -> dict[str, float]:
    return {
        f"scale_{n.lower()}": float(np.asarray(v).reshape(-1)[0])
        for n, v in zip(names, values, strict=True)
    }


def _upsampling_convert(v: Sequence[Any], a: Attrs) -> tuple[list[Any], dict[str, Any]]:
    opts = {"layout": a.layout, "method": a.method, "align_corners": bool(a.align_corners)}
    return [v[0]], {**_scales(v[1:], "HW"), **opts}


def _upsampling3d_convert(v: Sequence[Any], a: Attrs) -> tuple[list[Any], dict[str, Any]]:
    opts = {
        "layout": a.layout,
        "method": a.method,
        "coordinate_transformation_mode": a.coordinate_transformation_mode,
    }
    return [v[0]], {**_scales(v[1:], "DHW"), **opts}


define_dyn_op(
    "dyn.nn.upsampling",
    3,
    _upsampling_rel("HW"),
    static="nn.upsampling",
    convert=_upsampling_convert,
    attrs={"layout": "NCHW", "method": "nearest_neighbor", "align_corners": False},
    attrs_type_key="relay.attrs.UpSamplingAttrs",
    value_inputs=(1, 2),
    doc="nn.upsampling with run-time scale_h and scale_w (float scalars).",
)
define_dyn_op(
    "dyn.nn.upsampling3d",
    4,
    _upsampling_rel("DHW"),
    static="nn.upsampling3d",
    convert=_upsampling3d_convert,
    attrs={
        "layout": "NCDHW",
        "method": "nearest_neighbor",
        "coordinate_transformation_mode": "half_pixel",
    },
    attrs_type_key="relay.attrs.UpSampling3DAttrs",
    value_inputs=(1, 2, 3),
    doc="nn.upsampling3d with run-time scale_d, scale_h and scale_w (float scalars).",
)


def _scale_expr(scale: Any) -> Expr:
    return scale if isinstance(scale, Expr) else Constant(np.asarray(scale, dtype="float32"))


def upsampling(
    data: Expr,
    scale_h: Any,
    scale_w: Any,
    layout: str = "NCHW",
    method: str = "nearest_neighbor",
    align_corners: bool = False,
) -> Call:
    """``nn.upsampling`` with scales given as expressions (float scalars) at run time."""
    return make_call(
        "dyn.nn.upsampling",
        [data, _scale_expr(scale_h), _scale_expr(scale_w)],
        layout=layout,
        method=method,
        align_corners=bool(align_corners),
    )


def upsampling3d(
    data: Expr,
    scale_d: Any,
    scale_h: Any,
    scale_w: Any,
    layout: str = "NCDHW",
    method: str = "nearest_neighbor",
    coordinate_transformation_mode: str = "half_pixel",
) -> Call:
    """``nn.upsampling3d`` with scales given as expressions (float scalars) at run time."""
    return make_call(
        "dyn.nn.upsampling3d",
        [data, *(_scale_expr(s) for s in (scale_d, scale_h, scale_w))],
        layout=layout,
        method=method,
        coordinate_transformation_mode=coordinate_transformation_mode,
    )
