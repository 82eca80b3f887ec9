"""ONNX converters: the recurrent layers ``RNN``, ``GRU`` and ``LSTM``, unrolled over
the (static) sequence length into dense layers and elementwise gates."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.limits import check_unroll
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr

from .common import scalar

__all__: list[str] = []


def _activation(ctx: NodeContext, name: str, alpha: Any, beta: Any) -> Callable[[Expr], Expr]:
    def unit(x: Expr) -> Expr:
        dt = ctx.dtype(x)
        if name == "Sigmoid":
            return op.sigmoid(x)
        if name == "Tanh":
            return op.tanh(x)
        if name == "Relu":
            return op.nn.relu(x)
        if name == "LeakyRelu":
            return op.nn.leaky_relu(x, 0.01 if alpha is None else alpha)
        if name == "HardSigmoid":
            a, b = (0.2 if alpha is None else alpha), (0.5 if beta is None else beta)
            return op.clip(op.add(op.multiply(x, scalar(a, dt)), scalar(b, dt)), 0.0, 1.0)
        if name == "Affine":
            return op.add(op.multiply(x, scalar(alpha, dt)), scalar(beta, dt))
        if name == "ScaledTanh":
            return op.multiply(scalar(alpha, dt), op.tanh(op.multiply(x, scalar(beta, dt))))
        if name == "Softsign":
            return op.divide(x, op.add(op.abs(x), scalar(1, dt)))
        raise ctx.unsupported(f"activation {name!r}")

    return unit


def _unused(x: Expr) -> Expr:
    """The activation slot a cell kind does not have (RNN has one, GRU two, LSTM three)."""
    return x


def _activations(ctx: NodeContext, attrs: dict, defaults: list[str], dirs: int) -> list:
    names = list(attrs.get("activations") or ()) or defaults * dirs
    if len(names) == len(defaults):
        names = names * dirs
    alphas = list(attrs.get("activation_alpha") or ())
    betas = list(attrs.get("activation_beta") or ())
    out = []
    for k, n in enumerate(names):
        a = alphas[k] if k < len(alphas) else None
        b = betas[k] if k < len(betas) else None
        out.append(_activation(ctx, n, a, b))
    return out


def _slice0(x: Expr, i: int) -> Expr:
    return op.squeeze(op.strided_slice(x, [i], [i + 1], axes=[0]), [0])


Activation = Callable[[Expr], Expr]


@dataclass(frozen=True)
class _Direction:
    """One direction of a recurrent layer: its weights, activations and options, and the
    step that maps the input at one time and the state to the next state."""

    kind: str
    f: Activation
    g: Activation
    h: Activation
    w: Expr
    r: Expr
    bias_w: Expr | None
    bias_r: Expr | None
    peep: Expr | None
    clip: Any
    dt: str
    linear_before_reset: bool
    input_forget: bool

    def clipped(self, e: Expr) -> Expr:
        return op.clip(e, -self.clip, self.clip) if self.clip else e

    def step(self, x_t: Expr, ht: Expr, ct: Expr) -> tuple[Expr, Expr]:
        """The hidden and cell state after input ``x_t``."""
        xw = op.nn.dense(x_t, self.w)
        if self.bias_w is not None:
            xw = op.add(xw, self.bias_w)
        if self.kind == "GRU":
            return self._gru(xw, ht), ct
        pre = op.add(xw, op.nn.dense(ht, self.r))
        if self.bias_r is not None:
            pre = op.add(pre, self.bias_r)
        if self.kind == "RNN":
            return self.f(self.clipped(pre)), ct
        return self._lstm(pre, ct)

    def _gru(self, xw: Expr, ht: Expr) -> Expr:
        f, g, clipped = self.f, self.g, self.clipped
        xz, xr, xh = op.split(xw, 3, axis=1)
        rz, rr, rh = op.split(self.r, 3, axis=0)
        bz = br = bh = None
        if self.bias_r is not None:
            bz, br, bh = op.split(self.bias_r, 3, axis=0)

        def rec(hh: Expr, rm: Expr, bb: Expr | None) -> Expr:
            e = op.nn.dense(hh, rm)
            return e if bb is None else op.add(e, bb)

        z = f(clipped(op.add(xz, rec(ht, rz, bz))))
        rg = f(clipped(op.add(xr, rec(ht, rr, br))))
        if self.linear_before_reset:
            cand = op.add(xh, op.multiply(rg, rec(ht, rh, bh)))
        else:
            cand = op.add(xh, rec(op.multiply(rg, ht), rh, bh))
        hc = g(clipped(cand))
        one = scalar(1, self.dt)
        return op.add(op.multiply(op.subtract(one, z), hc), op.multiply(z, ht))

    def _lstm(self, pre: Expr, ct: Expr) -> tuple[Expr, Expr]:
        f, g, h, clipped = self.f, self.g, self.h, self.clipped
        i_, o_, f_, c_ = op.split(pre, 4, axis=1)
        po = None
        if self.peep is not None:
            pi, po, pf = op.split(self.peep, 3, axis=0)
            i_ = op.add(i_, op.multiply(pi, ct))
            f_ = op.add(f_, op.multiply(pf, ct))
        it = f(clipped(i_))
        ft = f(clipped(f_))
        if self.input_forget:
            ft = op.subtract(scalar(1, self.dt), it)
        cand = g(clipped(c_))
        ct = op.add(op.multiply(ft, ct), op.multiply(it, cand))
        if po is not None:
            o_ = op.add(o_, op.multiply(po, ct))
        ot = f(clipped(o_))
        return op.multiply(ot, h(ct)), ct


_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_DEFAULT_ACTIVATIONS = {
    "RNN": ["Tanh"],
    "GRU": ["Sigmoid", "Tanh"],
    "LSTM": ["Sigmoid", "Tanh", "Tanh"],
}


def _directions(
    ctx: NodeContext, kind: str, inputs: list[Any], attrs: dict, dt: str
) -> list[_Direction]:
    """The per-direction cells of the layer (one, or two when bidirectional)."""
    w, r = inputs[1], inputs[2]
    b = inputs[3] if len(inputs) > 3 else None
    peep = inputs[7] if len(inputs) > 7 else None
    dirs = 2 if attrs.get("direction", "forward") == "bidirectional" else 1
    hidden = int(attrs.get("hidden_size") or ctx.shape(r)[-1])
    gates = _GATES[kind]
    acts = _activations(ctx, attrs, _DEFAULT_ACTIVATIONS[kind], dirs)
    per = len(_DEFAULT_ACTIVATIONS[kind])
    out = []
    for d in range(dirs):
        f, g, h = (acts[d * per + k] if k < per else _unused for k in range(3))
        bias_w = bias_r = None
        if b is not None:
            bd = _slice0(b, d)
            bias_w = op.strided_slice(bd, [0], [gates * hidden])
            bias_r = op.strided_slice(bd, [gates * hidden], [2 * gates * hidden])
        out.append(
            _Direction(
                kind,
                f,
                g,
                h,
                w=_slice0(w, d),
                r=_slice0(r, d),
                bias_w=bias_w,
                bias_r=bias_r,
                peep=_slice0(peep, d) if peep is not None else None,
                clip=attrs.get("clip"),
                dt=dt,
                linear_before_reset=bool(attrs.get("linear_before_reset", 0)),
                input_forget=bool(attrs.get("input_forget", 0)),
            )
        )
    return out


def _run(ctx: NodeContext, kind: str, inputs: list[Any], attrs: dict) -> list[Expr]:
    x = inputs[0]
    lens = inputs[4] if len(inputs) > 4 else None
    h0 = inputs[5] if len(inputs) > 5 else None
    c0 = inputs[6] if len(inputs) > 6 else None
    layout = int(attrs.get("layout", 0))
    if layout:
        x = op.transpose(x, (1, 0, 2))
        h0 = None if h0 is None else op.transpose(h0, (1, 0, 2))
        c0 = None if c0 is None else op.transpose(c0, (1, 0, 2))
    seq, batch, _ = ctx.shape(x)
    check_unroll(
        ctx.where,
        "the sequence length",
        seq,
        40 * (1 + (attrs.get("direction") == "bidirectional")),
    )
    if lens is not None:
        values = np.asarray(ctx.value(lens, "sequence_lens"))
        if not (values == seq).all():
            raise ctx.unsupported("sequence_lens shorter than the sequence")
    direction = attrs.get("direction", "forward")
    hidden = int(attrs.get("hidden_size") or ctx.shape(inputs[2])[-1])
    if hidden != ctx.shape(inputs[2])[-1]:
        raise ctx.fail(
            f"hidden_size={hidden} does not match the recurrence weights of shape "
            f"{ctx.shape(inputs[2])}"
        )
    dt = ctx.dtype(x)
    cells = _directions(ctx, kind, inputs, attrs, dt)
    steps = [_slice0(x, t) for t in range(seq)]
    ys, hs, cs = [], [], []
    for d, cell in enumerate(cells):
        zero = Constant(np.zeros((batch, hidden), dt))
        ht = _slice0(h0, d) if h0 is not None else zero
        ct = _slice0(c0, d) if c0 is not None else zero
        backward = direction == "reverse" or (direction == "bidirectional" and d == 1)
        outs: dict[int, Expr] = {}
        for t in range(seq - 1, -1, -1) if backward else range(seq):
            ht, ct = cell.step(steps[t], ht, ct)
            outs[t] = ht
        ys.append(op.stack([outs[t] for t in range(seq)], axis=0))
        hs.append(ht)
        cs.append(ct)
    y = op.stack(ys, axis=1)  # (seq, dirs, batch, hidden)
    yh = op.stack(hs, axis=0)
    yc = op.stack(cs, axis=0)
    if layout:
        y = op.transpose(y, (2, 0, 1, 3))
        yh = op.transpose(yh, (1, 0, 2))
        yc = op.transpose(yc, (1, 0, 2))
    return [y, yh, yc] if kind == "LSTM" else [y, yh]


def _converter(kind: str):
    def convert(ctx: NodeContext, *inputs: Expr | None, **attrs: Any) -> list[Expr]:
        return _run(ctx, kind, list(inputs), attrs)

    return convert


converter("RNN", 7)(_converter("RNN"))
converter("GRU", 7)(_converter("GRU"))
converter("LSTM", 7)(_converter("LSTM"))
