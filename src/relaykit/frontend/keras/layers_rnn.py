"""Converters of Keras's recurrent layers: ``SimpleRNN``, ``LSTM``, ``GRU`` (both
``reset_after`` forms), ``Bidirectional`` over them, and ``TimeDistributed``.

A recurrent layer is unrolled over its (static) number of steps: the input
projection of every step is one dense product, then each step adds the recurrent
projection of the previous state. ``return_sequences``, ``return_state``,
``go_backwards``, initial states given at the call and masks (``mask_zero=True``
embeddings: a masked step keeps the states and repeats the previous output, as Keras
does) are honoured; stateful layers are refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .activations import apply_activation
from .registry import LAYERS, LayerContext, layer_converter, weight_array

__all__: list[str] = []

Kwargs = dict[str, Any]
#: the step of one cell: (ctx, cell, x_t projected, states) -> new states (output first)
Step = Callable[[LayerContext, Any, Expr, list[Expr]], list[Expr]]


def _dense(ctx: LayerContext, x: Expr, name: str, matrix: np.ndarray) -> Expr:
    """``x @ matrix`` (``matrix`` as Keras stores it, (in, out))."""
    return nn.dense(x, ctx.weight(name, matrix.T), units=int(matrix.shape[1]))


def _gates(x: Expr, n: int, units: int) -> list[Expr]:
    return [op.strided_slice(x, [i * units], [(i + 1) * units], axes=[1]) for i in range(n)]


def _simple_step(ctx: LayerContext, cell: Any, xw: Expr, states: list[Expr]) -> list[Expr]:
    rec = _dense(ctx, states[0], "recurrent_kernel", weight_array(cell, "recurrent_kernel"))
    h = apply_activation(ctx, op.add(xw, rec), cell.activation)
    return [h]


def _lstm_step(ctx: LayerContext, cell: Any, xw: Expr, states: list[Expr]) -> list[Expr]:
    h, c = states
    z = op.add(xw, _dense(ctx, h, "recurrent_kernel", weight_array(cell, "recurrent_kernel")))
    zi, zf, zc, zo = _gates(z, 4, cell.units)
    i = apply_activation(ctx, zi, cell.recurrent_activation)
    f = apply_activation(ctx, zf, cell.recurrent_activation)
    o = apply_activation(ctx, zo, cell.recurrent_activation)
    c = op.add(op.multiply(f, c), op.multiply(i, apply_activation(ctx, zc, cell.activation)))
    h = op.multiply(o, apply_activation(ctx, c, cell.activation))
    return [h, c]


def _gru_step(ctx: LayerContext, cell: Any, xw: Expr, states: list[Expr]) -> list[Expr]:
    (h,) = states
    units = cell.units
    recurrent = weight_array(cell, "recurrent_kernel")
    xz, xr, xh = _gates(xw, 3, units)
    if cell.reset_after:
        rec = _dense(ctx, h, "recurrent_kernel", recurrent)
        if cell.use_bias:
            rec = op.add(rec, ctx.weight("recurrent_bias", weight_array(cell, "bias")[1]))
        rz, rr, rh = _gates(rec, 3, units)
        z = apply_activation(ctx, op.add(xz, rz), cell.recurrent_activation)
        r = apply_activation(ctx, op.add(xr, rr), cell.recurrent_activation)
        hh = apply_activation(ctx, op.add(xh, op.multiply(r, rh)), cell.activation)
    else:
        rz, rr = _gates(_dense(ctx, h, "recurrent_zr", recurrent[:, : 2 * units]), 2, units)
        z = apply_activation(ctx, op.add(xz, rz), cell.recurrent_activation)
        r = apply_activation(ctx, op.add(xr, rr), cell.recurrent_activation)
        rh = _dense(ctx, op.multiply(r, h), "recurrent_h", recurrent[:, 2 * units :])
        hh = apply_activation(ctx, op.add(xh, rh), cell.activation)
    one = ctx.scalar(1.0, h)
    return [op.add(op.multiply(z, h), op.multiply(op.subtract(one, z), hh))]


_STEPS: dict[str, tuple[Step, int]] = {
    "SimpleRNN": (_simple_step, 1),
    "LSTM": (_lstm_step, 2),
    "GRU": (_gru_step, 1),
}


def _input_bias(cell: Any) -> np.ndarray | None:
    if not cell.use_bias:
        return None
    bias = weight_array(cell, "bias")
    return bias[0] if bias.ndim == 2 else bias  # GRU(reset_after): (input, recurrent)


def _run(
    ctx: LayerContext, layer: Any, x: Expr, initial: list[Expr], mask: Expr | None = None
) -> list[Expr]:
    """The layer's outputs: the output (sequence or last), then the states if asked."""
    kind = type(layer).__name__
    step, n_states = _STEPS[kind]
    if getattr(layer, "stateful", False):
        raise ctx.fail("stateful recurrent layers are not supported: use stateful=False")
    cell = layer.cell
    n, steps, _ = ctx.shape(x)
    xw = _dense(ctx, x, "kernel", weight_array(cell, "kernel"))
    bias = _input_bias(cell)
    if bias is not None:
        xw = op.add(xw, ctx.weight("bias", bias))
    if initial:
        if len(initial) != n_states:
            raise ctx.fail(f"expected {n_states} initial states, got {len(initial)}")
        states = list(initial)
    else:
        zeros = op.zeros((n, cell.units), ctx.dtype(x))
        states = [zeros] * n_states
    order = range(steps - 1, -1, -1) if layer.go_backwards else range(steps)
    outputs: list[Expr] = []
    zeros_out = op.zeros((n, cell.units), ctx.dtype(x))
    for t in order:
        xt = op.squeeze(op.strided_slice(xw, [t], [t + 1], axes=[1]), [1])
        new = step(ctx, cell, xt, states)
        if mask is None:
            states = new
            outputs.append(new[0])
            continue
        keep = op.strided_slice(mask, [t], [t + 1], axes=[1])  # (N, 1): step t is real
        outputs.append(op.where(keep, new[0], outputs[-1] if outputs else zeros_out))
        states = [op.where(keep, s_new, s_old) for s_new, s_old in zip(new, states, strict=True)]
    if mask is not None and getattr(layer, "zero_output_for_mask", False):
        # masked steps (the last one too) give zeros
        outputs = [
            op.where(op.strided_slice(mask, [t], [t + 1], axes=[1]), o, zeros_out)
            for t, o in zip(order, outputs, strict=True)
        ]
    out = op.stack(outputs, 1) if layer.return_sequences else outputs[-1]
    return [out, *states] if layer.return_state else [out]


