"""``tvm.relay.op.nn.utils``: normalise a ``padding`` argument to one value per side.

>>> get_pad_tuple2d(1), get_pad_tuple2d((1, 2)), get_pad_tuple1d((0, 3))
((1, 1, 1, 1), (1, 2, 1, 2), (0, 3))
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import AttrError

__all__ = ["get_pad_tuple1d", "get_pad_tuple2d", "get_pad_tuple3d"]


def _pad_tuple(padding: Any, ndim: int) -> tuple[Any, ...]:
    pads = (padding,) if not isinstance(padding, (tuple, list)) else tuple(padding)
    if len(pads) == 1:
        return pads * (2 * ndim)
    if len(pads) == ndim:
        return pads + pads  # the same padding before and after each axis
    if len(pads) == 2 * ndim:
        return pads
    raise AttrError(f"padding must have 1, {ndim} or {2 * ndim} values, got {padding!r}")


def get_pad_tuple1d(padding: Any) -> tuple[Any, ...]:
    """``(left, right)``."""
    return _pad_tuple(padding, 1)


def get_pad_tuple2d(padding: Any) -> tuple[Any, ...]:
    """``(top, left, bottom, right)``."""
    return _pad_tuple(padding, 2)


def get_pad_tuple3d(padding: Any) -> tuple[Any, ...]:
    """``(front, top, left, back, bottom, right)``."""
    return _pad_tuple(padding, 3)
