"""``layout_transform``: move a tensor between data layouts, TVM's ``relay.layout_transform``.

A layout names each axis: an upper-case letter is a whole ("primal") axis, a
number and a lower-case letter (``4c``) a block of that many elements split off the
primal axis of the same letter. ``NCHW -> NHWC`` is a transpose; ``NCHW -> NCHW4c``
splits the channels into blocks of 4 (the channel count must divide); ``NCHW4c ->
NCHW`` joins them back.

>>> import numpy as np
>>> x = np.arange(2 * 8 * 3 * 3, dtype="float32").reshape(2, 8, 3, 3)
>>> y = transform_layout(x, "NCHW", "NCHW4c")
>>> y.shape, bool((transform_layout(y, "NCHW4c", "NHWC") == x.transpose(0, 2, 3, 1)).all())
((2, 2, 3, 3, 4), True)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type

from ._relations import static, tensor_arg
from .define import OpPattern, TypeRelError, define_op, make_call

__all__ = [
    "layout_transform",
    "transform_layout",
    "parse_layout",
    "primal_sizes",
    "blocked_shape",
]

_AXIS = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout: str) -> list[tuple[str, int]]:
    """``[(letter, block)]``: block 0 for a primal (upper-case) axis, else the factor."""
    axes: list[tuple[str, int]] = []
    pos = 0
    for m in _AXIS.finditer(layout):
        if m.start() != pos:
            break
        pos = m.end()
        factor, letter = m.group(1), m.group(2)
        if letter.isupper() != (factor == ""):
            raise ArgumentError(
                f"layout {layout!r}: {m.group(0)!r} must be an upper-case axis or a "
                "number followed by a lower-case (blocked) axis"
            )
        axes.append((letter, int(factor) if factor else 0))
    if pos != len(layout) or not layout:
        raise ArgumentError(f"layout {layout!r} is not a sequence of axes such as NCHW or NCHW4c")
    primal = [a for a, f in axes if not f]
    if len(set(primal)) != len(primal):
        raise ArgumentError(f"layout {layout!r} names an axis twice")
    if any(a.upper() not in primal for a, f in axes if f):
        raise ArgumentError(f"layout {layout!r} blocks an axis it does not have")
    return axes


def _primal_sizes(shape: Sequence[Any], layout: str) -> dict[str, Any]:
    axes = parse_layout(layout)
    if len(axes) != len(shape):
        raise TypeRelError(f"layout {layout} has {len(axes)} axes but the tensor has {len(shape)}")
    sizes: dict[str, Any] = {}
    for (letter, factor), dim in zip(axes, shape, strict=True):
        if factor and static(dim) and dim != factor:
            raise TypeRelError(f"axis {factor}{letter} of layout {layout} has size {dim}")
        key = letter.upper()
        sizes[key] = sizes.get(key, 1) * dim
    return sizes


def primal_sizes(shape: Sequence[Any], layout: str) -> dict[str, Any]:
    """The size of each primal axis of a tensor of ``shape`` laid out as ``layout``
    (blocks multiplied back in): ``(1, 4, 8, 8, 16)`` in ``NCHW16c`` has ``C`` = 64."""
    return _primal_sizes(shape, layout)


def blocked_shape(sizes: dict[str, Any], layout: str) -> tuple[Any, ...]:
    """The shape in ``layout`` of a tensor whose primal axes have ``sizes``."""
    return _dst_shape(sizes, layout)


def _factors(axes: list[tuple[str, int]]) -> dict[str, int]:
    """Per primal letter, the product of its blocks (an axis may be blocked twice:
    ``OIHW16i2i`` splits I into I/32, 16 and 2, most significant first)."""
    out: dict[str, int] = {}
    for a, f in axes:
        if f:
            out[a.upper()] = out.get(a.upper(), 1) * f
    return out


def _dst_shape(sizes: dict[str, Any], dst: str) -> tuple[Any, ...]:
    axes = parse_layout(dst)
    if sorted(a for a, f in axes if not f) != sorted(sizes):
        raise TypeRelError(f"layout {dst} does not have the same axes as {sorted(sizes)}")
    blocks = _factors(axes)
    shape: list[Any] = []
    for letter, factor in axes:
        if factor:
            shape.append(factor)
            continue
        size, block = sizes[letter], blocks.get(letter, 1)
        if static(size) and size % block:
            raise TypeRelError(
                f"axis {letter} of size {size} does not split into blocks of {block}"
            )
        shape.append(size // block if block > 1 else size)
    return tuple(shape)


def transform_layout(data: np.ndarray, src: str, dst: str) -> np.ndarray:
    """``data`` (laid out as ``src``) laid out as ``dst`` (NumPy)."""
    src_axes, dst_axes = parse_layout(src), parse_layout(dst)
    sizes = _primal_sizes(data.shape, src)
    # to the primal layout, in src's primal order: each block right after its axis, merged
    primal = [a for a, f in src_axes if not f]
    order = []
    for letter in primal:
        order.append(src_axes.index((letter, 0)))
        order.extend(i for i, (a, f) in enumerate(src_axes) if f and a.upper() == letter)
    plain = data.transpose(order).reshape([sizes[a] for a in primal])
    # to dst: primal axes in dst's order, each blocked one split (its blocks in dst's
    # order, the first most significant), then dst's axis order
    dst_primal = [a for a, f in dst_axes if not f]
    plain = plain.transpose([primal.index(a) for a in dst_primal])
    blocks = _factors(dst_axes)
    split_shape: list[int] = []
    split_pos: list[int] = []  # for each split axis, its position in dst
    for letter in dst_primal:
        split_shape.append(sizes[letter] // blocks.get(letter, 1))
        split_pos.append(dst_axes.index((letter, 0)))
        for i, (a, f) in enumerate(dst_axes):
            if f and a.upper() == letter:
                split_shape.append(f)
                split_pos.append(i)
    split = plain.reshape(split_shape)
    return np.ascontiguousarray(split.transpose([split_pos.index(i) for i in range(len(dst_axes))]))


def _layout_transform_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    try:
        sizes = _primal_sizes(data.shape, attrs.src_layout)
        return TensorType(_dst_shape(sizes, attrs.dst_layout), data.dtype)
    except ArgumentError as err:
        raise TypeRelError(str(err)) from None


define_op(
    "layout_transform",
    num_inputs=1,
    attrs={"src_layout": "", "dst_layout": ""},
    attrs_type_key="relay.attrs.LayoutTransformAttrs",
    type_rel=_layout_transform_rel,
    compute=lambda ins, attrs: transform_layout(ins[0], attrs.src_layout, attrs.dst_layout),
    pattern=OpPattern.INJECTIVE,
    doc="The tensor moved from src_layout to dst_layout (transposed, blocked or unblocked).",
)


def layout_transform(data: Expr, src_layout: str, dst_layout: str) -> Call:
    """``data`` laid out as ``src_layout`` moved to ``dst_layout`` (see the module
    docstring); both layouts must name the same axes."""
    parse_layout(src_layout)
    parse_layout(dst_layout)
    return make_call(
        "layout_transform", [data], src_layout=str(src_layout), dst_layout=str(dst_layout)
    )
