"""Converters of Core ML's recurrent layers, unrolled over the (static) sequence:
``uniDirectionalLSTM``, ``biDirectionalLSTM`` and ``simpleRecurrent``.

The input is ``[Seq, Batch, In, 1, 1]`` (or ``[Seq, In, 1, 1]``: one sequence, the
NCHW form of Core ML's rank-5 blob); the outputs keep that rank: the sequence of
hidden states (or the last one) and the final states ``[1, Batch, Hidden, 1, 1]``.
Initial states, when given, are the layer's extra inputs; otherwise zeros.

LSTM (Core ML's gate order and names): ``i, f, o = gate(W x + R h + b)`` (with
peepholes ``p * c``), ``z = cell_in(W_z x + R_z h + b_z)``, ``c' = f c + i z``
(clipped to ``cellClipThreshold``), ``h' = o * cell_out(c')``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr, const
from relaykit.op import nn

from .layers_nn import activation_expr
from .registry import LayerContext, converter, weights

__all__: list[str] = []


def _sequence(ctx: LayerContext, x: Expr, size: int) -> tuple[Expr, int, int, list[int]]:
    """``x`` as ``[Seq, Batch, In]``, with Seq, Batch and the blob's shape."""
    shape = list(ctx.shape(x))
    if len(shape) == 5:
        seq, batch = shape[0], shape[1]
    elif len(shape) in (3, 4):
        seq, batch = shape[0], 1 if len(shape) == 4 else shape[1]
    else:
        raise ctx.fail(f"the input {shape} is not a sequence [Seq, Batch, In, 1, 1]")
    if math.prod(shape) != seq * batch * size:
        raise ctx.fail(f"the input {shape} does not hold vectors of {size} per step")
    return op.reshape(x, [seq, batch, size]), seq, batch, shape


def _blob(ctx: LayerContext, x: Expr, shape: list[int], steps: int, size: int) -> Expr:
    """``[steps, Batch, size]`` in the input blob's layout."""
    if len(shape) == 5:
        return op.reshape(x, [steps, shape[1], size, 1, 1])
    if len(shape) == 4:
        return op.reshape(x, [steps, size, 1, 1])
    return x


def _state(ctx: LayerContext, inputs: list[Expr], i: int, batch: int, size: int) -> Expr:
    if len(inputs) > i:
        return op.reshape(inputs[i], [batch, size])
    return op.zeros([batch, size], "float32")


def _matrix(ctx: LayerContext, message: Any, name: str, rows: int, cols: int) -> np.ndarray:
    return weights(ctx, message, name, [rows, cols]).reshape(rows, cols)


def _activation(ctx: LayerContext, params: Any) -> Callable[[Expr], Expr]:
    return lambda x: activation_expr(ctx, params, x)


def _outputs(
    ctx: LayerContext, hs: list[Expr], states: list[Expr], shape: list[int], p: Any, hidden: int
) -> list[Expr]:
    """The sequence output (every step, or the last) and the final states."""
    seq = op.stack(hs, axis=0) if p.sequenceOutput else op.expand_dims(hs[-1], 0)
    y = _blob(ctx, seq, shape, len(hs) if p.sequenceOutput else 1, hidden)
    return [y, *(_blob(ctx, op.expand_dims(s, 0), shape, 1, hidden) for s in states)]


def _unroll_lstm(
    ctx: LayerContext,
    xs: Expr,
    sizes: tuple[int, int, int, int],
    wp: Any,
    lp: Any,
    activations: Any,
    state: tuple[Expr, Expr],
    tag: str = "",
) -> tuple[list[Expr], Expr, Expr]:
    """Run one LSTM over ``xs`` ``[Seq, Batch, In]``: the hidden state of each step (in
    the order the steps ran) and the final ``h`` and ``c``."""
    seq, batch, size, hidden = sizes
    gates = ("inputGate", "forgetGate", "blockInput", "outputGate")
    w = np.concatenate([_matrix(ctx, getattr(wp, f"{g}WeightMatrix"), g, hidden, size)
                        for g in gates])  # fmt: skip
    r = np.concatenate([_matrix(ctx, getattr(wp, f"{g}RecursionMatrix"), g, hidden, hidden)
                        for g in gates])  # fmt: skip
    b = np.zeros(4 * hidden, np.float32)
    if lp.hasBiasVectors:
        b = np.concatenate([weights(ctx, getattr(wp, f"{g}BiasVector"), g, [hidden])
                            for g in gates])  # fmt: skip
    if lp.forgetBias:
        b[hidden : 2 * hidden] += 1.0
    gate, cell_in, cell_out = (_activation(ctx, a) for a in activations)
    flat = op.reshape(xs, [seq * batch, size])
    wx = nn.dense(flat, ctx.param(f"w{tag}", w, [4 * hidden, size]))
    wx = op.add(wx, ctx.param(f"b{tag}", b, [4 * hidden]))
    wx = op.reshape(wx, [seq, batch, 4 * hidden])
    rec = ctx.param(f"r{tag}", r, [4 * hidden, hidden])
    peep = None
    if lp.hasPeepholeVectors:
        peep = [ctx.param(f"p{tag}_{g}", weights(ctx, getattr(wp, f"{g}PeepholeVector"), g,
                                                 [hidden]), [hidden])
                for g in ("inputGate", "forgetGate", "outputGate")]  # fmt: skip
    h, c = state
    clip = float(lp.cellClipThreshold) or 50000.0
    hs: list[Expr] = []
    for t in range(seq):
        pre = op.add(op.take(wx, const(t, "int32"), axis=0), nn.dense(h, rec))
        parts = op.split(pre, 4, axis=1)
        i_pre: Expr = parts[0]
        f_pre: Expr = parts[1]
        o_pre: Expr = parts[3]
        if peep is not None:
            i_pre = op.add(i_pre, op.multiply(peep[0], c))
            f_pre = op.add(f_pre, op.multiply(peep[1], c))
        f = gate(f_pre)
        i = op.subtract(ctx.scalar(1.0), f) if lp.coupledInputAndForgetGate else gate(i_pre)
        c = op.clip(op.add(op.multiply(f, c), op.multiply(i, cell_in(parts[2]))), -clip, clip)
        if peep is not None:
            o_pre = op.add(o_pre, op.multiply(peep[2], c))
        h = op.multiply(gate(o_pre), cell_out(c))
        hs.append(h)
    return hs, h, c


