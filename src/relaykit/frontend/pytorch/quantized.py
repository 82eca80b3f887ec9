"""Quantized tensors in the PyTorch frontend: what a ``QUInt8``/``QInt8`` value of a
torch.ao-quantized TorchScript graph becomes, the packed weights of quantized
convolutions and linear layers, and how plain ``aten::`` ops run on quantized inputs.

A quantized torch tensor carries its scale and zero point with it; in Relay it is an
integer tensor plus the two constants, a :class:`QTensor`. The converters of
``quantized::*`` ops (:mod:`.ops_quantized`) read and produce them. An ``aten::`` op
that torch runs on quantized tensors keeps the input's quantization
(:data:`SAME_QPARAMS_INT` run on the integers as they are, :data:`SAME_QPARAMS_FLOAT`
through dequantize -> float op -> quantize) or has fixed output parameters
(:data:`FIXED_QPARAMS`: sigmoid, hardsigmoid, tanh), as torch's quantized kernels do.

>>> import numpy as np
>>> q = QTensor(None, np.float32(0.5), np.int32(3), "uint8")
>>> q.per_channel
False
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Constant, Expr, TupleWrapper, checked_type_or_none, const
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType
from relaykit.op import qnn

from .registry import Converter, OpContext

#: torch rounds quantized values to nearest, halves to even (``nearbyint``).
EVEN = "TONEAREST_EVEN"

__all__ = [
    "FIXED_QPARAMS",
    "PackedParams",
    "QTensor",
    "SAME_QPARAMS_AVERAGE",
    "SAME_QPARAMS_FLOAT",
    "SAME_QPARAMS_INT",
    "convert_on_quantized",
    "dequantize",
    "has_qtensor",
    "qrange",
    "quantize",
    "torch_qdtype",
    "unwrap_outputs",
]

# c10::ScalarType numbers of the quantized dtypes
_QSCALAR_TYPES = {12: "int8", 13: "uint8", 14: "int32"}


def torch_qdtype(value: Any) -> str | None:
    """The integer dtype of a torch quantized dtype (``torch.quint8`` or its number)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _QSCALAR_TYPES.get(value)
    return {"torch.quint8": "uint8", "torch.qint8": "int8", "torch.qint32": "int32"}.get(str(value))


def qrange(dtype: str) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


@dataclass(frozen=True)
class QTensor:
    """An integer tensor ``expr`` with torch's quantization: ``real = scale * (q - zp)``;
    ``scale``/``zero_point`` are scalars, or 1-D along ``axis`` (per-channel)."""

    expr: Any
    scale: np.ndarray
    zero_point: np.ndarray
    dtype: str
    axis: int = -1

    @property
    def per_channel(self) -> bool:
        return np.ndim(self.scale) > 0

    def scale_const(self) -> Constant:
        return const(np.asarray(self.scale, dtype="float32"), "float32")

    def zp_const(self) -> Constant:
        return const(np.asarray(self.zero_point, dtype="int32"), "int32")

    def with_expr(self, expr: Any) -> QTensor:
        return QTensor(expr, self.scale, self.zero_point, self.dtype, self.axis)


