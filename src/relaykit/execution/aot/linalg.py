"""C emitters of ``nn.dense``, ``nn.matmul``, ``nn.batch_matmul`` and ``nn.conv2d``.

Matrix products choose their loop order from the operands' strides: when the right
operand's rows are contiguous, each output row is accumulated as ``out[n] += a * b[n]``
(a contiguous inner loop the compiler vectorises); otherwise each output is a dot
product over contiguous ``k``. Convolutions accumulate output rows (NCHW) or output
channels (NHWC) the same way, for any groups, strides, dilation and padding.
"""

from __future__ import annotations

from typing import Any

from relaykit.op.nn.conv_weights import depthwise_multiplier
from relaykit.op.nn.geometry import pad4, pair

from .emit import KernelContext, contiguous_strides, register_c_emitter
from .helpers import CONV_PANEL

__all__: list[str] = []


def _matmul(
    ctx: KernelContext,
    batch: int,
    m: int,
    k: int,
    n: int,
    a_st: tuple[int, int, int],
    b_st: tuple[int, int, int],
) -> None:
    """out[b, m, n] = sum_k a[b*sab + m*sam + k*sak] * b[b*sbb + k*sbk + n*sbn]."""
    sab, sam, sak = a_st
    sbb, sbk, sbn = b_st
    t, xt, wt = ctx.outs[0].ctype, ctx.ins[0].ctype, ctx.ins[1].ctype
    ctx.line(f"for (int64_t b = 0; b < {batch}; ++b) {{")
    ctx.line(f"  const {xt} *pa = a0 + b * {sab};")
    ctx.line(f"  const {wt} *pb = a1 + b * {sbb};")
    ctx.line(f"  {t} *po = o0 + b * {m * n};")
    ctx.line(f"  for (int64_t i = 0; i < {m}; ++i) {{")
    if sbn == 1:
        ctx.line(f"    {t} *row = po + i * {n};")
        ctx.line(f"    for (int64_t j = 0; j < {n}; ++j) row[j] = 0;")
        ctx.line(f"    for (int64_t q = 0; q < {k}; ++q) {{")
        ctx.line(f"      const {t} av = pa[i * {sam} + q * {sak}];")
        ctx.line(f"      const {wt} *brow = pb + q * {sbk};")
        ctx.line(f"      for (int64_t j = 0; j < {n}; ++j) row[j] += av * brow[j];")
        ctx.line("    }")
    else:
        ctx.line(f"    for (int64_t j = 0; j < {n}; ++j) {{")
        ctx.line(f"      {t} acc = 0;")
        ctx.line(
            f"      for (int64_t q = 0; q < {k}; ++q) "
            f"acc += pa[i * {sam} + q * {sak}] * pb[j * {sbn} + q * {sbk}];"
        )
        ctx.line(f"      po[i * {n} + j] = acc;")
        ctx.line("    }")
    ctx.line("  }")
    ctx.line("}")


@register_c_emitter("nn.dense")
def _dense(ctx: KernelContext) -> None:
    x, w = ctx.ins[0], ctx.ins[1]
    k = x.shape[-1]
    m = x.size // k if k else 0
    n = w.shape[0]
    if x.dtype == w.dtype == ctx.outs[0].dtype == "float32" and k:
        if m >= 4:
            ctx.helpers.add("tvmgen_dense_panels")
            ctx.scratch_bytes = k * CONV_PANEL * 4
            ctx.line(f"tvmgen_dense_panels(a0, a1, o0, sc, {m}, {n}, {k});")
        else:
            ctx.helpers.add("tvmgen_dense")
            ctx.line(f"tvmgen_dense(a0, a1, o0, {m}, {n}, {k});")
        return
    _matmul(ctx, 1, m, k, n, (0, k, 1), (0, 1, k))


