"""Converter of Paddle's fused recurrent op (``rnn``: ``paddle.nn.LSTM``, ``GRU``,
``SimpleRNN``): the sequence is unrolled, one cell per time step, for every layer and
direction.

The op reads the sequence time-major (``[T, B, I]``); its weights come as one list,
``[w_ih, w_hh]`` of every (layer, direction) followed by their ``[b_ih, b_hh]``; gates
are ordered ``i, f, g, o`` (LSTM) and ``r, z, c`` (GRU). A cell is ``nn.dense``
products and element-wise gates.
"""

from __future__ import annotations

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import nn

from .registry import OpContext, converter

__all__: list[str] = []

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _linear(ctx: OpContext, x: Expr, w: Expr, b: Expr) -> Expr:
    return nn.bias_add(nn.dense(x, w, units=ctx.shape(w)[0]), b, axis=-1)


def _chunks(x: Expr, n: int, width: int) -> list[Expr]:
    return [op.strided_slice(x, [i * width], [(i + 1) * width], axes=[1]) for i in range(n)]


def _cell(ctx: OpContext, mode: str, x: Expr, state: list[Expr], w: list[Expr]) -> list[Expr]:
    """One time step: the new ``[h]`` (``[h, c]`` for an LSTM)."""
    w_ih, w_hh, b_ih, b_hh = w
    hidden = ctx.shape(w_hh)[1]
    xg, hg = _linear(ctx, x, w_ih, b_ih), _linear(ctx, state[0], w_hh, b_hh)
    if mode == "LSTM":
        i, f, g, o = _chunks(op.add(xg, hg), 4, hidden)
        c = op.add(op.multiply(op.sigmoid(f), state[1]), op.multiply(op.sigmoid(i), op.tanh(g)))
        return [op.multiply(op.sigmoid(o), op.tanh(c)), c]
    if mode == "GRU":
        xr, xz, xc = _chunks(xg, 3, hidden)
        hr, hz, hc = _chunks(hg, 3, hidden)
        r, z = op.sigmoid(op.add(xr, hr)), op.sigmoid(op.add(xz, hz))
        cand = op.tanh(op.add(xc, op.multiply(r, hc)))
        return [
            op.add(op.multiply(z, state[0]), op.multiply(op.subtract(op.ones_like(z), z), cand))
        ]
    total = op.add(xg, hg)
    return [op.tanh(total) if mode == "RNN_TANH" else nn.relu(total)]


@converter("rnn")
def _rnn(ctx: OpContext) -> dict[str, object]:
    mode = str(ctx.attr("mode"))
    if mode not in _GATES:
        raise ctx.fail(f"rnn mode {mode!r} is not supported ({', '.join(_GATES)} are)")
    if ctx.has("sequence_length", "sequencelength"):
        raise ctx.fail("per-sample sequence lengths are not supported: pad to one length")
    x = ctx.input("x", "input")
    layers = int(ctx.attr("num_layers", default=1))
    dirs = 2 if bool(ctx.attr("is_bidirec", default=False)) else 1
    weights = ctx.inputs("weight_list", "weightlist")
    states = ctx.inputs("pre_state", "prestate")
    count = layers * dirs
    if len(weights) != 4 * count:
        raise ctx.fail(f"expected {4 * count} weights for {count} cells, got {len(weights)}")
    steps = ctx.shape(x)[0]
    inputs: list[Expr] = [
        op.squeeze(op.strided_slice(x, [t], [t + 1], axes=[0]), [0]) for t in range(steps)
    ]
    finals: list[list[Expr]] = [[] for _ in states]
    for layer in range(layers):
        outputs_by_dir = []
        for d in range(dirs):
            k = layer * dirs + d
            w = [weights[2 * k], weights[2 * k + 1], weights[2 * count + 2 * k],
                 weights[2 * count + 2 * k + 1]]  # fmt: skip
            state: list[Expr] = [
                op.squeeze(op.strided_slice(s, [k], [k + 1], axes=[0]), [0]) for s in states
            ]
            outs: list[Expr] = [x] * steps
            order = range(steps) if d == 0 else range(steps - 1, -1, -1)
            for t in order:
                state = _cell(ctx, mode, inputs[t], state, w)
                outs[t] = state[0]
            outputs_by_dir.append(outs)
            for i, s in enumerate(state):
                finals[i].append(s)
        inputs = [
            op.concatenate([outs[t] for outs in outputs_by_dir], 1)
            if dirs == 2
            else outputs_by_dir[0][t]
            for t in range(steps)
        ]
    out = op.stack(inputs, 0)
    return {"out": out, "state": [op.stack(f, 0) for f in finals]}
