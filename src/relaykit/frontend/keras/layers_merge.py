"""Converters of Keras's merge layers: ``Add``, ``Subtract``, ``Multiply``,
``Average``, ``Maximum``, ``Minimum``, ``Concatenate``, ``Dot``."""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .registry import LayerContext, layer_converter

__all__: list[str] = []

Kwargs = dict[str, Any]
_FOLD: dict[str, Callable[[Expr, Expr], Expr]] = {
    "Add": op.add,
    "Multiply": op.multiply,
    "Maximum": op.maximum,
    "Minimum": op.minimum,
}


@layer_converter("Add", "Multiply", "Maximum", "Minimum")
def _fold(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    return reduce(_FOLD[type(layer).__name__], inputs)


@layer_converter("Subtract")
def _subtract(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    if len(inputs) != 2:
        raise ctx.fail(f"Subtract takes exactly 2 inputs, got {len(inputs)}")
    return op.subtract(inputs[0], inputs[1])


@layer_converter("Average")
def _average(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    total = reduce(op.add, inputs)
    return op.divide(total, ctx.scalar(float(len(inputs)), inputs[0]))


@layer_converter("Concatenate")
def _concatenate(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    return op.concatenate(inputs, axis=int(layer.axis))


def _l2_normalize(ctx: LayerContext, x: Expr, axis: int) -> Expr:
    sq = op.sum(op.multiply(x, x), [axis], keepdims=True)
    return op.multiply(x, op.rsqrt(op.maximum(sq, ctx.scalar(1e-12, x))))


@layer_converter("Dot")
def _dot(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    x, y = inputs
    nx, ny = ctx.ndim(x), ctx.ndim(y)
    axes = layer.axes
    pair = [axes, axes] if isinstance(axes, (int, np.integer)) else list(axes)
    ax, ay = int(pair[0]) % nx, int(pair[1]) % ny
    if layer.normalize:
        x, y = _l2_normalize(ctx, x, ax), _l2_normalize(ctx, y, ay)
    if nx == ny == 2:
        return op.sum(op.multiply(x, y), [1], keepdims=True)
    if nx == ny == 3 and ax in (1, 2) and ay in (1, 2):
        # (B, n, k) x (B, k, m): the contracted axis last in x, first in y
        return nn.batch_matmul(x, y, transpose_a=ax == 1, transpose_b=ay == 2)
    raise ctx.fail(
        f"Dot of inputs of rank {nx} and {ny} over axes {pair} is not supported "
        "(rank 2 with rank 2, or rank 3 with rank 3 over axes 1 or 2)"
    )