@register_c_emitter("nn.matmul")
def _matmul2d(ctx: KernelContext) -> None:
    a, b = ctx.ins[0], ctx.ins[1]
    ta, tb = bool(ctx.attrs["transpose_a"]), bool(ctx.attrs["transpose_b"])
    m, k = (a.shape[1], a.shape[0]) if ta else (a.shape[0], a.shape[1])
    n = b.shape[0] if tb else b.shape[1]
    a_st = (0, 1, m) if ta else (0, k, 1)
    b_st = (0, 1, k) if tb else (0, n, 1)
    _matmul(ctx, 1, m, k, n, a_st, b_st)


@register_c_emitter("nn.batch_matmul")
def _batch_matmul(ctx: KernelContext) -> None:
    a, b = ctx.ins[0], ctx.ins[1]
    o = ctx.outs[0]
    ta, tb = bool(ctx.attrs["transpose_a"]), bool(ctx.attrs["transpose_b"])
    batch, m, n = o.shape
    k = a.shape[1] if ta else a.shape[2]
    sab = 0 if a.shape[0] == 1 else a.shape[1] * a.shape[2]
    sbb = 0 if b.shape[0] == 1 else b.shape[1] * b.shape[2]
    a_st = (sab, 1, m) if ta else (sab, k, 1)
    b_st = (sbb, 1, k) if tb else (sbb, n, 1)
    _matmul(ctx, batch, m, k, n, a_st, b_st)


def _layout_strides(layout: str, shape: tuple[int, ...], axes: str) -> list[int]:
    """Element strides of the axes named in ``axes`` for a tensor in ``layout``."""
    st = contiguous_strides(shape)
    return [st[layout.index(c)] for c in axes]


@register_c_emitter("nn.conv2d")
def _conv2d(ctx: KernelContext) -> None:
    a = ctx.attrs
    x, w = ctx.ins[0], ctx.ins[1]
    o = ctx.outs[0]
    dl, kl = str(a["data_layout"]), str(a["kernel_layout"])
    ol = str(a["out_layout"] or dl)
    if sorted(dl) != sorted("NCHW") or sorted(kl) != sorted("OIHW") or sorted(ol) != sorted("NCHW"):
        raise ctx.error(f"layouts {dl}/{kl}/{ol} have no C lowering (use NCHW or NHWC)")
    n_, c_, h_, w_ = (x.shape[dl.index(ch)] for ch in "NCHW")
    oc, ic_g, kh_, kw_ = (w.shape[kl.index(ch)] for ch in "OIHW")
    oh_, ow_ = (o.shape[ol.index(ch)] for ch in "HW")
    sh, sw = pair(a["strides"], "strides")
    dh, dw = pair(a["dilation"], "dilation")
    pt, pl, _, _ = pad4(a["padding"])
    groups = int(a["groups"])
    xs = dict(zip("NCHW", _layout_strides(dl, x.shape, "NCHW"), strict=True))
    ws = dict(zip("OIHW", _layout_strides(kl, w.shape, "OIHW"), strict=True))
    mult = depthwise_multiplier(c_, oc, ic_g, groups, a.get("channels"))
    if mult is not None:  # TVM's (C, M, kh, kw): filter c*M + m is weight[c, m]
        if ws["O"] != mult * ws["I"]:
            raise ctx.error(
                f"the depthwise weight with a channel multiplier in layout {kl} has no C "
                "lowering: give it as (C*M, 1, kh, kw) or in OIHW / HWOI"
            )
        oc, ic_g, ws["O"] = oc * mult, 1, ws["I"]
    og = oc // groups
    os_ = dict(zip("NCHW", _layout_strides(ol, o.shape, "NCHW"), strict=True))
    geo = (o.ctype, n_, h_, w_, oh_, ow_, kh_, kw_, ic_g, og, sh, sw, dh, dw, pt, pl, xs, ws, os_)
    panel = ic_g * kh_ * kw_
    nchw = dl == ol == "NCHW" and kl == "OIHW"
    if nchw and o.dtype == x.dtype == w.dtype == "float32" and og >= 4 and panel >= 4:
        ctx.helpers.add("tvmgen_conv2d_nchw")
        ctx.scratch_bytes = panel * CONV_PANEL * 4
        geometry = [c_, h_, w_, oc, kh_, kw_, oh_, ow_, sh, sw, dh, dw, pt, pl, groups]
        ctx.line(f"for (int64_t n = 0; n < {n_}; ++n)")
        ctx.line(
            f"  tvmgen_conv2d_nchw(a0 + n * {c_ * h_ * w_}, a1, o0 + n * {oc * oh_ * ow_}, sc, "
            + ", ".join(str(int(v)) for v in geometry)
            + ");"
        )
        return
    ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) o0[i] = 0;")
    ctx.line(f"for (int64_t n = 0; n < {n_}; ++n)")
    ctx.line(f"for (int64_t g = 0; g < {groups}; ++g)")
    if nchw:
        _conv_padded_rows(ctx, geo)
    elif os_["W"] == 1 or os_["C"] != 1:
        _conv_rows(ctx, geo)
    else:
        _conv_channels(ctx, geo)


