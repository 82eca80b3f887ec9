"""Converters of aten's recurrent layers (``aten::lstm``, ``aten::gru``,
``aten::rnn_tanh``, ``aten::rnn_relu``): the sequence is unrolled, one cell per
time step, for every layer and direction (stacked, bidirectional, batch-first,
with or without biases, LSTM projections).

A cell is ``nn.dense`` products and elementwise gates, so backends see the
same dense layers as in a feed-forward model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .registry import OpContext, converter

__all__: list[str] = []

_State = list[Expr]  # [h] or [h, c]


def _linear(ctx: OpContext, x: Expr, w: Expr, b: Expr | None) -> Expr:
    out = nn.dense(x, w, units=ctx.shape(w)[0])
    return out if b is None else nn.bias_add(out, b, axis=-1)


def _chunks(x: Expr, n: int, width: int) -> list[Expr]:
    return [op.strided_slice(x, [i * width], [(i + 1) * width], axes=[1]) for i in range(n)]


def _lstm_cell(ctx: OpContext, x: Expr, state: _State, w: list[Expr | None]) -> _State:
    w_ih, w_hh, b_ih, b_hh, w_hr = w
    h, c = state
    gates = op.add(_linear(ctx, x, w_ih, b_ih), _linear(ctx, h, w_hh, b_hh))  # type: ignore[arg-type]
    hidden = ctx.shape(w_hh)[0] // 4
    i, f, g, o = _chunks(gates, 4, hidden)
    c2 = op.add(op.multiply(op.sigmoid(f), c), op.multiply(op.sigmoid(i), op.tanh(g)))
    h2: Expr = op.multiply(op.sigmoid(o), op.tanh(c2))
    if w_hr is not None:  # projection to proj_size
        h2 = _linear(ctx, h2, w_hr, None)
    return [h2, c2]


def _gru_cell(ctx: OpContext, x: Expr, state: _State, w: list[Expr | None]) -> _State:
    w_ih, w_hh, b_ih, b_hh, _ = w
    (h,) = state
    hidden = ctx.shape(w_hh)[0] // 3
    xr, xz, xn = _chunks(_linear(ctx, x, w_ih, b_ih), 3, hidden)  # type: ignore[arg-type]
    hr, hz, hn = _chunks(_linear(ctx, h, w_hh, b_hh), 3, hidden)  # type: ignore[arg-type]
    r = op.sigmoid(op.add(xr, hr))
    z = op.sigmoid(op.add(xz, hz))
    n = op.tanh(op.add(xn, op.multiply(r, hn)))
    one = op.ones_like(z)
    return [op.add(op.multiply(op.subtract(one, z), n), op.multiply(z, h))]


def _rnn_cell(act: Callable[[Expr], Expr]) -> Any:
    def cell(ctx: OpContext, x: Expr, state: _State, w: list[Expr | None]) -> _State:
        w_ih, w_hh, b_ih, b_hh, _ = w
        (h,) = state
        pre = op.add(_linear(ctx, x, w_ih, b_ih), _linear(ctx, h, w_hh, b_hh))  # type: ignore[arg-type]
        return [act(pre)]

    return cell


def _run(ctx: OpContext, args: list[Any], cell: Any, n_states: int) -> list[Expr]:
    """The unrolled layer stack: (output, final state tensors...)."""
    # (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    x = ctx.expr(args[0])
    hx = [ctx.expr(h) for h in (args[1] if isinstance(args[1], (list, tuple)) else [args[1]])]
    weights = [ctx.expr(p) for p in args[2]]
    has_bias, layers = bool(args[3]), int(args[4])
    bidir, batch_first = bool(args[7]), bool(args[8])
    unbatched = ctx.ndim(x) == 2
    if unbatched:
        x = op.expand_dims(x, 1)
        hx = [op.expand_dims(h, 1) for h in hx]
    elif batch_first:
        x = op.transpose(x, [1, 0, 2])
    dirs = 2 if bidir else 1
    per = len(weights) // (layers * dirs)  # w_ih, w_hh[, b_ih, b_hh][, w_hr]
    steps = ctx.shape(x)[0]
    finals: list[list[Expr]] = [[] for _ in range(n_states)]
    layer_in = x
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            ws = weights[k * per : (k + 1) * per]
            w = [ws[0], ws[1], ws[2] if has_bias else None, ws[3] if has_bias else None,
                 ws[-1] if per in (3, 5) else None]  # fmt: skip
            state = [op.squeeze(op.strided_slice(h, [k], [k + 1], axes=[0]), [0]) for h in hx]
            seq: list[Expr] = [None] * steps  # type: ignore[list-item]
            order = range(steps - 1, -1, -1) if d == 1 else range(steps)
            for t in order:
                xt = op.squeeze(op.strided_slice(layer_in, [t], [t + 1], axes=[0]), [0])
                state = cell(ctx, xt, state, w)
                seq[t] = state[0]
            outs.append(op.stack(seq, 0))
            for i in range(n_states):
                finals[i].append(state[i])
        layer_in = outs[0] if dirs == 1 else op.concatenate(outs, 2)
    output = layer_in
    states = [op.stack(f, 0) for f in finals]
    if unbatched:
        output = op.squeeze(output, [1])
        states = [op.squeeze(s, [1]) for s in states]
    elif batch_first:
        output = op.transpose(output, [1, 0, 2])
    return [output, *states]


@converter("lstm")
def _lstm(ctx: OpContext, args: list[Any]) -> list[Expr]:
    if not isinstance(args[1], (list, tuple)):
        raise ctx.fail("lstm over packed sequences is not supported")
    return _run(ctx, args, _lstm_cell, 2)


@converter("gru")
def _gru(ctx: OpContext, args: list[Any]) -> list[Expr]:
    if isinstance(args[1], (list, tuple)):
        raise ctx.fail("gru over packed sequences is not supported")
    return _run(ctx, args, _gru_cell, 1)


@converter("rnn_tanh")
def _rnn_tanh(ctx: OpContext, args: list[Any]) -> list[Expr]:
    return _run(ctx, args, _rnn_cell(op.tanh), 1)


@converter("rnn_relu")
def _rnn_relu(ctx: OpContext, args: list[Any]) -> list[Expr]:
    return _run(ctx, args, _rnn_cell(nn.relu), 1)
