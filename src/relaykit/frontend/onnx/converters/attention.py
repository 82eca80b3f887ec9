"""ONNX converters: ``Attention`` (opset 23), and the losses
``NegativeLogLikelihoodLoss`` and ``SoftmaxCrossEntropyLoss``, as compositions
of relay operators (batched matmuls, a masked softmax, gathers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.limits import check_unroll
from relaykit.frontend.onnx.proto import onnx_dtype_name
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr

from .common import scalar
from .nn import matmul

__all__: list[str] = []


def _heads(ctx: NodeContext, x: Expr, heads: int) -> Expr:
    b, s, hidden = ctx.shape(x)
    return op.transpose(op.reshape(x, (b, s, heads, hidden // heads)), (0, 2, 1, 3))


def _float_mask(ctx: NodeContext, mask: Expr, dt: str) -> Expr:
    if ctx.dtype(mask) == "bool":
        return op.where(mask, scalar(0, dt), scalar(-np.inf, dt))
    return mask


def _pad_mask(ctx: NodeContext, mask: Expr, kv_len: int) -> Expr:
    shape = ctx.shape(mask)
    extra = kv_len - shape[-1]
    if extra <= 0:
        return mask
    dt = ctx.dtype(mask)
    fill = False if dt == "bool" else -np.inf
    ctx.check_constant((*shape[:-1], extra), 8, "the mask padding")
    pad = Constant(np.full((*shape[:-1], extra), fill, dtype=dt))
    return op.concatenate([mask, pad], axis=-1)


def _safe_softmax(ctx: NodeContext, x: Expr, bias: Expr | None) -> Expr:
    if bias is None:
        return op.nn.softmax(x, axis=-1)
    dt = ctx.dtype(x)
    ninf = scalar(-np.inf, dt)
    m = op.max(x, -1, keepdims=True)
    safe = op.where(op.equal(m, ninf), scalar(0, dt), m)
    e = op.exp(op.subtract(x, safe))
    s = op.sum(e, -1, keepdims=True)
    s = op.where(op.equal(s, scalar(0, dt)), scalar(1, dt), s)
    p = op.divide(e, s)
    masked = op.equal(op.max(bias, -1, keepdims=True), op.cast(ninf, ctx.dtype(bias)))
    return op.where(masked, scalar(0, dt), p)


@dataclass(frozen=True)
class _Positions:
    """Where the ``lq`` queries sit among the ``lkv`` keys: ``offset`` (an int, or one per
    batch row) and the number of real keys of each batch row (``lens``, or None)."""

    lq: int
    lkv: int
    offset: Any  # an int, or an int64 (batch,) expression
    lens: Expr | None  # int64 (batch,): constants fold at import, inputs run at run time

    def grid(self) -> tuple[Expr, Expr]:
        """Query index ``i`` (a column) and key index ``j`` (a row)."""
        i = np.arange(self.lq, dtype="int64").reshape(self.lq, 1)
        return Constant(i), Constant(np.arange(self.lkv, dtype="int64").reshape(1, self.lkv))

    @property
    def per_batch(self) -> bool:
        return isinstance(self.offset, Expr)

    def offset3(self) -> Expr:
        """The offset as a (batch, 1, 1) or scalar int64 expression."""
        if isinstance(self.offset, Expr):
            return op.reshape(self.offset, (-1, 1, 1))
        return scalar(int(self.offset), "int64")


def _positions(
    ctx: NodeContext, past_key: Expr | None, nonpad_kv_seqlen: Expr | None, lq: int, lkv: int
) -> _Positions:
    offset: Any = ctx.shape(past_key)[2] if past_key is not None else 0
    lens = None
    if nonpad_kv_seqlen is not None:
        lens = op.reshape(op.cast(nonpad_kv_seqlen, "int64"), (-1,))
        if past_key is None:
            offset = op.subtract(lens, scalar(lq, "int64"))
    return _Positions(lq, lkv, offset, lens)


def _bias_where(allowed: Expr, dt: str) -> Expr:
    return op.where(allowed, scalar(0, dt), scalar(-np.inf, dt))


def _causal_bias(ctx: NodeContext, attn_mask: Expr | None, pos: _Positions, dt: str) -> Expr:
    base = _float_mask(ctx, attn_mask, dt) if attn_mask is not None else None
    i, j = pos.grid()
    causal = _bias_where(op.less_equal(j, op.add(i, pos.offset3())), dt)
    if pos.per_batch:
        causal = op.expand_dims(causal, 1)
    return causal if base is None else op.add(base, causal)


def _window_sizes(attrs: dict[str, Any]) -> tuple[int, int]:
    """(left, right) of the sliding window; -1 for no limit on that side."""
    left, right = attrs.get("left_window_size"), attrs.get("right_window_size")
    return (-1 if left is None else int(left)), (-1 if right is None else int(right))


def _window_bias(
    ctx: NodeContext, bias: Expr | None, pos: _Positions, left: int, right: int, dt: str
) -> Expr:
    ctx.check_constant((pos.lq, pos.lkv), 8, "the window bias")
    i, j = pos.grid()
    diff = op.subtract(op.add(i, pos.offset3()), j)
    conds = []
    if left >= 0:
        conds.append(op.less_equal(diff, scalar(left, "int64")))
    if right >= 0:
        conds.append(op.less_equal(op.negative(diff), scalar(right, "int64")))
    allowed = conds[0] if len(conds) == 1 else op.logical_and(conds[0], conds[1])
    window = _bias_where(allowed, dt)
    if pos.per_batch:
        window = op.expand_dims(window, 1)
    base_bias = bias if bias is not None else Constant(np.zeros((pos.lq, pos.lkv), dt))
    if ctx.dtype(base_bias) == "bool":
        base_bias = _float_mask(ctx, base_bias, dt)
    return op.add(base_bias, window)


def _mask_bias(
    ctx: NodeContext,
    attrs: dict[str, Any],
    attn_mask: Expr | None,
    pos: _Positions,
    batch: int,
    dt: str,
) -> Expr | None:
    """The additive bias of the scores: mask, causal mask, sliding window, key padding."""
    bias: Expr | None = None
    if attn_mask is not None:
        attn_mask = _pad_mask(ctx, attn_mask, pos.lkv)
    if attrs.get("is_causal", 0):
        bias = _causal_bias(ctx, attn_mask, pos, dt)
    elif attn_mask is not None:
        bias = _float_mask(ctx, attn_mask, dt)
    left, right = _window_sizes(attrs)
    if left >= 0 or right >= 0:
        bias = _window_bias(ctx, bias, pos, left, right, dt)
    if pos.lens is not None:
        ctx.check_constant((batch, pos.lkv), 8, "the padding mask")
        _, j = pos.grid()
        keys = op.less(j, op.reshape(pos.lens, (-1, 1)))
        pad_c = op.reshape(_bias_where(keys, dt), (batch, 1, 1, pos.lkv))
        bias = pad_c if bias is None else op.add(bias, pad_c)
    return bias


def _attend(
    ctx: NodeContext, qk: Expr, bias: Expr | None, v: Expr, attrs: dict[str, Any], dt: str
) -> tuple[Expr, Expr]:
    """The attention output and the ``qk_matmul_output`` its mode asks for."""
    mode = int(attrs.get("qk_matmul_output_mode") or 0)
    qk_biased = qk if bias is None else op.add(qk, bias)
    qk_out = qk_biased if mode == 2 else qk
    precision = int(attrs.get("softmax_precision") or 0)
    sm_in = qk_biased
    if precision and onnx_dtype_name(precision, ctx.where) != dt:
        sm_in = op.cast(qk_biased, onnx_dtype_name(precision, ctx.where))
        bias = None if bias is None else op.cast(bias, onnx_dtype_name(precision, ctx.where))
    probs = _safe_softmax(ctx, sm_in, bias)
    if ctx.dtype(probs) != dt:
        probs = op.cast(probs, dt)
    if mode == 3:
        qk_out = probs
    return matmul(ctx, probs, v), qk_out


@converter("Attention", 23)
def _attention(
    ctx: NodeContext,
    q: Expr,
    k: Expr,
    v: Expr,
    attn_mask: Expr | None = None,
    past_key: Expr | None = None,
    past_value: Expr | None = None,
    nonpad_kv_seqlen: Expr | None = None,
    **attrs: Any,
) -> list[Any]:
    dt = ctx.dtype(q)
    rank = ctx.ndim(q)
    if rank == 3:
        hq, hkv = int(attrs.get("q_num_heads") or 0), int(attrs.get("kv_num_heads") or 0)
        if not hq or not hkv:
            raise ctx.fail("3-D inputs need q_num_heads and kv_num_heads")
        q, k, v = _heads(ctx, q, hq), _heads(ctx, k, hkv), _heads(ctx, v, hkv)
    scale = attrs.get("scale")
    if scale is None:
        scale = 1.0 / np.sqrt(ctx.shape(q)[3])
    root = scalar(np.sqrt(scale), dt)
    if past_key is not None:
        k = op.concatenate([past_key, k], axis=2)
    if past_value is not None:
        v = op.concatenate([past_value, v], axis=2)
    present_k, present_v = k, v
    batch, hq, lq, _ = ctx.shape(q)
    pos = _positions(ctx, past_key, nonpad_kv_seqlen, lq, ctx.shape(k)[2])
    bias = _mask_bias(ctx, attrs, attn_mask, pos, batch, dt)
    hk = ctx.shape(k)[1]
    if hq != hk and hq % hk == 0:
        k = op.repeat(k, hq // hk, 1)
        v = op.repeat(v, hq // hk, 1)
    qk = matmul(ctx, op.multiply(q, root), op.transpose(op.multiply(k, root), (0, 1, 3, 2)))
    cap = float(attrs.get("softcap") or 0.0)
    if cap > 0:
        c = scalar(cap, dt)
        qk = op.multiply(op.tanh(op.divide(qk, c)), c)
    out, qk_out = _attend(ctx, qk, bias, v, attrs, dt)
    if rank == 3:
        b, h, s, d = ctx.shape(out)
        out = op.reshape(op.transpose(out, (0, 2, 1, 3)), (b, s, h * d))
    return [out, present_k, present_v, qk_out]


# -- losses ---------------------------------------------------------------------------------------


def _nll(
    ctx: NodeContext,
    logp: Expr,
    target: Expr,
    weight: Expr | None,
    reduction: str,
    ignore_index: Any,
) -> Expr:
    dt = ctx.dtype(logp)
    tdt = ctx.dtype(target)
    t = target
    keep: Expr | None = None
    if ignore_index is not None:
        ign = scalar(ignore_index, tdt)
        keep = op.not_equal(target, ign)
        t = op.where(keep, target, scalar(0, tdt))
    picked = op.gather(logp, 1, op.expand_dims(t, 1))
    picked = op.reshape(picked, ctx.shape(target))
    w: Expr | None = op.take(weight, t, axis=0) if weight is not None else None
    if keep is not None:
        mask = op.cast(keep, dt)
        w = mask if w is None else op.multiply(w, mask)
    loss = op.negative(picked) if w is None else op.negative(op.multiply(picked, w))
    if reduction == "none":
        return loss
    total = op.sum(loss)
    if reduction == "sum":
        return total
    if w is None:
        return op.divide(total, scalar(int(np.prod(ctx.shape(target))), dt))
    return op.divide(total, op.sum(w))


@converter("NegativeLogLikelihoodLoss", 12)
def _nll_loss(
    ctx: NodeContext,
    x: Expr,
    target: Expr,
    weight: Expr | None = None,
    *,
    reduction: str = "mean",
    ignore_index: Any = None,
) -> Expr:
    return _nll(ctx, x, target, weight, reduction, ignore_index)


@converter("SoftmaxCrossEntropyLoss", 12)
def _softmax_ce(
    ctx: NodeContext,
    scores: Expr,
    labels: Expr,
    weights: Expr | None = None,
    *,
    reduction: str = "mean",
    ignore_index: Any = None,
) -> list[Expr]:
    logp = op.nn.log_softmax(scores, axis=1)
    return [_nll(ctx, logp, labels, weights, reduction, ignore_index), logp]


@converter("RotaryEmbedding", 23)
def _rotary(
    ctx: NodeContext,
    x: Expr,
    cos_cache: Expr,
    sin_cache: Expr,
    position_ids: Expr | None = None,
    *,
    interleaved: int = 0,
    num_heads: int = 0,
    rotary_embedding_dim: int = 0,
) -> Expr:
    shape = ctx.shape(x)
    if len(shape) == 4:
        b, h, s, d = shape
        xs = op.transpose(x, (0, 2, 1, 3))
    else:
        b, s, hidden = shape
        h = int(num_heads)
        if not h:
            raise ctx.fail("3-D input needs num_heads")
        d = hidden // h
        xs = op.reshape(x, (b, s, h, d))
    rot = int(rotary_embedding_dim) or d
    half = rot // 2
    cos, sin = cos_cache, sin_cache
    if position_ids is not None:
        cos = op.take(cos, position_ids, axis=0)
        sin = op.take(sin, position_ids, axis=0)
    cos = op.strided_slice(op.expand_dims(cos, 2), [0], [half], axes=[3])
    sin = op.strided_slice(op.expand_dims(sin, 2), [0], [half], axes=[3])
    xr = op.strided_slice(xs, [0], [rot], axes=[3])
    if interleaved:
        x1 = op.strided_slice(xs, [0], [rot], [2], axes=[3])
        x2 = op.strided_slice(xs, [1], [rot], [2], axes=[3])
    else:
        x1 = op.strided_slice(xr, [0], [half], axes=[3])
        x2 = op.strided_slice(xr, [half], [rot], axes=[3])
    real = op.subtract(op.multiply(cos, x1), op.multiply(sin, x2))
    imag = op.add(op.multiply(sin, x1), op.multiply(cos, x2))
    if interleaved:
        rotated = op.reshape(op.stack([real, imag], axis=-1), (b, s, h, rot))
    else:
        rotated = op.concatenate([real, imag], axis=3)
    if rot < d:
        rotated = op.concatenate([rotated, op.strided_slice(xs, [rot], [d], axes=[3])], axis=3)
    if len(shape) == 4:
        return op.transpose(rotated, (0, 2, 1, 3))
    return op.reshape(rotated, shape)


@converter("CausalConvWithState", 27)
def _causal_conv(
    ctx: NodeContext,
    x: Expr,
    weight: Expr,
    bias: Expr | None = None,
    past: Expr | None = None,
    *,
    activation: str = "none",
) -> list[Expr]:
    b, c, length = ctx.shape(x)
    k = ctx.shape(weight)[2]
    dt = ctx.dtype(x)
    if past is None:
        ctx.check_constant((b, c, max(k - 1, 0)), 8, "the initial state")
        past = Constant(np.zeros((b, c, k - 1), dt))
    full = op.concatenate([past, x], axis=2) if k > 1 else x
    total = length + k - 1
    out = op.nn.conv2d(
        op.reshape(full, (b, c, 1, total)),
        op.reshape(weight, (c, 1, 1, k)),
        groups=c,
        channels=c,
        kernel_size=(1, k),
    )
    out = op.reshape(out, (b, c, length))
    if bias is not None:
        out = op.nn.bias_add(out, bias, axis=1)
    if activation in ("silu", "swish"):
        out = op.multiply(out, op.sigmoid(out))
    elif activation not in ("none", ""):
        raise ctx.unsupported(f"activation {activation!r}")
    present = op.strided_slice(full, [total - (k - 1)], [total], axes=[2])
    return [out, present]


@converter("LinearAttention", 27)
def _linear_attention(
    ctx: NodeContext,
    q: Expr,
    k: Expr,
    v: Expr,
    past: Expr | None = None,
    decay: Expr | None = None,
    beta: Expr | None = None,
    **attrs: Any,
) -> list[Expr]:
    hq = int(attrs.get("q_num_heads") or 0)
    hkv = int(attrs.get("kv_num_heads") or 0)
    rule = attrs.get("update_rule", "gated_delta")
    if not hq or not hkv:
        raise ctx.fail("q_num_heads and kv_num_heads are required")
    b, t_len, _ = ctx.shape(q)
    dk = ctx.shape(k)[2] // hkv
    dv = ctx.shape(v)[2] // hkv
    dt = ctx.dtype(q)
    scale = float(attrs.get("scale") or 0.0) or 1.0 / np.sqrt(dk)
    q4 = op.reshape(q, (b, t_len, hq, dk))
    k4 = op.reshape(k, (b, t_len, hkv, dk))
    v4 = op.reshape(v, (b, t_len, hkv, dv))
    if past is None:
        ctx.check_constant((b, hkv, dk, dv), 8, "the initial state")
    state = past if past is not None else Constant(np.zeros((b, hkv, dk, dv), dt))
    group = hq // hkv

    def step(x: Expr, t: int, heads: int, width: int) -> Expr:
        sl = op.strided_slice(x, [t], [t + 1], axes=[1])
        return op.reshape(sl, (b, heads, width))

    def gate_of(e: Expr, t: int) -> Expr:
        width = ctx.shape(e)[2] // hkv
        g = op.exp(step(op.reshape(e, (b, t_len, hkv, width)), t, hkv, width))
        return op.reshape(g, (b, hkv, width, 1))  # per head (width 1) or per key dim

    check_unroll(ctx.where, "the sequence length", t_len, 12)
    outs = []
    for t in range(t_len):
        kt, vt = step(k4, t, hkv, dk), step(v4, t, hkv, dv)
        s = state
        if rule in ("gated", "gated_delta"):
            if decay is None:
                raise ctx.fail(f"update_rule {rule!r} needs the decay input")
            s = op.multiply(s, gate_of(decay, t))
        if rule in ("delta", "gated_delta"):
            if beta is None:
                raise ctx.fail(f"update_rule {rule!r} needs the beta input")
            bh = ctx.shape(beta)[2]  # one rate per kv head, or one shared by all heads
            bt = op.reshape(step(op.reshape(beta, (b, t_len, bh, 1)), t, bh, 1), (b, bh, 1))
            pred = op.einsum([s, kt], "bhkv,bhk->bhv")
            delta = op.multiply(bt, op.subtract(vt, pred))
            state = op.add(s, op.einsum([kt, delta], "bhk,bhv->bhkv"))
        elif rule in ("linear", "gated"):
            state = op.add(s, op.einsum([kt, vt], "bhk,bhv->bhkv"))
        else:
            raise ctx.fail(f"unknown update_rule {rule!r}")
        qt = op.reshape(step(q4, t, hq, dk), (b, hkv, group, dk))
        o = op.einsum([qt, state], "bhgk,bhkv->bhgv")
        outs.append(op.reshape(op.multiply(o, scalar(scale, dt)), (b, 1, hq * dv)))
    out = outs[0] if len(outs) == 1 else op.concatenate(outs, axis=1)
    return [out, state]


@converter("FlexAttention", 1, domain="ai.onnx.preview")
def _flex_attention(ctx: NodeContext, q: Expr, k: Expr, v: Expr, **attrs: Any) -> Expr:
    """Scaled dot-product attention with ``score_mod`` / ``prob_mod`` subgraphs applied to
    the whole score and probability tensors (computed in float32, or float64 for double)."""
    dt = ctx.dtype(q)
    hq, hk = ctx.shape(q)[1], ctx.shape(k)[1]
    if hq != hk:
        k = op.repeat(k, hq // hk, 1)
        v = op.repeat(v, hq // hk, 1)
    precision = int(attrs.get("softmax_precision") or 0)
    work = (
        onnx_dtype_name(precision, ctx.where)
        if precision
        else ("float64" if dt == "float64" else "float32")
    )
    scale = attrs.get("scale")
    if scale is None:
        scale = 1.0 / np.sqrt(ctx.shape(q)[3])
    qk = matmul(ctx, op.cast(q, work), op.transpose(op.cast(k, work), (0, 1, 3, 2)))
    scores = op.multiply(qk, scalar(scale, work))
    if attrs.get("score_mod") is not None:
        (scores,) = ctx.importer.run_subgraph(attrs["score_mod"], [scores], ctx)
    probs = _safe_softmax(ctx, scores, scores)
    if attrs.get("prob_mod") is not None:
        (probs,) = ctx.importer.run_subgraph(attrs["prob_mod"], [probs], ctx)
    return op.cast(matmul(ctx, probs, op.cast(v, work)), dt)
