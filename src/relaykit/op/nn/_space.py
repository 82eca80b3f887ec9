"""Block rearrangements: ``depth_to_space``, ``space_to_depth``, ``space_to_batch_nd``,
``batch_to_space_nd`` (TensorFlow's and ONNX's semantics, as TVM's ``relay.nn``).

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

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["batch_to_space_nd", "depth_to_space", "space_to_batch_nd", "space_to_depth"]


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
