"""Operators that only move data: ``nn.pad``, ``nn.batch_flatten`` and the block
rearrangements ``nn.depth_to_space``, ``nn.space_to_depth``, ``nn.space_to_batch_nd``,
``nn.batch_to_space_nd`` (TensorFlow's and ONNX's semantics, as TVM's ``relay.nn``): each
one's schema, type relation, reference kernel and constructor.

``pad(data, pad_width, pad_value, pad_mode)`` pads each axis by ``pad_width[axis] =
(before, after)`` with a scalar, the edge or a reflection; run-time widths make a
``dyn.nn.pad``. ``batch_flatten`` flattens all axes but the first.

``depth_to_space(data, b)`` moves ``b * b`` channel blocks into ``b x b`` spatial
tiles (``mode="DCR"``: depth-column-row, the channel index is ``(by, bx, c)``;
``"CRD"``, which TVM spells ``"CDR"``: ``(c, by, bx)``); ``space_to_depth`` is the
inverse of ``DCR``. Both take ``NCHW`` or ``NHWC``.

``space_to_batch_nd(data, block_shape, paddings)`` zero-pads (``pad_value``) the
``M`` spatial axes after the batch axis, cuts them into ``block_shape`` tiles and
moves the tile offsets into the batch axis (offset-major);
``batch_to_space_nd(data, block_shape, crops)`` is its inverse, then crops.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 8, 2, 2))
>>> depth_to_space(x, 2).attrs.mode
'DCR'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, const
from relaykit.ir.types import TensorType, Type
from relaykit.op._numeric import as_out
from relaykit.op._relations import static, static_value, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call, no_default

__all__ = [
    "pad",
    "batch_flatten",
    "batch_to_space_nd",
    "depth_to_space",
    "space_to_batch_nd",
    "space_to_depth",
]


# -- nn.pad ---------------------------------------------------------------------------------------


def pad_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    value = tensor_arg(arg_types, 1, "pad_value")
    if value.shape not in ((), (1,)):
        raise TypeRelError(f"pad_value must be a scalar (or hold one value), got {value}")
    width = attrs.pad_width
    if width is None or len(width) != data.ndim:
        raise TypeRelError(
            f"pad_width must have one (before, after) pair per axis of {data}, got {width!r}"
        )
    if attrs.pad_mode not in ("constant", "edge", "reflect"):
        raise TypeRelError(
            f"pad_mode must be 'constant', 'edge' or 'reflect', got {attrs.pad_mode!r}"
        )
    shape = []
    for axis, (dim, pw) in enumerate(zip(data.shape, width, strict=True)):
        if len(pw) != 2 or any(not isinstance(p, int) for p in pw):
            raise TypeRelError(f"pad_width[{axis}] must be two integers, got {pw!r}")
        if attrs.pad_mode == "reflect" and static(dim) and max(pw) >= dim:
            raise TypeRelError(
                f"reflect padding {pw} on axis {axis} must be smaller than its size {dim}"
            )
        if attrs.pad_mode == "edge" and max(pw) > 0 and dim == 0:
            raise TypeRelError(f"cannot edge-pad the empty axis {axis}")
        out = dim + pw[0] + pw[1]
        if static(out) and out < 0:  # negative widths crop (as in TVM), at most the whole axis
            raise TypeRelError(f"pad_width[{axis}] = {pw} crops more than the {dim} of axis {axis}")
        shape.append(out)
    return TensorType(shape, data.dtype)


def pad_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    """Negative widths crop first; the positive ones then pad."""
    data, value = inputs
    width = [tuple(int(v) for v in p) for p in attrs.pad_width]
    crop = tuple(
        slice(max(-b, 0), n - max(-a, 0)) for (b, a), n in zip(width, data.shape, strict=True)
    )
    data = data[crop]
    width = [(max(b, 0), max(a, 0)) for b, a in width]
    if attrs.pad_mode == "constant":
        fill = np.asarray(value).reshape(()).astype(data.dtype)
        out = np.pad(data, width, mode="constant", constant_values=fill)
    else:
        out = np.pad(data, width, mode=attrs.pad_mode)
    return as_out(out, data.dtype)


define_op(
    "nn.pad",
    num_inputs=2,
    attrs={"pad_width": no_default(), "pad_mode": "constant"},
    attrs_type_key="relay.attrs.PadAttrs",
    type_rel=pad_rel,
    compute=pad_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Pad with a scalar (input 1), the edge, or a reflection.",
)


def pad(data: Expr, pad_width: Any, pad_value: Any = 0, pad_mode: str = "constant") -> Call:
    """Pad each axis by ``pad_width[axis] = (before, after)``.

    ``pad_value`` is a scalar expression (a number becomes a constant), used
    when ``pad_mode="constant"``; ``"edge"`` and ``"reflect"`` ignore it. A negative
    width crops that many elements from that side (as in TVM).

    >>> from relaykit import relay
    >>> pad(relay.var("x", shape=(2, 2)), ((1, 1), (0, 2))).attrs.pad_width
    [[1, 1], [0, 2]]
    """
    if not isinstance(pad_value, Expr):
        pad_value = const(pad_value)
    pad_width = static_value(pad_width)
    if isinstance(pad_width, Expr):  # run-time widths: dyn.nn.pad
        return make_call("dyn.nn.pad", [data, pad_width, pad_value], pad_mode=pad_mode)
    width = tuple(tuple(int(p) for p in pw) for pw in pad_width)
    return make_call("nn.pad", [data, pad_value], pad_width=width, pad_mode=pad_mode)


# -- nn.batch_flatten ----------------------------------------------------------------------------


def batch_flatten_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.ndim < 1:
        raise TypeRelError(f"batch_flatten needs at least a batch dimension, got {data}")
    return TensorType((data.shape[0], math.prod(data.shape[1:])), data.dtype)


define_op(
    "nn.batch_flatten",
    num_inputs=1,
    type_rel=batch_flatten_rel,
    compute=lambda ins, attrs: ins[0].reshape(ins[0].shape[0], int(np.prod(ins[0].shape[1:]))),
    pattern=OpPattern.INJECTIVE,
    doc="Flatten all but the first axis.",
)


def batch_flatten(data: Expr) -> Call:
    """Flatten all axes but the first: (N, ...) -> (N, prod(...))."""
    return make_call("nn.batch_flatten", [data])


# -- nn.depth_to_space, nn.space_to_depth ----------------------------------------------------------


def _nchw(shape: Sequence[int], layout: str, what: str) -> tuple[int, int, int, int]:
    if len(shape) != 4 or layout not in ("NCHW", "NHWC"):
        raise TypeRelError(f"{what} needs 4-D NCHW or NHWC data, got {tuple(shape)} {layout}")
    if layout == "NCHW":
        return shape[0], shape[1], shape[2], shape[3]
    return shape[0], shape[3], shape[1], shape[2]


def _from_nchw(n: int, c: int, h: int, w: int, layout: str) -> tuple[int, ...]:
    return (n, c, h, w) if layout == "NCHW" else (n, h, w, c)


def _d2s_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n, c, h, w = _nchw(data.shape, attrs.layout, "depth_to_space")
    b = int(attrs.block_size)
    if b <= 0 or c % (b * b):
        raise TypeRelError(f"depth_to_space: {c} channels do not split into {b}x{b} blocks")
    if attrs.mode not in ("DCR", "CRD", "CDR"):
        raise TypeRelError(f"depth_to_space mode must be DCR or CRD (CDR), got {attrs.mode!r}")
    return TensorType(_from_nchw(n, c // (b * b), h * b, w * b, attrs.layout), data.dtype)


def _d2s_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0] if attrs.layout == "NCHW" else inputs[0].transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    b = int(attrs.block_size)
    if attrs.mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    y = y.reshape(n, c // (b * b), h * b, w * b)
    return np.ascontiguousarray(y if attrs.layout == "NCHW" else y.transpose(0, 2, 3, 1))


def _s2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n, c, h, w = _nchw(data.shape, attrs.layout, "space_to_depth")
    b = int(attrs.block_size)
    if b <= 0 or h % b or w % b:
        raise TypeRelError(f"space_to_depth: {h}x{w} does not split into {b}x{b} blocks")
    return TensorType(_from_nchw(n, c * b * b, h // b, w // b, attrs.layout), data.dtype)


def _s2d_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0] if attrs.layout == "NCHW" else inputs[0].transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    b = int(attrs.block_size)
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    y = y.reshape(n, c * b * b, h // b, w // b)
    return np.ascontiguousarray(y if attrs.layout == "NCHW" else y.transpose(0, 2, 3, 1))


_SUBPIXEL = {"block_size": 1, "layout": "NCHW", "mode": "DCR"}
define_op(
    "nn.depth_to_space",
    num_inputs=1,
    attrs=_SUBPIXEL,
    attrs_type_key="relay.attrs.SubPixelAttrs",
    type_rel=_d2s_rel,
    compute=_d2s_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Move channel blocks into spatial tiles.",
)
define_op(
    "nn.space_to_depth",
    num_inputs=1,
    attrs=_SUBPIXEL,
    attrs_type_key="relay.attrs.SubPixelAttrs",
    type_rel=_s2d_rel,
    compute=_s2d_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Move spatial tiles into channel blocks.",
)


def depth_to_space(data: Expr, block_size: int, layout: str = "NCHW", mode: str = "DCR") -> Call:
    """Rearrange ``block_size**2`` channel blocks into spatial tiles (see the module)."""
    return make_call(
        "nn.depth_to_space", [data], block_size=int(block_size), layout=layout, mode=mode
    )


def space_to_depth(data: Expr, block_size: int, layout: str = "NCHW") -> Call:
    """Rearrange ``block_size x block_size`` spatial tiles into channels (inverse of DCR)."""
    return make_call("nn.space_to_depth", [data], block_size=int(block_size), layout=layout)


# -- space_to_batch_nd / batch_to_space_nd --------------------------------------------------------


def _blocks(attrs: Attrs, ndim: int, pairs: Any, what: str) -> tuple[tuple[int, ...], Any]:
    block = tuple(int(b) for b in attrs.block_shape)
    m = len(block)
    if m < 1 or ndim < m + 1 or any(b <= 0 for b in block):
        raise TypeRelError(f"{what}: block_shape {block} does not fit a rank-{ndim} tensor")
    if len(pairs) != m or any(len(p) != 2 for p in pairs):
        raise TypeRelError(f"{what} needs {m} (before, after) pairs, got {pairs}")
    return block, tuple((int(p[0]), int(p[1])) for p in pairs)


def _s2b_shape(shape: Sequence[int], attrs: Attrs) -> tuple[int, ...]:
    block, pads = _blocks(attrs, len(shape), attrs.paddings, "space_to_batch_nd paddings")
    out = [shape[0] * int(np.prod(block))]
    for i, (b, (lo, hi)) in enumerate(zip(block, pads, strict=True)):
        size = shape[i + 1] + lo + hi
        if size % b:
            raise TypeRelError(
                f"space_to_batch_nd: padded axis {i + 1} ({size}) is not a multiple of {b}"
            )
        out.append(size // b)
    return (*out, *shape[len(block) + 1 :])


def _s2b_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(_s2b_shape(data.shape, attrs), data.dtype)


def _s2b_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    block, pads = _blocks(attrs, x.ndim, attrs.paddings, "space_to_batch_nd paddings")
    m, rest = len(block), x.shape[len(block) + 1 :]
    widths = ((0, 0), *pads, *((0, 0),) * len(rest))
    x = np.pad(x, widths, constant_values=np.asarray(attrs.pad_value).astype(x.dtype))
    split = [x.shape[0]]
    for i, b in enumerate(block):
        split += [x.shape[i + 1] // b, b]
    y = x.reshape(*split, *rest)
    # (N, s1, b1, ..., sM, bM, rest) -> (b1..bM, N, s1..sM, rest)
    perm = [2 * i + 2 for i in range(m)] + [0] + [2 * i + 1 for i in range(m)]
    perm += list(range(2 * m + 1, y.ndim))
    return np.ascontiguousarray(y.transpose(perm).reshape(_s2b_shape(inputs[0].shape, attrs)))


def _b2s_shape(shape: Sequence[int], attrs: Attrs) -> tuple[int, ...]:
    block, crops = _blocks(attrs, len(shape), attrs.crops, "batch_to_space_nd crops")
    total = int(np.prod(block))
    if shape[0] % total:
        raise TypeRelError(f"batch_to_space_nd: batch {shape[0]} is not a multiple of {total}")
    out = [shape[0] // total]
    for i, (b, (lo, hi)) in enumerate(zip(block, crops, strict=True)):
        size = shape[i + 1] * b - lo - hi
        if size < 0:
            raise TypeRelError(f"batch_to_space_nd crops more than axis {i + 1} holds")
        out.append(size)
    return (*out, *shape[len(block) + 1 :])


def _b2s_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(_b2s_shape(data.shape, attrs), data.dtype)


def _b2s_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    block, crops = _blocks(attrs, x.ndim, attrs.crops, "batch_to_space_nd crops")
    m, rest = len(block), x.shape[len(block) + 1 :]
    batch = x.shape[0] // int(np.prod(block))
    y = x.reshape(*block, batch, *x.shape[1:])
    # (b1..bM, N, s1..sM, rest) -> (N, s1, b1, ..., sM, bM, rest)
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, y.ndim))
    full = [batch] + [x.shape[i + 1] * b for i, b in enumerate(block)]
    y = y.transpose(perm).reshape(*full, *rest)
    index = (slice(None), *tuple(slice(lo, full[i + 1] - hi) for i, (lo, hi) in enumerate(crops)))
    return np.ascontiguousarray(y[index])


define_op(
    "nn.space_to_batch_nd",
    num_inputs=1,
    attrs={"block_shape": (), "paddings": (), "pad_value": 0.0},
    attrs_type_key="relay.attrs.SpaceToBatchNDAttrs",
    type_rel=_s2b_rel,
    compute=_s2b_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Pad and move spatial tiles into the batch axis.",
)
define_op(
    "nn.batch_to_space_nd",
    num_inputs=1,
    attrs={"block_shape": (), "crops": ()},
    attrs_type_key="relay.attrs.BatchToSpaceNDAttrs",
    type_rel=_b2s_rel,
    compute=_b2s_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Move batch tiles back into the spatial axes and crop.",
)


def _pairs(value: Any) -> tuple[tuple[int, int], ...]:
    return tuple((int(p[0]), int(p[1])) for p in value)


def space_to_batch_nd(
    data: Expr, block_shape: Sequence[int], paddings: Sequence[Sequence[int]], pad_value: float = 0
) -> Call:
    """Pad the spatial axes by ``paddings`` and move ``block_shape`` tiles into the batch."""
    return make_call(
        "nn.space_to_batch_nd",
        [data],
        block_shape=tuple(int(b) for b in block_shape),
        paddings=_pairs(paddings),
        pad_value=float(pad_value),
    )


def batch_to_space_nd(
    data: Expr, block_shape: Sequence[int], crops: Sequence[Sequence[int]]
) -> Call:
    """Move batch tiles back into the spatial axes, then crop by ``crops``."""
    return make_call(
        "nn.batch_to_space_nd",
        [data],
        block_shape=tuple(int(b) for b in block_shape),
        crops=_pairs(crops),
    )
