"""Normalisation: ``nn.batch_norm``, ``nn.layer_norm``, ``nn.instance_norm``,
``nn.group_norm`` and ``nn.lrn`` (local response normalisation): each one's schema,
type relation, reference kernel, input solver and constructor.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 16, 4, 4))
>>> batch_norm(x, *[relay.var(n, shape=(16,)) for n in "abcd"])[0].index
0
>>> lrn(relay.var("x", shape=(1, 4, 2, 2)), size=3).attrs.size
3
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, TupleWrapper
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op._numeric import as_out
from relaykit.op._relations import FLOAT_DTYPES, normalize_axis, tensor_arg
from relaykit.op.define import (
    OpPattern,
    TypeRelError,
    default_registry,
    define_op,
    make_call,
    no_default,
)

from .operands import channel_vectors_solve, check_vector

__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm", "lrn"]


_NORM_ATTRS = {"axis": 1, "epsilon": 1e-5, "center": True, "scale": True}


def _along(v: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = v.shape[0]
    return v.reshape(shape)


# -- nn.batch_norm -------------------------------------------------------------------------------


def batch_norm_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"data must be a floating-point tensor, got {data}")
    axis = normalize_axis(attrs.axis, data.ndim, "batch_norm axis")
    c = data.shape[axis]
    for i, name in enumerate(("gamma", "beta", "moving_mean", "moving_var"), start=1):
        check_vector(tensor_arg(arg_types, i, name), c, data.dtype, f"{name} (axis {axis})")
    vec = TensorType((c,), data.dtype)
    return TupleType([data, vec, vec])


def batch_norm_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    data, gamma, beta, mean, var = inputs
    axis = attrs.axis % data.ndim
    scale = 1.0 / np.sqrt(var + np.asarray(attrs.epsilon, data.dtype))
    if attrs.scale:
        scale = scale * gamma
    out = (data - _along(mean, axis, data.ndim)) * _along(scale, axis, data.ndim)
    if attrs.center:
        out = out + _along(beta, axis, data.ndim)
    return as_out(out, data.dtype), mean.copy(), var.copy()


define_op(
    "nn.batch_norm",
    num_inputs=5,
    num_outputs=3,
    attrs=_NORM_ATTRS,
    attrs_type_key="relay.attrs.BatchNormAttrs",
    type_rel=batch_norm_rel,
    compute=batch_norm_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Inference batch norm; returns (out, moving_mean, moving_var).",
)

default_registry.set_attr("nn.batch_norm", "FTypeSolveInputs", channel_vectors_solve)


def batch_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    moving_mean: Expr,
    moving_var: Expr,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> TupleWrapper:
    """Batch normalisation (inference form): a 3-tuple (out, moving_mean, moving_var).

    Use ``batch_norm(...)[0]`` for the normalised tensor.
    """
    call = make_call(
        "nn.batch_norm",
        [data, gamma, beta, moving_mean, moving_var],
        axis=int(axis),
        epsilon=float(epsilon),
        center=bool(center),
        scale=bool(scale),
    )
    return TupleWrapper(call, 3)


# -- nn.layer_norm -------------------------------------------------------------------------------


def layer_norm_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"data must be a floating-point tensor, got {data}")
    axis = normalize_axis(attrs.axis, data.ndim, "layer_norm axis")
    c = data.shape[axis]
    for i, name in enumerate(("gamma", "beta"), start=1):
        check_vector(tensor_arg(arg_types, i, name), c, data.dtype, f"{name} (axis {axis})")
    return data


def layer_norm_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, gamma, beta = inputs
    axis = attrs.axis % data.ndim
    mean = data.mean(axis=axis, keepdims=True)
    var = ((data - mean) ** 2).mean(axis=axis, keepdims=True)
    out = (data - mean) / np.sqrt(var + np.asarray(attrs.epsilon, data.dtype))
    if attrs.scale:
        out = out * _along(gamma, axis, data.ndim)
    if attrs.center:
        out = out + _along(beta, axis, data.ndim)
    return as_out(out, data.dtype)


define_op(
    "nn.layer_norm",
    num_inputs=3,
    attrs={**_NORM_ATTRS, "axis": -1},
    attrs_type_key="relay.attrs.LayerNormAttrs",
    type_rel=layer_norm_rel,
    compute=layer_norm_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Layer normalisation along an axis.",
)

default_registry.set_attr("nn.layer_norm", "FTypeSolveInputs", channel_vectors_solve)


def layer_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    axis: int = -1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Layer normalisation along ``axis``; ``gamma``/``beta`` have that axis' size."""
    return make_call(
        "nn.layer_norm",
        [data, gamma, beta],
        axis=int(axis),
        epsilon=float(epsilon),
        center=bool(center),
        scale=bool(scale),
    )