@dataclass
class PackedParams:
    """The contents of a ``Conv2dPackedParamsBase`` / ``LinearPackedParamsBase`` (or of
    a ``quantized::*_prepack`` call): the int8 weight with its quantization, the float
    bias and, for convolutions, the layout arguments. ``make_param(suffix, array)`` makes
    a parameter of ``main`` named after the packed object."""

    kind: str  # "conv" or "linear"
    weight: np.ndarray | None  # int values (None when weight_expr is given)
    w_scale: np.ndarray
    w_zero_point: np.ndarray
    w_axis: int
    bias: np.ndarray | None
    make_param: Callable[[str, np.ndarray], Expr]
    keep_quantized_weight: bool = False
    stride: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1, 1)
    output_padding: tuple[int, ...] = (0, 0)
    groups: int = 1
    transposed: bool = False
    weight_expr: Expr | None = None  # an int8 expression (prepack of a graph value)
    bias_expr: Expr | None = None
    weight_shape: tuple[int, ...] = ()
    _weight_cache: Expr | None = None

    def int_weight(self) -> Expr:
        """The int8 weight: the kept int8 parameter, or ``qnn.quantize`` of the float one."""
        if self.weight_expr is not None:
            return self.weight_expr
        if self._weight_cache is None:
            assert self.weight is not None
            if self.keep_quantized_weight:
                self._weight_cache = self.make_param("weight", self.weight.astype("int8"))
            else:
                zp = _bcast(self.w_zero_point, self.weight.ndim, self.w_axis)
                sc = _bcast(self.w_scale, self.weight.ndim, self.w_axis)
                real = ((self.weight.astype("int32") - zp) * sc).astype("float32")
                var = self.make_param("weight", real)
                self._weight_cache = qnn.quantize(
                    var,
                    _fconst(self.w_scale),
                    _iconst(self.w_zero_point),
                    self.w_axis,
                    "int8",
                    rounding=EVEN,
                )
        return self._weight_cache

    def int_bias(self, in_scale: np.ndarray, axis: int) -> Expr | None:
        """The bias in int32 at ``in_scale * w_scale``: the kept int32 parameter, or
        ``qnn.quantize`` of the float one."""
        scale = (np.asarray(in_scale, "float64") * np.asarray(self.w_scale, "float64")).astype(
            "float32"
        )
        if self.bias_expr is not None:
            zeros = _iconst(np.zeros_like(scale, "int32"))
            return qnn.quantize(self.bias_expr, _fconst(scale), zeros, 0, "int32", rounding=EVEN)
        if self.bias is None:
            return None
        if self.keep_quantized_weight:
            q = np.round(self.bias.astype("float64") / scale.astype("float64"))
            return self.make_param("bias", np.clip(q, -(2**31), 2**31 - 1).astype("int32"))
        var = self.make_param("bias", self.bias.astype("float32"))
        zp = np.zeros(np.shape(scale), "int32")
        return qnn.quantize(var, _fconst(scale), _iconst(zp), 0, "int32", rounding=EVEN)


