"""Converters of attention: ``scaled_dot_product_attention`` with the kernels torch
dispatches it to (``_scaled_dot_product_flash_attention_for_cpu``,
``_scaled_dot_product_efficient_attention``, ``_scaled_dot_product_attention_math``,
``_scaled_dot_product_flash_attention``), and the inference fast paths of torch's own
modules: ``_native_multi_head_attention`` (``nn.MultiheadAttention``) and
``_transformer_encoder_layer_fwd`` (``nn.TransformerEncoderLayer``).

Each becomes the computation the module describes, in the layout an exported BERT
has, which the dnnl backend runs as one region: the query, key and value
projections as three ``nn.dense`` layers on the rows of the packed ``in_proj``
weight (split when the graph is converted, the query's ``1/sqrt(head_dim)`` folded
into its weight and bias), heads split by reshape and transpose, ``nn.batch_matmul``
for the scores (the key transposed) and for the context, ``nn.softmax`` over the
scores plus an additive mask, then the output projection; the encoder layer adds
``nn.layer_norm`` (before or after each block, ``norm_first``), the feed-forward
block with ReLU or GELU, and the residual adds.

Masks follow torch: ``scaled_dot_product_attention``'s boolean mask marks the
positions that take part and its float mask is added to the scores; the fast
paths' mask (bool or float, of ``mask_type`` 0: ``(L, S)``, 1: key padding
``(B, S)``, 2: ``(B, H, L, S)``) marks with a nonzero the positions left out.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Constant, Expr
from relaykit.op import nn

from .registry import OpContext, converter, lookup

__all__ = ["attention"]


def _opt(args: list[Any], i: int, default: Any = None) -> Any:
    return args[i] if len(args) > i and args[i] is not None else default


def _broadcast(a: list[int], b: list[int]) -> list[int]:
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    return [max(x, y) for x, y in zip(a, b, strict=True)]


def _no_dropout(ctx: OpContext, p: Any) -> None:
    if p is not None and float(p) != 0.0:
        raise ctx.fail(
            f"attention with dropout_p={p} drops at random (training): relaykit compiles "
            "inference, pass dropout_p=0.0 (nn.MultiheadAttention does in eval())"
        )


def _logsumexp(x: Expr) -> Expr:
    top = op.max(x, [-1], keepdims=True)
    total = op.sum(op.exp(op.subtract(x, top)), [-1], keepdims=True)
    return op.squeeze(op.add(op.log(total), top), [-1])


def attention(
    ctx: OpContext,
    q: Expr,
    k: Expr,
    v: Expr,
    batch: list[int],
    *,
    scale: float | None,
    bias: Expr | None = None,
    keep: Expr | None = None,
) -> tuple[Expr, Expr, Expr]:
    """``softmax(q kᵀ · scale + bias) v`` over 3-D operands ``(prod(batch), L, E)``;
    ``bias`` (additive) and ``keep`` (bool, the positions that take part; a row with
    none gives zeros) broadcast to ``(*batch, L, S)``. Returns the context
    ``(*batch, L, Ev)``, the probabilities and the scores ``(*batch, L, S)``."""
    dt = ctx.dtype(q)
    _, lq, _ = ctx.shape(q)
    _, s, ev = ctx.shape(v)
    scores = nn.batch_matmul(q, k)  # k as (batch, S, E): the product takes it transposed
    if scale is not None:
        scores = op.multiply(scores, ctx.expr(float(scale), dt))
    scores = op.reshape(scores, [*batch, lq, s])
    if bias is not None:
        scores = op.add(scores, bias)
    if keep is not None:
        scores = op.where(keep, scores, ctx.expr(-math.inf, dt))
    probs = nn.softmax(scores, axis=-1)
    if keep is not None:
        probs = op.where(keep, probs, ctx.expr(0.0, dt))
    nb = int(math.prod(batch))
    out = nn.batch_matmul(op.reshape(probs, [nb, lq, s]), v, transpose_b=False)
    return op.reshape(out, [*batch, lq, ev]), probs, scores


# -- scaled_dot_product_attention and its kernels --------------------------------------------
def _sdpa(
    ctx: OpContext,
    q: Any,
    k: Any,
    v: Any,
    mask: Any,
    dropout_p: Any,
    causal: bool,
    scale: Any,
    gqa: bool = False,
    bool_keeps: bool = False,
) -> tuple[Expr, Expr, Expr]:
    """The attention of ``scaled_dot_product_attention`` (``bool_keeps``: a bool mask
    marks the positions that take part) or of the kernels it dispatches to, which add
    any mask they are given."""
    _no_dropout(ctx, dropout_p)
    q, k, v = ctx.expr(q), ctx.expr(k), ctx.expr(v)
    sq, sk, sv = list(ctx.shape(q)), list(ctx.shape(k)), list(ctx.shape(v))
    if gqa and sq[:-3] == sk[:-3] and sq[-3] != sk[-3]:
        reps = sq[-3] // sk[-3]  # grouped-query attention: repeat the key/value heads
        k, v = op.repeat(k, reps, len(sk) - 3), op.repeat(v, reps, len(sv) - 3)
        sk[-3], sv[-3] = sq[-3], sv[-3] * reps
    dt = ctx.dtype(q)
    lq, s, e = sq[-2], sk[-2], sq[-1]
    batch = _broadcast(_broadcast(sq[:-2], sk[:-2]), sv[:-2])  # value's batch too
    nb = int(math.prod(batch))

    def flat(x: Expr, shape: list[int]) -> Expr:
        if shape[:-2] != batch:
            x = op.broadcast_to(x, [*batch, *shape[-2:]])
        return op.reshape(x, [nb, *shape[-2:]])

    keep: Any = np.tril(np.ones((lq, s), dtype=bool)) if causal else None
    bias = None
    if mask is not None:
        m = ctx.expr(mask)
        if ctx.dtype(m) != "bool" or not bool_keeps:  # added (a bool one as 0/1)
            bias = m if ctx.dtype(m) == dt else op.cast(m, dt)
        elif isinstance(m, Constant):
            keep = m.data.numpy() if keep is None else np.logical_and(keep, m.data.numpy())
        else:
            keep = m if keep is None else op.logical_and(ctx.expr(keep), m)
    if isinstance(keep, np.ndarray):
        if keep.any(-1).all():  # every row keeps a position: an additive mask says it all
            additive = ctx.expr(np.where(keep, 0.0, -np.inf).astype(dt))
            bias = additive if bias is None else op.add(bias, additive)
            keep = None
        else:
            keep = ctx.expr(keep)
    elif keep is None and isinstance(bias, Constant):  # rows all -inf give zeros, as in torch
        rows = ~np.isneginf(bias.data.numpy()).all(-1, keepdims=True)
        keep = None if rows.all() else ctx.expr(rows)
    factor = float(scale) if scale is not None else 1.0 / math.sqrt(e)
    return attention(
        ctx, flat(q, sq), flat(k, sk), flat(v, sv), batch, scale=factor, bias=bias, keep=keep
    )


@converter("scaled_dot_product_attention")
def _scaled_dot_product_attention(ctx: OpContext, args: list[Any]) -> Expr:
    # (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return _sdpa(
        ctx, args[0], args[1], args[2], _opt(args, 3), _opt(args, 4), bool(_opt(args, 5)),
        _opt(args, 6), bool(_opt(args, 7)), bool_keeps=True,
    )[0]  # fmt: skip


@converter("_scaled_dot_product_attention_math")
def _sdpa_math(ctx: OpContext, args: list[Any]) -> list[Any]:
    # (query, key, value, attn_mask, dropout_p, is_causal, dropout_mask, scale, enable_gqa)
    # -> (output, attention weights)
    if _opt(args, 6) is not None:
        raise ctx.fail("attention with a dropout mask is not supported (inference only)")
    out, probs, _ = _sdpa(
        ctx, args[0], args[1], args[2], _opt(args, 3), _opt(args, 4), bool(_opt(args, 5)),
        _opt(args, 7), bool(_opt(args, 8)),
    )  # fmt: skip
    return [out, probs]


@converter("_scaled_dot_product_flash_attention_for_cpu")
def _sdpa_flash_cpu(ctx: OpContext, args: list[Any]) -> list[Any]:
    # (query, key, value, dropout_p, is_causal, attn_mask, scale) -> (output, logsumexp)
    out, _, scores = _sdpa(
        ctx, args[0], args[1], args[2], _opt(args, 5), _opt(args, 3), bool(_opt(args, 4)),
        _opt(args, 6),
    )  # fmt: skip
    return [out, _logsumexp(scores)]


@converter("_scaled_dot_product_efficient_attention")
def _sdpa_efficient(ctx: OpContext, args: list[Any]) -> list[Any]:
    # (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, scale)
    # -> (output, log_sumexp, philox_seed, philox_offset)
    out, _, scores = _sdpa(
        ctx, args[0], args[1], args[2], _opt(args, 3), _opt(args, 5), bool(_opt(args, 6)),
        _opt(args, 7),
    )  # fmt: skip
    return [out, _logsumexp(scores), None, None]


@converter("_scaled_dot_product_flash_attention")
def _sdpa_flash(ctx: OpContext, args: list[Any]) -> list[Any]:
    # (query, key, value, dropout_p, is_causal, return_debug_mask, scale) -> (output,
    # logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, philox_seed, philox_offset, debug_mask)
    out, _, scores = _sdpa(
        ctx, args[0], args[1], args[2], None, _opt(args, 3), bool(_opt(args, 4)),
        _opt(args, 6),
    )  # fmt: skip
    lq, s = ctx.shape(scores)[-2:]
    return [out, _logsumexp(scores), None, None, lq, s, None, None, None]


# -- the fast paths of nn.MultiheadAttention and nn.TransformerEncoderLayer ----------------------
def _rows(ctx: OpContext, packed: Any, start: int, stop: int, factor: float = 1.0) -> Expr:
    """Rows ``start:stop`` of a packed projection weight or bias, times ``factor``
    (sliced now when it is a constant, as the parameters of a compiled graph are)."""
    x = ctx.expr(packed)
    if isinstance(x, Constant):
        rows = x.data.numpy()[start:stop]
        return ctx.expr((rows * factor).astype(rows.dtype) if factor != 1.0 else rows)
    part: Expr = op.strided_slice(x, [start], [stop], axes=[0])
    return part if factor == 1.0 else op.multiply(part, ctx.expr(factor, ctx.dtype(x)))


def _linear(x: Expr, weight: Expr, bias: Expr | None, units: int) -> Expr:
    out = nn.dense(x, weight, units=units)
    return out if bias is None else nn.bias_add(out, bias, axis=-1)


def _split_heads(x: Expr, b: int, n: int, h: int, d: int) -> Expr:
    """``(B, N, H*D)`` -> ``(B*H, N, D)``."""
    return op.reshape(op.transpose(op.reshape(x, [b, n, h, d]), [0, 2, 1, 3]), [b * h, n, d])


def _mask_bias(ctx: OpContext, mask: Any, mask_type: Any, dtype: str) -> Expr | None:
    """The fast paths' mask (a nonzero or True leaves the position out) as an additive
    mask of rank 4: type 1 ``(B, S)`` as ``(B, 1, 1, S)``, types 0 and 2 aligned right."""
    if mask is None:
        return None
    if mask_type is None:
        raise ctx.fail("a mask without its mask_type (0, 1 or 2): torch requires one")
    m = ctx.expr(mask)
    shape = list(ctx.shape(m))
    key_padding = int(mask_type) == 1
    target = [shape[0], 1, 1, shape[-1]] if key_padding else [1] * (4 - len(shape)) + shape
    if isinstance(m, Constant):
        left_out = m.data.numpy() != 0
        return ctx.expr(np.where(left_out, -np.inf, 0.0).astype(dtype).reshape(target))
    flag = m if ctx.dtype(m) == "bool" else op.not_equal(m, ctx.expr(0, ctx.dtype(m)))
    additive = op.where(flag, ctx.expr(-math.inf, dtype), ctx.expr(0.0, dtype))
    return op.reshape(additive, target)


def multi_head_attention(
    ctx: OpContext,
    query: Any,
    key: Any,
    value: Any,
    heads: int,
    in_weight: Any,
    in_bias: Any,
    out_weight: Any,
    out_bias: Any,
    mask: Any = None,
    mask_type: Any = None,
) -> tuple[Expr, Expr]:
    """``nn.MultiheadAttention``'s computation on batch-first ``(B, L, E)`` operands:
    the output ``(B, L, E)`` and the attention probabilities ``(B, H, L, S)``."""
    query, key, value = ctx.expr(query), ctx.expr(key), ctx.expr(value)
    if ctx.ndim(query) != 3 or ctx.ndim(key) != 3:
        raise ctx.fail("multi-head attention takes batch-first 3-D (batch, length, embed) inputs")
    b, lq, e = ctx.shape(query)
    s = ctx.shape(key)[1]
    h = int(heads)
    d = e // h
    factor = 1.0 / math.sqrt(d)  # torch scales the query: folded into its weight and bias

    def project(x: Expr, i: int, f: float = 1.0) -> Expr:
        w = _rows(ctx, in_weight, i * e, (i + 1) * e, f)
        bias = None if in_bias is None else _rows(ctx, in_bias, i * e, (i + 1) * e, f)
        return _linear(x, w, bias, e)

    q = _split_heads(project(query, 0, factor), b, lq, h, d)
    k = _split_heads(project(key, 1), b, s, h, d)
    v = _split_heads(project(value, 2), b, s, h, d)
    bias = _mask_bias(ctx, mask, mask_type, ctx.dtype(query))
    heads_out, probs, _ = attention(ctx, q, k, v, [b, h], scale=None, bias=bias)
    merged = op.reshape(op.transpose(heads_out, [0, 2, 1, 3]), [b, lq, e])
    out_b = None if out_bias is None else ctx.expr(out_bias)
    return _linear(merged, ctx.expr(out_weight), out_b, ctx.shape(out_weight)[0]), probs


@converter("_native_multi_head_attention")
def _native_mha(ctx: OpContext, args: list[Any]) -> list[Any]:
    # (query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias,
    #  mask, need_weights, average_attn_weights, mask_type) -> (output, weights)
    out, probs = multi_head_attention(
        ctx, args[0], args[1], args[2], int(args[4]), args[5], args[6], args[7], args[8],
        _opt(args, 9), _opt(args, 12),
    )  # fmt: skip
    if not bool(_opt(args, 10, True)):
        return [out, None]
    return [out, op.mean(probs, [1]) if bool(_opt(args, 11, True)) else probs]


def _norm(ctx: OpContext, x: Expr, weight: Any, bias: Any, eps: float) -> Expr:
    width, dt = ctx.shape(x)[-1], ctx.dtype(x)
    gamma = ctx.expr(np.ones(width, dt)) if weight is None else ctx.expr(weight)
    beta = ctx.expr(np.zeros(width, dt)) if bias is None else ctx.expr(bias)
    return nn.layer_norm(x, gamma, beta, axis=-1, epsilon=float(eps))


def _activation(ctx: OpContext, x: Expr, use_gelu: bool) -> Expr:
    if not use_gelu:
        return nn.relu(x)
    gelu, _ = lookup("gelu")  # as aten::gelu converts (the exact, erf form)
    assert gelu is not None
    return gelu(ctx, [x, "none"])


@converter("_transformer_encoder_layer_fwd")
def _encoder_layer(ctx: OpContext, args: list[Any]) -> Expr:
    # (src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
    #  norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2,
    #  ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, mask, mask_type)
    args = [*args, *[None] * (20 - len(args))]
    src = ctx.expr(args[0])
    eps = float(args[9])
    heads = int(args[2])

    def attend(x: Expr) -> Expr:
        return multi_head_attention(
            ctx, x, x, x, heads, args[3], args[4], args[5], args[6], args[18], args[19]
        )[0]

    def feed_forward(x: Expr) -> Expr:
        w1, w2 = ctx.expr(args[14]), ctx.expr(args[16])
        b1 = None if args[15] is None else ctx.expr(args[15])
        b2 = None if args[17] is None else ctx.expr(args[17])
        hidden = _activation(ctx, _linear(x, w1, b1, ctx.shape(w1)[0]), bool(args[7]))
        return _linear(hidden, w2, b2, ctx.shape(w2)[0])

    x: Expr
    if bool(args[8]):  # norm_first: x + block(norm(x))
        x = op.add(attend(_norm(ctx, src, args[10], args[11], eps)), src)
        return op.add(feed_forward(_norm(ctx, x, args[12], args[13], eps)), x)
    x = _norm(ctx, op.add(attend(src), src), args[10], args[11], eps)
    return _norm(ctx, op.add(feed_forward(x), x), args[12], args[13], eps)