def _conv_padded_rows(ctx: KernelContext, geo: tuple[Any, ...]) -> None:
    """NCHW (depthwise and narrow groups): each input plane is copied once into a
    zero-padded plane in scratch, so every output row is one loop of constant length."""
    (t, _, h_, w_, oh_, ow_, kh_, kw_, ic_g, og, sh, sw, dh, dw, pt, pl, xs, ws, os_) = geo
    xt, wt = ctx.ins[0].ctype, ctx.ins[1].ctype
    ph = max(h_ + pt, (oh_ - 1) * sh + (kh_ - 1) * dh + 1)
    pw = max(w_ + pl, (ow_ - 1) * sw + (kw_ - 1) * dw + 1)
    ctx.scratch_bytes = ph * pw * 8  # float64 at most
    ctx.line(f"for (int64_t ic = 0; ic < {ic_g}; ++ic) {{")
    ctx.line(f"  {xt} *pad = ({xt} *)sc;")
    ctx.line(f"  const {xt} *px = a0 + n * {xs['N']} + (g * {ic_g} + ic) * {xs['C']};")
    ctx.line(f"  for (int64_t i = 0; i < {ph * pw}; ++i) pad[i] = 0;")
    ctx.line(f"  for (int64_t i = 0; i < {h_}; ++i)")
    ctx.line(f"    memcpy(pad + (i + {pt}) * {pw} + {pl}, px + i * {w_}, {w_} * sizeof({xt}));")
    ctx.line(f"  for (int64_t oc = g * {og}; oc < (g + 1) * {og}; ++oc)")
    ctx.line(f"  for (int64_t kh = 0; kh < {kh_}; ++kh)")
    ctx.line(f"  for (int64_t kw = 0; kw < {kw_}; ++kw) {{")
    widx = f"oc * {ws['O']} + ic * {ws['I']} + kh * {ws['H']} + kw * {ws['W']}"
    ctx.line(f"    const {wt} wv = a1[{widx}];")
    ctx.line(f"    for (int64_t oh = 0; oh < {oh_}; ++oh) {{")
    ctx.line(f"      const {xt} *restrict row = pad + (oh * {sh} + kh * {dh}) * {pw} + kw * {dw};")
    ctx.line(f"      {t} *restrict orow = o0 + n * {os_['N']} + oc * {os_['C']} + oh * {ow_};")
    ctx.line(f"      for (int64_t ow = 0; ow < {ow_}; ++ow) orow[ow] += wv * row[ow * {sw}];")
    ctx.line("    }")
    ctx.line("  }")
    ctx.line("}")


