"""What the convolution and pooling converters share: Keras's ``"same"`` padding as
explicit pads (:func:`~relaykit.frontend.common.same_pads`, re-exported here), the
channels-last layout names of each rank, and channels-first layers run through
channels-last ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaykit import op
from relaykit.frontend.common import same_pads
from relaykit.ir.expr import Expr

from .registry import LayerContext

__all__ = [
    "DATA_LAYOUT",
    "KERNEL_LAYOUT",
    "channels_last",
    "flat_pads",
    "padding_pairs",
    "same_pads",
    "spatial_rank",
]

#: spatial rank -> channels-last data layout
DATA_LAYOUT = {1: "NWC", 2: "NHWC", 3: "NDHWC"}
#: spatial rank -> Keras's kernel layout
KERNEL_LAYOUT = {1: "WIO", 2: "HWIO", 3: "DHWIO"}


def flat_pads(pairs: list[tuple[int, int]]) -> list[int]:
    """Relay's pad order: every ``before``, then every ``after``."""
    return [p[0] for p in pairs] + [p[1] for p in pairs]


def padding_pairs(
    ctx: LayerContext,
    padding: str,
    sizes: tuple[int, ...],
    window: tuple[int, ...],
    strides: tuple[int, ...],
    dilation: tuple[int, ...] | None = None,
) -> list[tuple[int, int]]:
    """Keras's ``padding`` (``"valid"``, ``"same"``, ``"causal"``) as one pair per axis."""
    dilation = dilation or (1,) * len(sizes)
    if padding == "valid":
        return [(0, 0)] * len(sizes)
    if padding == "same":
        return [same_pads(*args) for args in zip(sizes, window, strides, dilation, strict=False)]
    if padding == "causal":  # Conv1D: everything before
        return [((k - 1) * d, 0) for k, d in zip(window, dilation, strict=False)]
    raise ctx.fail(f"padding {padding!r} is not supported (valid, same, causal)")


def channels_last(ctx: LayerContext, x: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """``fn`` (written for channels-last data) applied to ``x`` in the layer's own data
    format: a ``channels_first`` layer's input is transposed to channels-last and its
    output back."""
    fmt = getattr(ctx.layer, "data_format", "channels_last")
    if fmt != "channels_first":
        return fn(x)
    n = ctx.ndim(x)
    to_last = [0, *range(2, n), 1]
    to_first = [0, n - 1, *range(1, n - 1)]
    return op.transpose(fn(op.transpose(x, to_last)), to_first)


def spatial_rank(layer: Any) -> int:
    """1, 2 or 3: from the layer's class name (``Conv2D``, ``MaxPooling3D``...)."""
    name = type(layer).__name__
    for n in (1, 2, 3):
        if f"{n}D" in name:
            return n
    return 2