def _bcast(v: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    v = np.asarray(v)
    if v.ndim == 0:
        return v
    shape = [1] * ndim
    shape[axis] = v.size
    return v.reshape(shape)


def _fconst(v: Any) -> Constant:
    return const(np.asarray(v, dtype="float32"), "float32")


def _iconst(v: Any) -> Constant:
    return const(np.asarray(v, dtype="int32"), "int32")


def dequantize(q: QTensor) -> Expr:
    """``qnn.dequantize`` of ``q`` to float32."""
    return qnn.dequantize(q.expr, q.scale_const(), q.zp_const(), q.axis)


def quantize(x: Expr, scale: Any, zero_point: Any, dtype: str, axis: int = -1) -> QTensor:
    """``qnn.quantize`` of the float ``x`` as a :class:`QTensor`."""
    s = np.asarray(scale, "float32")
    z = np.asarray(zero_point, "int32")
    return QTensor(
        qnn.quantize(x, _fconst(s), _iconst(z), axis, dtype, rounding=EVEN), s, z, dtype, axis
    )


def has_qtensor(args: Any) -> bool:
    for a in args:
        if isinstance(a, QTensor):
            return True
        if isinstance(a, (list, tuple)) and has_qtensor(a):
            return True
    return False


def unwrap_outputs(value: Any) -> Any:
    """Graph outputs: a quantized output is returned as its integer tensor."""
    if isinstance(value, QTensor):
        return value.expr
    if isinstance(value, (list, tuple)):
        return type(value)(unwrap_outputs(v) for v in value)
    return value


def _map(args: Any, fn: Callable[[QTensor], Any]) -> Any:
    if isinstance(args, QTensor):
        return fn(args)
    if isinstance(args, list):
        return [_map(a, fn) for a in args]
    if isinstance(args, tuple):
        return tuple(_map(a, fn) for a in args)
    return args


def _first_q(args: Any) -> QTensor | None:
    for a in args:
        if isinstance(a, QTensor):
            return a
        if isinstance(a, (list, tuple)):
            q = _first_q(a)
            if q is not None:
                return q
    return None


#: aten ops torch runs on the integers of a quantized tensor, keeping its quantization
SAME_QPARAMS_INT = frozenset(
    [
        "flatten",
        "reshape",
        "view",
        "view_as",
        "reshape_as",
        "contiguous",
        "permute",
        "transpose",
        "t",
        "numpy_T",
        "squeeze",
        "unsqueeze",
        "expand",
        "expand_as",
        "max_pool1d",
        "max_pool2d",
        "max_pool2d_with_indices",
        "dropout",
        "feature_dropout",
        "slice",
        "select",
        "narrow",
        "chunk",
        "split",
        "split_with_sizes",
        "unbind",
        "unflatten",
        "clone",
        "detach",
        "upsample_nearest2d",
        "pixel_shuffle",
        "channel_shuffle",
        "repeat",
        "flip",
        "__getitem__",
        "to",
        "size",
        "dim",
        "numel",
    ]
)
#: aten ops torch computes in float on a quantized tensor and quantizes again with the
#: input's scale and zero point
SAME_QPARAMS_FLOAT = frozenset(
    [
        "upsample_bilinear2d",
        "hardtanh",
        "relu",
        "relu6",
        "clamp",
        "leaky_relu",
        "elu",
        "gelu",
    ]
)
#: aten ops torch computes on the integers less the zero point, rounding the float
#: result plus the zero point half to even (averages: their ties are common), keeping the
#: quantization
SAME_QPARAMS_AVERAGE = frozenset(
    [
        "avg_pool1d",
        "avg_pool2d",
        "adaptive_avg_pool1d",
        "adaptive_avg_pool2d",
        "_adaptive_avg_pool2d",
        "mean",
    ]
)
#: aten ops whose quantized output has fixed parameters: op -> dtype -> (scale, zero point)
FIXED_QPARAMS: dict[str, dict[str, tuple[float, int]]] = {
    "sigmoid": {"uint8": (1.0 / 256, 0), "int8": (1.0 / 256, -128)},
    "hardsigmoid": {"uint8": (1.0 / 256, 0), "int8": (1.0 / 256, -128)},
    "tanh": {"uint8": (2.0 / 256, 128), "int8": (2.0 / 256, 0)},
}


def convert_on_quantized(ctx: OpContext, key: str, fn: Converter, args: list[Any]) -> Any:
    """``aten::<key>`` on quantized inputs, as torch's quantized kernels compute it."""
    first = _first_q(args)
    assert first is not None
    if key == "dequantize":
        return _map(args[0], dequantize)
    if key == "q_scale":
        return float(first.scale)
    if key == "q_zero_point":
        return int(first.zero_point)
    if key == "int_repr":
        return first.expr
    if key in ("cat", "concat", "concatenate", "stack"):
        return _cat(ctx, key, args)
    if key in SAME_QPARAMS_INT:
        result = fn(ctx, _map(args, lambda q: q.expr))
        return _wrap_like(ctx, result, first)
    if first.per_channel:
        raise ctx.fail(f"aten::{key} on a per-channel quantized tensor is not supported")
    if key in SAME_QPARAMS_AVERAGE:
        # torch rounds ``zp + average`` (half to even), not ``average`` before adding zp
        result = fn(ctx, _map(args, _centered))
        if int(first.zero_point) != 0:
            result = op.add(result, const(np.asarray(first.zero_point, "float32"), "float32"))
        zero = _iconst(np.int32(0))
        return QTensor(
            qnn.quantize(result, _fconst(1.0), zero, -1, first.dtype, rounding=EVEN),
            first.scale, first.zero_point, first.dtype,
        )  # fmt: skip
    if key in SAME_QPARAMS_FLOAT:
        result = fn(ctx, _map(args, dequantize))
        return quantize(result, first.scale, first.zero_point, first.dtype)
    if key in FIXED_QPARAMS:
        if first.dtype not in FIXED_QPARAMS[key]:
            raise ctx.fail(f"aten::{key} on a quantized {first.dtype} tensor is not supported")
        scale, zp = FIXED_QPARAMS[key][first.dtype]
        result = fn(ctx, _map(args, dequantize))
        return quantize(result, scale, zp, first.dtype)
    raise ctx.fail(
        f"aten::{key} on a quantized tensor is not supported: dequantize before it (a "
        "DeQuantStub, or leave the op out of the qconfig) or give a custom_convert_map entry"
    )


def _centered(q: QTensor) -> Expr:
    """``q``'s integers less its zero point, in float32 (exact)."""
    values = op.cast(q.expr, "float32")
    if int(q.zero_point) == 0:
        return values
    return op.subtract(values, const(np.asarray(q.zero_point, "float32"), "float32"))


def _requantize_as_torch(q: QTensor, scale: np.ndarray, zero_point: np.ndarray) -> Expr:
    """``q`` to ``scale``/``zero_point`` as torch's quantized cat computes it, in float32:
    ``nearbyint((q - zp) * s * (1 / scale)) + zero_point`` (dividing by ``scale`` instead
    rounds the many exact ties of round-number scales the other way)."""
    inv = np.float32(1.0) / np.float32(scale)
    scaled = op.multiply(dequantize(q), const(inv, "float32"))
    return qnn.quantize(scaled, _fconst(1.0), _iconst(zero_point), -1, q.dtype, rounding=EVEN)


def _wrap_like(ctx: OpContext, result: Any, like: QTensor) -> Any:
    """Integer results of a same-parameters op as QTensors with ``like``'s quantization
    (results of other dtypes -- sizes, indices -- stay as they are)."""
    if isinstance(result, TupleWrapper):
        return [_wrap_like(ctx, result[i], like) for i in range(len(result))]
    if isinstance(result, Expr):
        ty = checked_type_or_none(result) or infer_type_local(result)
        if isinstance(ty, TensorType) and ty.dtype == like.dtype:
            return like.with_expr(result)
        return result
    if isinstance(result, (list, tuple)):
        return type(result)(_wrap_like(ctx, r, like) for r in result)
    return result


def _cat(ctx: OpContext, key: str, args: list[Any]) -> QTensor:
    """``aten::cat`` of quantized tensors: the output takes the first input's quantization
    (torch's rule); the others are requantized to it."""
    items = list(args[0])
    dim = int(args[1]) if len(args) > 1 and args[1] is not None else 0
    if not all(isinstance(q, QTensor) for q in items):
        raise ctx.fail("aten::cat mixes quantized and float tensors")
    first = items[0]
    return concat_q(ctx, items, dim, first.scale, first.zero_point, stack=key == "stack")


def concat_q(
    ctx: OpContext,
    items: list[QTensor],
    dim: int,
    scale: Any,
    zero_point: Any,
    stack: bool = False,
) -> QTensor:
    """Quantized tensors concatenated with ``scale``/``zero_point``: each input with other
    parameters is requantized as torch does it (dequantize, quantize: one rounding of the
    float value; ``qnn.concatenate``'s fixed-point requantization differs from torch on a
    tenth of such elements), then the integers are concatenated."""
    if any(q.per_channel for q in items):
        raise ctx.fail("concatenating per-channel quantized tensors is not supported")
    s = np.asarray(scale, "float32").reshape(())
    z = np.asarray(zero_point, "int32").reshape(())
    dtype = items[0].dtype
    exprs = []
    for q in items:
        same = float(q.scale) == float(s) and int(q.zero_point) == int(z) and q.dtype == dtype
        exprs.append(q.expr if same else _requantize_as_torch(q, s, z))
    if stack:
        axis = ctx.axis(op.expand_dims(exprs[0], 0), dim)
        exprs = [op.expand_dims(e, axis) for e in exprs]
    else:
        axis = ctx.axis(exprs[0], dim)
    return QTensor(op.concatenate(exprs, axis), s, z, dtype)
