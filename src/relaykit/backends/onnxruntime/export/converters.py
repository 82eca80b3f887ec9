"""Relay operator -> ONNX nodes, one converter per operator family.

Each entry of :data:`CONVERTERS` is ``(convert, check)``: ``check(call)`` says
whether the call can be exported (``True`` or a :func:`~relaykit.byoc.rules.decline`
reason, read by the backend's rules), ``convert(builder, call, inputs)`` appends
the nodes and returns the output names (one per output of the call).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.byoc.rules import Decline, decline
from relaykit.ir.expr import Call, Expr, checked_type_or_none
from relaykit.ir.types import TensorType, TupleType
from relaykit.op.nn.conv_weights import MULTIPLIER_DECLINE, has_multiplier_weight

from .builder import GraphBuilder, onnx_dtype

__all__ = ["CONVERTERS", "Convert", "Check", "static_shape"]

Convert = Callable[[GraphBuilder, Call, list[str]], list[str]]
Check = Callable[[Call], "Decline | bool"]
CONVERTERS: dict[str, tuple[Convert, Check]] = {}

_DTYPES = ("float32",)


def _op(call: Call) -> str:
    return str(getattr(call.op, "name", ""))


def static_shape(expr: Expr) -> tuple[int, ...] | None:
    """The static shape of a tensor-typed expression, or None."""
    ty = checked_type_or_none(expr)
    if not isinstance(ty, TensorType):
        return None
    if not all(isinstance(d, int) for d in ty.shape):
        return None
    return tuple(int(d) for d in ty.shape)


def _shape(expr: Expr) -> tuple[int, ...]:
    shape = static_shape(expr)
    assert shape is not None  # checked by the rule before conversion
    return shape


def _tensors_ok(call: Call) -> Decline | bool:
    """Every input and output a static float32 tensor (or a tuple of them)."""
    for i, a in enumerate(call.args):
        ty = checked_type_or_none(a)
        for f in ty.fields if isinstance(ty, TupleType) else (ty,):
            if not isinstance(f, TensorType) or f.dtype not in _DTYPES:
                return decline(f"input {i} is {ty}; onnxruntime takes float32 tensors here")
            if not all(isinstance(d, int) for d in f.shape):
                return decline(f"input {i} has a dynamic shape {ty}")
    out = checked_type_or_none(call)
    fields = out.fields if isinstance(out, TupleType) else (out,)
    for f in fields:
        if not isinstance(f, TensorType) or not all(isinstance(d, int) for d in f.shape):
            return decline(f"output {out} is not a static tensor")
    return True


def _register(*names: str, check: Check | None = None) -> Callable[[Convert], Convert]:
    def wrap(fn: Convert) -> Convert:
        def full_check(call: Call) -> Decline | bool:
            ok = _tensors_ok(call)
            if ok is not True or check is None:
                return ok
            return check(call)

        for n in names:
            CONVERTERS[n] = (fn, full_check)
        return fn

    return wrap


# -- elementwise -------------------------------------------------------------------------

_BINARY = {
    "add": "Add",
    "subtract": "Sub",
    "multiply": "Mul",
    "divide": "Div",
    "power": "Pow",
    "maximum": "Max",
    "minimum": "Min",
}
_UNARY = {
    "nn.relu": "Relu",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "tanh": "Tanh",
    "sigmoid": "Sigmoid",
    "abs": "Abs",
    "negative": "Neg",
    "erf": "Erf",
    "floor": "Floor",
    "ceil": "Ceil",
    "copy": "Identity",
}


@_register(*_BINARY)
def _binary(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    return [b.one(_BINARY[_op(call)], ins)]


@_register(*_UNARY)
def _unary(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    return [b.one(_UNARY[_op(call)], ins)]


@_register("rsqrt")
def _rsqrt(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    return [b.one("Reciprocal", [b.one("Sqrt", ins)])]


@_register("clip")
def _clip(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    lo = b.const(np.float32(call.attrs.a_min))
    hi = b.const(np.float32(call.attrs.a_max))
    return [b.one("Clip", [ins[0], lo, hi])]


@_register("nn.leaky_relu")
def _leaky_relu(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    return [b.one("LeakyRelu", ins, alpha=float(call.attrs.alpha))]


@_register("nn.gelu")
def _gelu(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    half = b.one("Mul", [ins[0], b.const(np.float32(0.5))])
    scaled = b.one("Mul", [ins[0], b.const(np.float32(1.0 / np.sqrt(2.0)))])
    one_plus = b.one("Add", [b.one("Erf", [scaled]), b.const(np.float32(1.0))])
    return [b.one("Mul", [half, one_plus])]


# -- linear algebra ------------------------------------------------------------------------


def _dense_check(call: Call) -> Decline | bool:
    if call.attrs.out_dtype not in ("", "float32"):
        return decline(f"out_dtype {call.attrs.out_dtype} is not float32")
    return True


@_register("nn.dense", check=_dense_check)
def _dense(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    w_t = b.one("Transpose", [ins[1]], perm=[1, 0])
    return [b.one("MatMul", [ins[0], w_t])]


@_register("nn.matmul", check=_dense_check)
def _matmul(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    a, w = ins
    if call.attrs.transpose_a:
        a = b.one("Transpose", [a], perm=[1, 0])
    if call.attrs.transpose_b:
        w = b.one("Transpose", [w], perm=[1, 0])
    return [b.one("MatMul", [a, w])]


@_register("nn.batch_matmul", check=_dense_check)
def _batch_matmul(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    a, w = ins
    if call.attrs.transpose_a:
        a = b.one("Transpose", [a], perm=[0, 2, 1])
    if call.attrs.transpose_b:
        w = b.one("Transpose", [w], perm=[0, 2, 1])
    return [b.one("MatMul", [a, w])]


@_register("nn.bias_add")
def _bias_add(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    ndim = len(_shape(call.args[0]))
    axis = int(call.attrs.axis) % ndim
    shape = [1] * (ndim - axis)
    shape[0] = -1
    bias = b.one("Reshape", [ins[1], b.ints(shape)])
    return [b.one("Add", [ins[0], bias])]


# -- convolution and pooling ---------------------------------------------------------------


def _conv_check(call: Call) -> Decline | bool:
    a = call.attrs
    if has_multiplier_weight(call):
        return decline(MULTIPLIER_DECLINE)
    if a.data_layout != "NCHW" or a.kernel_layout != "OIHW" or a.out_layout not in ("", "NCHW"):
        return decline(f"layout {a.data_layout}/{a.kernel_layout}; onnxruntime takes NCHW/OIHW")
    if a.out_dtype not in ("", "float32"):
        return decline(f"out_dtype {a.out_dtype} is not float32")
    return True


def _pads(padding: Sequence[int]) -> list[int]:
    """Relay's (top, left, bottom, right) as ONNX's (begins..., ends...)."""
    p = [int(v) for v in padding]
    if len(p) == 1:
        p = p * 4
    elif len(p) == 2:
        p = [p[0], p[1], p[0], p[1]]
    return [p[0], p[1], p[2], p[3]]


@_register("nn.conv2d", check=_conv_check)
def _conv2d(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    a = call.attrs
    kernel = list(_shape(call.args[1])[2:])
    return [
        b.one(
            "Conv",
            ins,
            kernel_shape=kernel,
            strides=[int(s) for s in a.strides],
            dilations=[int(d) for d in a.dilation],
            pads=_pads(a.padding),
            group=int(a.groups),
        )
    ]


def _pool_check(call: Call) -> Decline | bool:
    a = call.attrs
    if a.layout != "NCHW" or getattr(a, "out_layout", "") not in ("", "NCHW"):
        return decline(f"layout {a.layout}; onnxruntime pools NCHW")
    dilation = getattr(a, "dilation", (1, 1))
    if _op(call) == "nn.avg_pool2d" and any(int(d) != 1 for d in dilation):
        return decline("dilated average pooling has no ONNX operator")
    return True


@_register("nn.max_pool2d", "nn.avg_pool2d", check=_pool_check)
def _pool2d(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    a = call.attrs
    common: dict[str, Any] = {
        "kernel_shape": [int(k) for k in a.pool_size],
        "strides": [int(s) for s in a.strides],
        "pads": _pads(a.padding),
        "ceil_mode": int(bool(a.ceil_mode)),
    }
    if _op(call) == "nn.max_pool2d":
        return [b.one("MaxPool", ins, dilations=[int(d) for d in a.dilation], **common)]
    return [b.one("AveragePool", ins, count_include_pad=int(bool(a.count_include_pad)), **common)]


def _global_check(call: Call) -> Decline | bool:
    if call.attrs.layout != "NCHW":
        return decline(f"layout {call.attrs.layout}; onnxruntime pools NCHW")
    return True


@_register("nn.global_avg_pool2d", "nn.global_max_pool2d", check=_global_check)
def _global_pool(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    kind = "GlobalAveragePool" if _op(call) == "nn.global_avg_pool2d" else "GlobalMaxPool"
    return [b.one(kind, ins)]


# -- normalisation -----------------------------------------------------------------------------


@_register("nn.batch_norm", check=lambda call: _axis_is(call, 1, "batch_norm"))
def _batch_norm(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    x, gamma, beta, mean, var = ins
    a = call.attrs
    channels = _shape(call.args[1])
    if not a.scale:
        gamma = b.const(np.ones(channels, np.float32))
    if not a.center:
        beta = b.const(np.zeros(channels, np.float32))
    out = b.one("BatchNormalization", [x, gamma, beta, mean, var], epsilon=float(a.epsilon))
    # Relay's batch_norm also returns the moving mean and variance, unchanged in inference.
    return [out, b.one("Identity", [mean]), b.one("Identity", [var])]


def _axis_is(call: Call, want: int, what: str) -> Decline | bool:
    ndim = len(_shape(call.args[0]))
    if int(call.attrs.axis) % ndim != want:
        return decline(f"{what} over axis {call.attrs.axis}; onnxruntime's takes axis {want}")
    return True


@_register("nn.layer_norm")
def _layer_norm(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    x, gamma, beta = ins
    a = call.attrs
    ndim = len(_shape(call.args[0]))
    axis = int(a.axis) % ndim
    if axis != ndim - 1:
        # ONNX normalises over every axis from ``axis`` on: move Relay's axis last.
        perm = [i for i in range(ndim) if i != axis] + [axis]
        inv = [perm.index(i) for i in range(ndim)]
        moved = b.one("Transpose", [x], perm=perm)
        out = _layer_norm_last(b, call, moved, gamma, beta)
        return [b.one("Transpose", [out], perm=inv)]
    return [_layer_norm_last(b, call, x, gamma, beta)]


def _layer_norm_last(b: GraphBuilder, call: Call, x: str, gamma: str, beta: str) -> str:
    a = call.attrs
    channels = _shape(call.args[1])
    if not a.scale:
        gamma = b.const(np.ones(channels, np.float32))
    if not a.center:
        beta = b.const(np.zeros(channels, np.float32))
    return b.one("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=float(a.epsilon))


@_register("nn.softmax", "nn.log_softmax")
def _softmax(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    kind = "Softmax" if _op(call) == "nn.softmax" else "LogSoftmax"
    return [b.one(kind, ins, axis=int(call.attrs.axis))]


# -- reductions --------------------------------------------------------------------------------

_REDUCE = {
    "sum": "ReduceSum",
    "mean": "ReduceMean",
    "max": "ReduceMax",
    "min": "ReduceMin",
    "prod": "ReduceProd",
}


def _reduce_axes(call: Call) -> list[int]:
    ndim = len(_shape(call.args[0]))
    a = call.attrs
    axes = list(range(ndim)) if a.axis is None else [int(x) % ndim for x in a.axis]
    if a.exclude:
        axes = [i for i in range(ndim) if i not in axes]
    return sorted(axes)


def _reduce_check(call: Call) -> Decline | bool:
    if not _reduce_axes(call):
        return decline("a reduction over no axis")
    return True


@_register(*_REDUCE, check=_reduce_check)
def _reduce(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    axes = _reduce_axes(call)
    keep = int(bool(call.attrs.keepdims))
    kind = _REDUCE[_op(call)]
    if kind == "ReduceSum":  # opset 13 took ReduceSum's axes as an input, the rest at 18
        return [b.one(kind, [ins[0], b.ints(axes)], keepdims=keep)]
    return [b.one(kind, ins, axes=axes, keepdims=keep)]


# -- shapes and data movement -----------------------------------------------------------------


@_register(
    "reshape",
    "squeeze",
    "expand_dims",
    "nn.batch_flatten",
    "reshape_like",
    "contrib_reverse_reshape",
)
def _reshape(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    return [b.one("Reshape", [ins[0], b.ints(_shape(call))])]


@_register("transpose")
def _transpose(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    ndim = len(_shape(call.args[0]))
    axes = call.attrs.axes
    perm = list(reversed(range(ndim))) if not axes else [int(x) % ndim for x in axes]
    return [b.one("Transpose", ins, perm=perm)]


@_register("concatenate")
def _concatenate(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    return [b.one("Concat", ins, axis=int(call.attrs.axis))]


def _slice_bounds(call: Call) -> tuple[list[int], list[int], list[int], list[int]]:
    shape = _shape(call.args[0])
    a = call.attrs
    axes = list(range(len(a.begin))) if a.axes is None else [int(x) for x in a.axes]
    starts, ends, steps = [], [], []
    for k, axis in enumerate(axes):
        dim = shape[axis]
        begin = int(a.begin[k]) if a.begin[k] is not None else 0
        stride = (
            int(a.strides[k])
            if a.strides and k < len(a.strides)
            else (int(a.strides[0]) if a.strides and len(a.strides) == 1 else 1)
        )
        if a.slice_mode == "size":
            size = int(a.end[k]) if k < len(a.end) else -1
            end = dim if size < 0 else begin + size
            stride = 1
        else:
            end = int(a.end[k]) if k < len(a.end) and a.end[k] is not None else dim
        starts.append(begin)
        ends.append(end)
        steps.append(stride)
    return starts, ends, axes, steps


@_register("strided_slice")
def _strided_slice(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    starts, ends, axes, steps = _slice_bounds(call)
    out = b.one("Slice", [ins[0], b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps)])
    # Relay's bounds clamp as ONNX's do; the static output shape pins the result.
    return [b.one("Reshape", [out, b.ints(_shape(call))])]


def _pad_check(call: Call) -> Decline | bool:
    if call.attrs.pad_mode not in ("constant", "edge", "reflect"):
        return decline(f"pad_mode {call.attrs.pad_mode}")
    return True


@_register("nn.pad", check=_pad_check)
def _pad(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    widths = [(int(lo), int(hi)) for lo, hi in call.attrs.pad_width]
    pads = [lo for lo, _ in widths] + [hi for _, hi in widths]
    mode = call.attrs.pad_mode
    inputs = [ins[0], b.ints(pads)]
    if mode == "constant":
        inputs.append(
            b.one("Reshape", [ins[1], b.ints([])]) if len(ins) > 1 else b.const(np.float32(0))
        )
    return [b.one("Pad", inputs, mode=mode)]


def _split_sizes(call: Call) -> list[int]:
    shape = _shape(call.args[0])
    axis = int(call.attrs.axis) % len(shape)
    ios = call.attrs.indices_or_sections
    if isinstance(ios, int):
        return [shape[axis] // ios] * ios
    bounds = [0, *[int(i) for i in ios], shape[axis]]
    return [bounds[i + 1] - bounds[i] for i in range(len(bounds) - 1)]


@_register("split")
def _split(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    sizes = _split_sizes(call)
    return b.node("Split", [ins[0], b.ints(sizes)], len(sizes), axis=int(call.attrs.axis))


@_register("cast", check=lambda call: _cast_check(call))
def _cast(b: GraphBuilder, call: Call, ins: list[str]) -> list[str]:
    return [b.one("Cast", ins, to=onnx_dtype(str(call.attrs.dtype)))]


def _cast_check(call: Call) -> Decline | bool:
    if str(call.attrs.dtype) not in _DTYPES:
        return decline(f"cast to {call.attrs.dtype}")
    return True