# -- nn.instance_norm, nn.group_norm --------------------------------------------------------------


def _norm_vectors_rel(op: str) -> Any:
    """Data of a float dtype and ``gamma``/``beta`` vectors along ``attrs.axis``."""

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        if data.dtype not in FLOAT_DTYPES:
            raise TypeRelError(f"data must be a floating-point tensor, got {data}")
        if data.ndim < 2:
            raise TypeRelError(f"{op} needs a batch and a channel axis, got {data}")
        axis = normalize_axis(attrs.axis, data.ndim, f"{op} axis")
        c = data.shape[axis]
        if op == "group_norm":
            groups = attrs.num_groups
            if not isinstance(groups, int) or groups < 1 or (isinstance(c, int) and c % groups):
                raise TypeRelError(
                    f"num_groups={groups!r} must be a positive divisor of the {c} channels"
                )
        for i, name in enumerate(("gamma", "beta"), start=1):
            check_vector(tensor_arg(arg_types, i, name), c, data.dtype, f"{name} (axis {axis})")
        return data

    return rel


def _normalize(x: np.ndarray, axes: tuple[int, ...], eps: float) -> np.ndarray:
    """``(x - mean) / sqrt(var + eps)`` over ``axes``, in float64."""
    x = x.astype(np.float64)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def _affine(out: np.ndarray, data: np.ndarray, gamma: Any, beta: Any, attrs: Attrs, axis: int):
    if attrs.scale:
        out = out * _along(np.asarray(gamma, np.float64), axis, data.ndim)
    if attrs.center:
        out = out + _along(np.asarray(beta, np.float64), axis, data.ndim)
    return as_out(out, data.dtype)


def instance_norm_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, gamma, beta = inputs
    axis = attrs.axis % data.ndim
    axes = tuple(i for i in range(1, data.ndim) if i != axis)
    return _affine(_normalize(data, axes, attrs.epsilon), data, gamma, beta, attrs, axis)


