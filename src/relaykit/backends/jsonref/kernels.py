"""The ``jsonref`` runtime's own kernels (NumPy), one factory per JSON node name.

A factory gets the node (attributes as JSON values), its input arrays and its
output arrays, allocates whatever private buffers it needs (a padded copy of
the input with its border already filled, im2col columns) once, and returns a
callable that writes the outputs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.runtime.json_runtime import JSONNode

__all__ = ["KERNELS"]

Run = Callable[[], Any]
Factory = Callable[[JSONNode, Sequence[np.ndarray], Sequence[np.ndarray]], Run]
KERNELS: dict[str, Factory] = {}


def _kernel(*names: str) -> Callable[[Factory], Factory]:
    def register(fn: Factory) -> Factory:
        for n in names:
            KERNELS[n] = fn
        return fn

    return register


def _pair(v: Any) -> tuple[int, int]:
    vals = [int(v)] if isinstance(v, int) else [int(x) for x in v]
    return (vals[0], vals[0]) if len(vals) == 1 else (vals[0], vals[1])


def _pad4(v: Any) -> tuple[int, int, int, int]:
    vals = [int(v)] if isinstance(v, int) else [int(x) for x in v]
    if len(vals) == 1:
        vals = vals * 4
    elif len(vals) == 2:
        vals = [vals[0], vals[1], vals[0], vals[1]]
    return vals[0], vals[1], vals[2], vals[3]


def _sequence(steps: list[Run]) -> Run:
    if len(steps) == 1:
        return steps[0]

    def run() -> None:
        for s in steps:
            s()

    return run


def _op_attrs(node: JSONNode, op: str) -> dict[str, Any]:
    """Attributes of operator ``op``: the node's own, or those of ``op`` in a composite body."""
    for entry in node.body:
        if entry.get("op") == op:
            return dict(entry.get("attrs", {}))
    return dict(node.attrs)


def _padded(
    x: np.ndarray, pads: tuple[int, int, int, int], fill: float
) -> tuple[np.ndarray, Run | None]:
    """A private padded buffer (border filled once) and the copy of ``x`` into it."""
    pt, pl, pb, pr = pads
    if not any(pads):
        return x, None
    n, c, h, w = x.shape
    xp = np.full((n, c, h + pt + pb, w + pl + pr), fill, dtype=x.dtype)
    return xp, functools.partial(np.copyto, xp[:, :, pt : pt + h, pl : pl + w], x)


# -- elementwise -----------------------------------------------------------------------------

_UFUNCS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}