def _mask(ctx: LayerContext, kwargs: Kwargs) -> Expr | None:
    mask = kwargs.get("mask")
    if mask is None:
        return None
    if not isinstance(mask, Expr):
        raise ctx.fail("the mask of a recurrent layer must be a tensor")
    return mask if ctx.dtype(mask) == "bool" else op.cast(mask, "bool")


def _recurrent_inputs(ctx: LayerContext, inputs: list[Expr], kwargs: Kwargs) -> list[Expr]:
    initial = kwargs.get("initial_state")
    states = list(inputs[1:])
    if isinstance(initial, Expr):
        states = [initial]
    elif isinstance(initial, (list, tuple)):
        states = [s for s in initial if isinstance(s, Expr)]
    return states


@layer_converter("SimpleRNN", "LSTM", "GRU")
def _recurrent(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> list[Expr]:
    return _run(ctx, layer, inputs[0], _recurrent_inputs(ctx, inputs, kwargs), _mask(ctx, kwargs))


@layer_converter("Bidirectional")
def _bidirectional(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> list[Expr]:
    initial = _recurrent_inputs(ctx, inputs, kwargs)
    half = len(initial) // 2
    outs = []
    for sub, states in (
        (layer.forward_layer, initial[:half]),
        (layer.backward_layer, initial[half:]),
    ):
        if type(sub).__name__ not in _STEPS:
            raise ctx.fail(f"Bidirectional over {type(sub).__name__} is not supported")
        ctx.layer = sub
        outs.append(_run(ctx, sub, inputs[0], states, _mask(ctx, kwargs)))
    ctx.layer = layer
    (y, *fstates), (y_rev, *bstates) = outs
    if layer.return_sequences:
        y_rev = op.reverse(y_rev, 1)
    mode = layer.merge_mode
    if mode is None:
        return [y, y_rev, *fstates, *bstates]
    merged = {
        "concat": lambda: op.concatenate([y, y_rev], axis=-1),
        "sum": lambda: op.add(y, y_rev),
        "mul": lambda: op.multiply(y, y_rev),
        "ave": lambda: op.multiply(op.add(y, y_rev), ctx.scalar(0.5, y)),
    }.get(mode)
    if merged is None:
        raise ctx.fail(f"merge_mode {mode!r} is not supported")
    return [merged(), *fstates, *bstates]


@layer_converter("TimeDistributed")
def _time_distributed(ctx: LayerContext, layer: Any, inputs: list[Expr], kwargs: Kwargs) -> Expr:
    # the inner layer on (batch * steps, ...), then back to (batch, steps, ...)
    inner = layer.layer
    convert = LAYERS.get(type(inner).__name__)
    if convert is None:
        raise ctx.fail(f"TimeDistributed over {type(inner).__name__} is not supported")
    x = inputs[0]
    shape = ctx.shape(x)
    merged = op.reshape(x, [shape[0] * shape[1], *shape[2:]])
    ctx.layer = inner
    out = convert(ctx, inner, [merged], {})
    ctx.layer = layer
    if not isinstance(out, Expr):
        raise ctx.fail(f"TimeDistributed over a layer with {len(out)} outputs is not supported")
    out_shape = ctx.shape(out)
    return op.reshape(out, [shape[0], shape[1], *out_shape[1:]])