def group_norm_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, gamma, beta = inputs
    axis = attrs.axis % data.ndim
    g = attrs.num_groups
    x = np.moveaxis(data, axis, 1)
    shape = x.shape
    x = x.reshape(shape[0], g, shape[1] // g, *shape[2:])
    out = _normalize(x, tuple(range(2, x.ndim)), attrs.epsilon).reshape(shape)
    return _affine(np.moveaxis(out, 1, axis), data, gamma, beta, attrs, axis)


define_op(
    "nn.instance_norm",
    num_inputs=3,
    attrs=_NORM_ATTRS,
    attrs_type_key="relay.attrs.InstanceNormAttrs",
    type_rel=_norm_vectors_rel("instance_norm"),
    compute=instance_norm_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Instance normalisation: per sample and channel, over the other axes.",
)
default_registry.set_attr("nn.instance_norm", "FTypeSolveInputs", channel_vectors_solve)

define_op(
    "nn.group_norm",
    num_inputs=3,
    attrs={"num_groups": no_default(), **_NORM_ATTRS},
    attrs_type_key="relay.attrs.GroupNormAttrs",
    type_rel=_norm_vectors_rel("group_norm"),
    compute=group_norm_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Group normalisation: per sample and group of channels, over the group and the rest.",
)
default_registry.set_attr("nn.group_norm", "FTypeSolveInputs", channel_vectors_solve)


def instance_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Instance normalisation (TVM's ``relay.nn.instance_norm``): each sample's channel
    (``axis``) is normalised over the remaining axes, then scaled by ``gamma`` and
    shifted by ``beta``.

    >>> from relaykit import relay
    >>> x = relay.var("x", shape=(2, 3, 4))
    >>> instance_norm(x, relay.var("g", shape=(3,)), relay.var("b", shape=(3,))).op.name
    'nn.instance_norm'
    """
    return make_call(
        "nn.instance_norm",
        [data, gamma, beta],
        axis=int(axis),
        epsilon=float(epsilon),
        center=bool(center),
        scale=bool(scale),
    )


def group_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    num_groups: int,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Group normalisation (TVM's ``relay.nn.group_norm``): the channels (``axis``) of
    each sample split into ``num_groups`` groups, each normalised over its channels and
    the remaining axes, then scaled by ``gamma`` and shifted by ``beta`` per channel.

    >>> from relaykit import relay
    >>> x = relay.var("x", shape=(2, 4, 3))
    >>> g, b = relay.var("g", shape=(4,)), relay.var("b", shape=(4,))
    >>> group_norm(x, g, b, num_groups=2).attrs.num_groups
    2
    """
    return make_call(
        "nn.group_norm",
        [data, gamma, beta],
        num_groups=int(num_groups),
        axis=int(axis),
        epsilon=float(epsilon),
        center=bool(center),
        scale=bool(scale),
    )


# -- nn.l2_normalize ------------------------------------------------------------------------------


def _l2_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None or len(axis) == 0:
        return tuple(range(ndim))
    return tuple(normalize_axis(a, ndim, "l2_normalize axis") for a in axis)


def _l2_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"l2_normalize needs a floating-point tensor, got {data}")
    _l2_axes(attrs.axis, data.ndim)
    return data


def _l2_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    sq = np.sum(x.astype(np.float64) ** 2, axis=_l2_axes(attrs.axis, x.ndim), keepdims=True)
    return as_out(x / np.sqrt(np.maximum(sq, float(attrs.eps))), x.dtype)


define_op(
    "nn.l2_normalize",
    num_inputs=1,
    attrs={"eps": no_default(0.0), "axis": None},
    attrs_type_key="relay.attrs.L2NormalizeAttrs",
    type_rel=_l2_rel,
    compute=_l2_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="data / sqrt(max(sum(data**2 over axis), eps)).",
)


def l2_normalize(data: Expr, eps: float, axis: Any = None) -> Call:
    """``data`` divided by its L2 norm over ``axis`` (all axes when None), at least
    ``sqrt(eps)``.

    >>> from relaykit import relay
    >>> l2_normalize(relay.var("x", shape=(2, 3)), 1e-12, axis=[1]).attrs.axis
    [1]
    """
    ax = None if axis is None else tuple(int(a) for a in axis)
    return make_call("nn.l2_normalize", [data], eps=float(eps), axis=ax)


# -- nn.lrn ---------------------------------------------------------------------------------------


def _lrn_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"lrn needs a floating-point tensor, got {data}")
    normalize_axis(attrs.axis, data.ndim, "lrn axis")
    if int(attrs.size) < 1:
        raise TypeRelError(f"lrn size must be positive, got {attrs.size}")
    return data


def _lrn_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    axis = attrs.axis % x.ndim
    size = int(attrs.size)
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    acc = x.astype(np.float64) ** 2
    pad = [(0, 0)] * x.ndim
    pad[axis] = (lo, hi)
    padded = np.pad(acc, pad)
    csum = np.cumsum(padded, axis=axis)
    csum = np.concatenate([np.zeros_like(np.take(csum, [0], axis=axis)), csum], axis=axis)
    n = x.shape[axis]
    window = np.take(csum, np.arange(size, size + n), axis=axis) - np.take(
        csum, np.arange(n), axis=axis
    )
    out = x / (attrs.bias + attrs.alpha / size * window) ** attrs.beta
    return as_out(out, x.dtype)


define_op(
    "nn.lrn",
    num_inputs=1,
    attrs={"size": 5, "axis": 1, "bias": 2.0, "alpha": 1e-5, "beta": 0.75},
    attrs_type_key="relay.attrs.LRNAttrs",
    type_rel=_lrn_rel,
    compute=_lrn_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Local response normalisation across channels.",
)


def lrn(
    data: Expr,
    size: int = 5,
    axis: int = 1,
    bias: float = 2.0,
    alpha: float = 0.00001,
    beta: float = 0.75,
) -> Call:
    """``data / (bias + alpha / size * sum(data**2 over size neighbours on axis)) ** beta``."""
    return make_call(
        "nn.lrn",
        [data],
        size=int(size),
        axis=int(axis),
        bias=float(bias),
        alpha=float(alpha),
        beta=float(beta),
    )