@_kernel("add", "subtract", "multiply")
def _binary(node: JSONNode, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> Run:
    return functools.partial(_UFUNCS[node.name], ins[0], ins[1], out=outs[0])


@_kernel("nn.relu")
def _relu(node: JSONNode, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> Run:
    return functools.partial(np.maximum, ins[0], np.float32(0), out=outs[0])


@_kernel("nn.bias_add")
def _bias_add(node: JSONNode, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> Run:
    x, b = ins
    shape = [1] * x.ndim
    shape[int(node.attrs["axis"]) % x.ndim] = b.shape[0]
    return functools.partial(np.add, x, b.reshape(shape), out=outs[0])


@_kernel("nn.batch_flatten")
def _batch_flatten(node: JSONNode, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> Run:
    return functools.partial(np.copyto, outs[0], ins[0].reshape(outs[0].shape))


@_kernel("nn.softmax")
def _softmax(node: JSONNode, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> Run:
    x, o = ins[0], outs[0]
    axis = int(node.attrs["axis"])

    def run() -> None:
        np.subtract(x, x.max(axis=axis, keepdims=True), out=o)
        np.exp(o, out=o)
        np.divide(o, o.sum(axis=axis, keepdims=True), out=o)

    return run


# -- dense and convolution -------------------------------------------------------------------------


def _epilogue(node: JSONNode, bias: np.ndarray | None, out: np.ndarray, axis: int) -> list[Run]:
    steps: list[Run] = []
    if bias is not None:
        shape = [1] * out.ndim
        shape[axis % out.ndim] = bias.shape[0]
        steps.append(functools.partial(np.add, out, bias.reshape(shape), out=out))
    if node.name.endswith("_relu"):
        steps.append(functools.partial(np.maximum, out, np.float32(0), out=out))
    return steps


@_kernel("nn.dense", "jsonref.dense_bias", "jsonref.dense_bias_relu")
def _dense(node: JSONNode, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> Run:
    x, w, o = ins[0], ins[1], outs[0]
    bias = ins[2] if len(ins) > 2 else None
    steps: list[Run] = [functools.partial(np.matmul, x, w.T, out=o)]
    return _sequence(steps + _epilogue(node, bias, o, -1))


@_kernel("nn.conv2d", "jsonref.conv2d_bias", "jsonref.conv2d_bias_relu")
def _conv2d(node: JSONNode, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> Run:
    """NCHW/OIHW convolution: taps of a padded copy into im2col columns, one GEMM per
    image and group, bias and ReLU in place."""
    a = _op_attrs(node, "nn.conv2d")
    x, w, o = ins[0], ins[1], outs[0]
    bias = ins[2] if len(ins) > 2 else None
    n, c, _, _ = x.shape
    oc, cg, kh, kw = w.shape
    g = int(a.get("groups", 1))
    (sh, sw), (dh, dw) = _pair(a.get("strides", 1)), _pair(a.get("dilation", 1))
    oh, ow = o.shape[2], o.shape[3]
    xp, copy_in = _padded(x, _pad4(a.get("padding", 0)), 0.0)
    cols = np.empty((n, c, kh, kw, oh, ow), x.dtype)
    steps: list[Run] = [copy_in] if copy_in is not None else []
    for i in range(kh):
        for j in range(kw):
            src = xp[
                :,
                :,
                i * dh : i * dh + (oh - 1) * sh + 1 : sh,
                j * dw : j * dw + (ow - 1) * sw + 1 : sw,
            ]
            steps.append(functools.partial(np.copyto, cols[:, :, i, j], src))
    wmat = np.ascontiguousarray(w).reshape(g, oc // g, cg * kh * kw)
    cols4 = cols.reshape(n, g, cg * kh * kw, oh * ow)
    out4 = o.reshape(n, g, oc // g, oh * ow)
    for b in range(n):
        for k in range(g):
            steps.append(functools.partial(np.matmul, wmat[k], cols4[b, k], out=out4[b, k]))
    return _sequence(steps + _epilogue(node, bias, o, 1))


# -- pooling ------------------------------------------------------------------------------------


@_kernel("nn.max_pool2d")
def _max_pool2d(node: JSONNode, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> Run:
    a = node.attrs
    x, o = ins[0], outs[0]
    kh, kw = _pair(a["pool_size"])
    (sh, sw), (dh, dw) = _pair(a.get("strides", 1)), _pair(a.get("dilation", 1))
    pt, pl, pb, pr = _pad4(a.get("padding", 0))
    h, w = x.shape[2], x.shape[3]
    oh, ow = o.shape[2], o.shape[3]
    eh = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - (h + pt + pb))
    ew = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - (w + pl + pr))
    xp, copy_in = _padded(x, (pt, pl, pb + eh, pr + ew), -np.inf)
    taps = [
        xp[:, :, i * dh : i * dh + (oh - 1) * sh + 1 : sh, j * dw : j * dw + (ow - 1) * sw + 1 : sw]
        for i in range(kh)
        for j in range(kw)
    ]
    steps: list[Run] = [copy_in] if copy_in is not None else []
    steps.append(functools.partial(np.copyto, o, taps[0]))
    steps.extend(functools.partial(np.maximum, o, t, out=o) for t in taps[1:])
    return _sequence(steps)


@_kernel("nn.global_avg_pool2d")
def _global_avg_pool2d(
    node: JSONNode, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]
) -> Run:
    return functools.partial(np.mean, ins[0], axis=(2, 3), keepdims=True, out=outs[0])
