"""Host kernels that reduce along an axis: softmax, layer norm and the reductions."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.backends.host import nn as host_nn
from relaykit.backends.host.table import (
    Binder,
    Run,
    Scratch,
    float_same,
    register_host_kernel,
)
from relaykit.ir.attrs import Attrs
from relaykit.op.reduce import reduce_axes

__all__: list[str] = []


@register_host_kernel("nn.softmax")
def _softmax(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    x, o = args[0], outs[0]
    if x.dtype.kind != "f" or o.dtype != x.dtype:
        return None
    axis = attrs.axis % x.ndim
    native = host_nn.softmax_run(x, o, axis)
    if native is not None:
        return native
    red = scratch.take((*x.shape[:axis], 1, *x.shape[axis + 1 :]), x.dtype)

    def run() -> None:
        np.max(x, axis=axis, keepdims=True, out=red)
        np.subtract(x, red, out=o)
        np.exp(o, out=o)
        np.sum(o, axis=axis, keepdims=True, out=red)
        np.divide(o, red, out=o)

    return run


@register_host_kernel("nn.layer_norm")
def _layer_norm(
    attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run | None:
    x, gamma, beta = args
    o = outs[0]
    if not float_same(x, gamma, beta, o):
        return None
    axis = attrs.axis % x.ndim
    native = host_nn.layer_norm_run(
        x,
        gamma if attrs.scale else None,
        beta if attrs.center else None,
        o,
        axis,
        float(attrs.epsilon),
    )
    if native is not None:
        return native
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    g = gamma.reshape(shape) if attrs.scale else None
    b = beta.reshape(shape) if attrs.center else None
    stat = scratch.take((*x.shape[:axis], 1, *x.shape[axis + 1 :]), x.dtype)
    sq = scratch.take(x.shape, x.dtype)
    eps = x.dtype.type(attrs.epsilon)
    first = x[(slice(None),) * axis + (slice(0, 1),)]  # a shift: each row's first value

    def run() -> None:
        # Statistics of x - first (exact where a row's values are within a factor 2 of
        # each other): a large mean with a tiny variance keeps its digits.
        np.subtract(x, first, out=sq)
        np.mean(sq, axis=axis, keepdims=True, out=stat)
        np.subtract(sq, stat, out=o)
        np.multiply(o, o, out=sq)
        np.mean(sq, axis=axis, keepdims=True, out=stat)
        np.add(stat, eps, out=stat)
        np.sqrt(stat, out=stat)
        np.divide(o, stat, out=o)
        if g is not None:
            np.multiply(o, g, out=o)
        if b is not None:
            np.add(o, b, out=o)

    return run


_REDUCE: dict[str, Callable[..., Any]] = {
    "sum": np.sum,
    "mean": np.mean,
    "max": np.max,
    "min": np.min,
}


def _reduce(fn: Callable[..., Any]) -> Binder:
    def bind(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
        x, o = args[0], outs[0]
        if x.dtype.kind != "f" or o.dtype != x.dtype or x.size == 0:
            return None
        if x.dtype == np.float16 and fn is np.mean:
            return None  # np.mean(out=float16) accumulates in float16 and overflows
        axes = reduce_axes(attrs, x.ndim)
        return functools.partial(fn, x, axis=axes, keepdims=bool(attrs.keepdims), out=o)

    return bind


for _name, _red in _REDUCE.items():
    register_host_kernel(_name)(_reduce(_red))