@converter("uniDirectionalLSTM")
def _lstm(ctx: LayerContext, p: Any, inputs: list[Expr]) -> list[Expr]:
    size, hidden = int(p.inputVectorSize), int(p.outputVectorSize)
    if p.reverseInput:
        raise ctx.fail("reverseInput LSTMs are not supported (biDirectionalLSTM is)")
    xs, seq, batch, shape = _sequence(ctx, inputs[0], size)
    state = (_state(ctx, inputs, 1, batch, hidden), _state(ctx, inputs, 2, batch, hidden))
    hs, h, c = _unroll_lstm(
        ctx, xs, (seq, batch, size, hidden), p.weightParams, p.params, p.activations, state
    )
    return _outputs(ctx, hs, [h, c], shape, p.params, hidden)


@converter("biDirectionalLSTM")
def _bilstm(ctx: LayerContext, p: Any, inputs: list[Expr]) -> list[Expr]:
    """A forward and a backward LSTM; the sequence output concatenates their states at
    each position (``[..., 2 * Hidden, 1, 1]``); the final states are four outputs."""
    size, hidden = int(p.inputVectorSize), int(p.outputVectorSize)
    if len(p.weightParams) != 2:
        raise ctx.fail(f"it needs 2 weight sets (forward, backward), has {len(p.weightParams)}")
    xs, seq, batch, shape = _sequence(ctx, inputs[0], size)
    sizes = (seq, batch, size, hidden)
    fwd_state = (_state(ctx, inputs, 1, batch, hidden), _state(ctx, inputs, 2, batch, hidden))
    bwd_state = (_state(ctx, inputs, 3, batch, hidden), _state(ctx, inputs, 4, batch, hidden))
    fwd, hf, cf = _unroll_lstm(ctx, xs, sizes, p.weightParams[0], p.params,
                               p.activationsForwardLSTM, fwd_state, "_fwd")  # fmt: skip
    bwd, hb, cb = _unroll_lstm(ctx, op.reverse(xs, axis=0), sizes, p.weightParams[1],
                               p.params, p.activationsBackwardLSTM, bwd_state, "_bwd")  # fmt: skip
    both: list[Expr] = [op.concatenate([a, b], axis=1) for a, b in zip(fwd, bwd[::-1], strict=True)]
    if not p.params.sequenceOutput:
        both = [op.concatenate([fwd[-1], bwd[-1]], axis=1)]
    out = _outputs(ctx, both, [], shape, p.params, 2 * hidden)
    return out + [_blob(ctx, op.expand_dims(s, 0), shape, 1, hidden) for s in (hf, cf, hb, cb)]


@converter("simpleRecurrent")
def _simple_rnn(ctx: LayerContext, p: Any, inputs: list[Expr]) -> list[Expr]:
    if p.reverseInput:
        raise ctx.fail("reverseInput recurrent layers are not supported")
    size, hidden = int(p.inputVectorSize), int(p.outputVectorSize)
    xs, seq, batch, shape = _sequence(ctx, inputs[0], size)
    w = ctx.param("w", _matrix(ctx, p.weightMatrix, "weights", hidden, size), [hidden, size])
    rec = _matrix(ctx, p.recursionMatrix, "recursion", hidden, hidden)
    r = ctx.param("r", rec, [hidden, hidden])
    wx = op.reshape(nn.dense(op.reshape(xs, [seq * batch, size]), w), [seq, batch, hidden])
    if p.hasBiasVector:
        wx = op.add(wx, ctx.param("b", weights(ctx, p.biasVector, "bias", [hidden]), [hidden]))
    act = _activation(ctx, p.activation)
    h: Expr = _state(ctx, inputs, 1, batch, hidden)
    hs: list[Expr] = []
    for t in range(seq):
        h = act(op.add(op.take(wx, const(t, "int32"), axis=0), nn.dense(h, r)))
        hs.append(h)
    return _outputs(ctx, hs, [h], shape, p, hidden)