def _conv_rows(ctx: KernelContext, geo: tuple[Any, ...]) -> None:
    """NCHW-like: accumulate output rows along W (contiguous in input and output)."""
    (t, _, h_, w_, oh_, ow_, kh_, kw_, ic_g, og, sh, sw, dh, dw, pt, pl, xs, ws, os_) = geo
    xt, wt = ctx.ins[0].ctype, ctx.ins[1].ctype
    ctx.line(f"for (int64_t oc = g * {og}; oc < (g + 1) * {og}; ++oc)")
    ctx.line(f"for (int64_t ic = 0; ic < {ic_g}; ++ic)")
    ctx.line(f"for (int64_t kh = 0; kh < {kh_}; ++kh)")
    ctx.line(f"for (int64_t kw = 0; kw < {kw_}; ++kw) {{")
    widx = f"oc * {ws['O']} + ic * {ws['I']} + kh * {ws['H']} + kw * {ws['W']}"
    ctx.line(f"  const {wt} wv = a1[{widx}];")
    ctx.line(f"  const int64_t off = kw * {dw} - {pl};")
    ctx.line(f"  const int64_t lo = off >= 0 ? 0 : (-off + {sw - 1}) / {sw};")
    ctx.line(f"  int64_t hi = {w_} - 1 - off < 0 ? 0 : ({w_} - 1 - off) / {sw} + 1;")
    ctx.line(f"  if (hi > {ow_}) hi = {ow_};")
    ctx.line(f"  const {xt} *px = a0 + n * {xs['N']} + (g * {ic_g} + ic) * {xs['C']};")
    ctx.line(f"  {t} *po = o0 + n * {os_['N']} + oc * {os_['C']};")
    ctx.line(f"  for (int64_t oh = 0; oh < {oh_}; ++oh) {{")
    ctx.line(f"    const int64_t ih = oh * {sh} - {pt} + kh * {dh};")
    ctx.line(f"    if (ih < 0 || ih >= {h_}) continue;")
    ctx.line(f"    const {xt} *row = px + ih * {xs['H']};")
    ctx.line(f"    {t} *orow = po + oh * {os_['H']};")
    ctx.line(
        f"    for (int64_t ow = lo; ow < hi; ++ow) "
        f"orow[ow * {os_['W']}] += wv * row[(ow * {sw} + off) * {xs['W']}];"
    )
    ctx.line("  }")
    ctx.line("}")


def _conv_channels(ctx: KernelContext, geo: tuple[Any, ...]) -> None:
    """NHWC-like: accumulate the group's output channels (contiguous in the output)."""
    (t, _, h_, w_, oh_, ow_, kh_, kw_, ic_g, og, sh, sw, dh, dw, pt, pl, xs, ws, os_) = geo
    xt, wt = ctx.ins[0].ctype, ctx.ins[1].ctype
    ctx.line(f"for (int64_t oh = 0; oh < {oh_}; ++oh)")
    ctx.line(f"for (int64_t ow = 0; ow < {ow_}; ++ow) {{")
    ctx.line(f"  {t} *po = o0 + n * {os_['N']} + oh * {os_['H']} + ow * {os_['W']} + g * {og};")
    ctx.line(f"  for (int64_t kh = 0; kh < {kh_}; ++kh) {{")
    ctx.line(f"    const int64_t ih = oh * {sh} - {pt} + kh * {dh};")
    ctx.line(f"    if (ih < 0 || ih >= {h_}) continue;")
    ctx.line(f"    for (int64_t kw = 0; kw < {kw_}; ++kw) {{")
    ctx.line(f"      const int64_t iw = ow * {sw} - {pl} + kw * {dw};")
    ctx.line(f"      if (iw < 0 || iw >= {w_}) continue;")
    xoff = f"n * {xs['N']} + ih * {xs['H']} + iw * {xs['W']} + g * {ic_g * xs['C']}"
    ctx.line(f"      const {xt} *px = a0 + {xoff};")
    ctx.line(f"      const {wt} *pw = a1 + g * {og} * {ws['O']} + kh * {ws['H']} + kw * {ws['W']};")
    ctx.line(f"      for (int64_t ic = 0; ic < {ic_g}; ++ic) {{")
    ctx.line(f"        const {xt} xv = px[ic * {xs['C']}];")
    ctx.line(f"        const {wt} *pwi = pw + ic * {ws['I']};")
    ctx.line(f"        for (int64_t j = 0; j < {og}; ++j) po[j] += xv * pwi[j * {ws['O']}];")
    ctx.line("      }")
    ctx.line("    }")
    ctx.line("  }")
    ctx.line("}")
