"""C emitters of 1-D and 3-D convolutions, transposed convolutions, and the pools that
:mod:`.nn` does not cover (1-D and 3-D windows, adaptive and global bins, 2-D max
pooling with the indices of the maxima).

Every operator here works on the canonical view ``N, C, spatial...`` of its tensors
through the layout's strides (``NCW``/``NWC``, ``NCDHW``/``NDHWC`` and the kernel
layouts ``OIW``, ``OIDHW``, ``IOW``...), so one loop nest serves every layout and rank.
A float32 ``NCW`` convolution is the 2-D panel convolution with a height of one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.op.nn.conv_weights import depthwise_multiplier
from relaykit.op.nn.geometry import adaptive_bounds

from .emit import CBuf, KernelContext, contiguous_strides, register_c_emitter
from .helpers import CONV_PANEL

__all__: list[str] = []

_SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


def _ints(value: Any, n: int, what: str, ctx: KernelContext) -> list[int]:
    """``value`` (an int or a sequence of 1 or ``n`` ints) as ``n`` ints."""
    items = [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]
    if len(items) == 1:
        items *= n
    if len(items) != n:
        raise ctx.error(f"{what}={value!r} must have 1 or {n} values")
    return items


def _pads(value: Any, n: int, ctx: KernelContext) -> list[int]:
    """Begin paddings of ``n`` axes from ``(p,)``, ``(begin...)`` or ``(begin..., end...)``."""
    items = [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]
    if len(items) == 1:
        return items * n
    if len(items) in (n, 2 * n):
        return items[:n]
    raise ctx.error(f"padding={value!r} must have 1, {n} or {2 * n} values")


def _strides(buf: CBuf, layout: str, canonical: str, ctx: KernelContext) -> list[int]:
    """Element strides of ``buf`` for each letter of ``canonical`` (``layout`` is its order)."""
    if sorted(layout) != sorted(canonical) or len(layout) != len(buf.shape):
        raise ctx.error(f"layout {layout} has no C lowering (use a permutation of {canonical})")
    st = contiguous_strides(buf.shape)
    return [st[layout.index(c)] for c in canonical]


def _dims(buf: CBuf, layout: str, canonical: str) -> list[int]:
    return [buf.shape[layout.index(c)] for c in canonical]


def _index(names: Sequence[str], strides: Sequence[int]) -> str:
    return " + ".join(f"{n} * {s}" for n, s in zip(names, strides, strict=True) if s) or "0"


def _conv_setup(ctx: KernelContext, transposed: bool) -> dict[str, Any]:
    a = ctx.attrs
    x, w, o = ctx.ins[0], ctx.ins[1], ctx.outs[0]
    rank = len(x.shape) - 2
    sp = _SPATIAL[rank]
    dl, kl = str(a["data_layout"]), str(a["kernel_layout"])
    ol = str(a["out_layout"] or dl)
    kcan = ("IO" if transposed else "OI") + sp
    return {
        "rank": rank,
        "xs": _strides(x, dl, "NC" + sp, ctx),
        "ws": _strides(w, kl, kcan, ctx),
        "os": _strides(o, ol, "NC" + sp, ctx),
        "xd": _dims(x, dl, "NC" + sp),
        "wd": _dims(w, kl, kcan),
        "od": _dims(o, ol, "NC" + sp),
        "s": _ints(a["strides"], rank, "strides", ctx),
        "d": _ints(a["dilation"], rank, "dilation", ctx),
        "p": _pads(a["padding"], rank, ctx),
        "groups": int(a["groups"]),
        "layouts": (dl, kl, ol),
    }


@register_c_emitter("nn.conv1d", "nn.conv3d")
def _conv_nd(ctx: KernelContext) -> None:
    g = _conv_setup(ctx, transposed=False)
    x, w, o = ctx.ins[0], ctx.ins[1], ctx.outs[0]
    rank, groups = g["rank"], g["groups"]
    n_, c_ = g["xd"][:2]
    oc, icg = g["wd"][:2]
    ws = list(g["ws"])
    mult = depthwise_multiplier(c_, oc, icg, groups, ctx.attrs.get("channels"))
    if mult is not None:  # TVM's (C, M, *K): filter c*M + m is weight[c, m]
        if ws[0] != mult * ws[1]:
            raise ctx.error(
                f"the depthwise weight with a channel multiplier in layout {g['layouts'][1]} "
                "has no C lowering: give it as (C*M, 1, ...) or with I right after O"
            )
        oc, icg, ws[0] = oc * mult, 1, ws[1]
    og = oc // groups
    k, s, d, p = g["wd"][2:], g["s"], g["d"], g["p"]
    xsp, osp = g["xd"][2:], g["od"][2:]
    panel = icg * math.prod(k)
    plain = g["layouts"] == ("NCW", "OIW", "NCW")
    if plain and o.dtype == x.dtype == w.dtype == "float32" and og >= 4 and panel >= 4:
        ctx.helpers.add("tvmgen_conv2d_nchw")
        ctx.scratch_bytes = panel * CONV_PANEL * 4
        geometry = [c_, 1, xsp[0], oc, 1, k[0], 1, osp[0], 1, s[0], 1, d[0], 0, p[0], groups]
        ctx.line(f"for (int64_t n = 0; n < {n_}; ++n)")
        ctx.line(
            f"  tvmgen_conv2d_nchw(a0 + n * {c_ * xsp[0]}, a1, o0 + n * {oc * osp[0]}, sc, "
            + ", ".join(str(v) for v in geometry)
            + ");"
        )
        return
    t = o.ctype
    xs, os_ = g["xs"], g["os"]
    ctx.line(f"for (int64_t n = 0; n < {n_}; ++n)")
    ctx.line(f"for (int64_t g = 0; g < {groups}; ++g)")
    ctx.line(f"for (int64_t q = 0; q < {og}; ++q) {{")
    ctx.line(f"  const int64_t oc = g * {og} + q;")
    depth = 1
    for r in range(rank):
        ctx.line("  " * depth + f"for (int64_t y{r} = 0; y{r} < {osp[r]}; ++y{r})")
    ctx.line("  " * depth + "{")
    ctx.line("  " * (depth + 1) + f"{t} acc = 0;")
    ctx.line("  " * (depth + 1) + f"for (int64_t ic = 0; ic < {icg}; ++ic) {{")
    xbase = f"n * {xs[0]} + (g * {icg} + ic) * {xs[1]}"
    ind = depth + 2
    for r in range(rank):
        ctx.line("  " * ind + f"for (int64_t k{r} = 0; k{r} < {k[r]}; ++k{r}) {{")
        ctx.line("  " * (ind + 1) + f"const int64_t i{r} = y{r} * {s[r]} - {p[r]} + k{r} * {d[r]};")
        ctx.line("  " * (ind + 1) + f"if (i{r} < 0 || i{r} >= {xsp[r]}) continue;")
        ind += 1
    xi = xbase + " + " + _index([f"i{r}" for r in range(rank)], xs[2:])
    wi = f"oc * {ws[0]} + ic * {ws[1]} + " + _index([f"k{r}" for r in range(rank)], ws[2:])
    ctx.line("  " * ind + f"acc += ({t})a0[{xi}] * ({t})a1[{wi}];")
    for _ in range(rank):
        ind -= 1
        ctx.line("  " * ind + "}")
    ctx.line("  " * (depth + 1) + "}")
    oi = f"n * {os_[0]} + oc * {os_[1]} + " + _index([f"y{r}" for r in range(rank)], os_[2:])
    ctx.line("  " * (depth + 1) + f"o0[{oi}] = acc;")
    ctx.line("  " * depth + "}")
    ctx.line("}")


@register_c_emitter("nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose")
def _conv_transpose(ctx: KernelContext) -> None:
    """Each input element, times the kernel, added into the output window it spreads to
    (``out = in * stride + tap * dilation - pad_begin``, clipped to the output)."""
    g = _conv_setup(ctx, transposed=True)
    o = ctx.outs[0]
    rank, groups = g["rank"], g["groups"]
    n_, c_ = g["xd"][:2]
    og = g["wd"][1]
    icg = c_ // groups
    k, s, d, p = g["wd"][2:], g["s"], g["d"], g["p"]
    xsp, osp = g["xd"][2:], g["od"][2:]
    xs, ws, os_ = g["xs"], g["ws"], g["os"]
    t = o.ctype
    ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) o0[i] = 0;")
    ctx.line(f"for (int64_t n = 0; n < {n_}; ++n)")
    ctx.line(f"for (int64_t g = 0; g < {groups}; ++g)")
    ctx.line(f"for (int64_t c = 0; c < {icg}; ++c) {{")
    ctx.line(f"  const int64_t ic = g * {icg} + c;")
    for r in range(rank):
        ctx.line(f"  for (int64_t i{r} = 0; i{r} < {xsp[r]}; ++i{r})")
    ctx.line("  {")
    xi = f"n * {xs[0]} + ic * {xs[1]} + " + _index([f"i{r}" for r in range(rank)], xs[2:])
    ctx.line(f"    const {t} xv = ({t})a0[{xi}];")
    ctx.line(f"    for (int64_t q = 0; q < {og}; ++q) {{")
    ind = 3
    for r in range(rank):
        ctx.line("  " * ind + f"for (int64_t k{r} = 0; k{r} < {k[r]}; ++k{r}) {{")
        ctx.line("  " * (ind + 1) + f"const int64_t y{r} = i{r} * {s[r]} + k{r} * {d[r]} - {p[r]};")
        ctx.line("  " * (ind + 1) + f"if (y{r} < 0 || y{r} >= {osp[r]}) continue;")
        ind += 1
    wi = f"ic * {ws[0]} + q * {ws[1]} + " + _index([f"k{r}" for r in range(rank)], ws[2:])
    oi = f"n * {os_[0]} + (g * {og} + q) * {os_[1]} + " + _index(
        [f"y{r}" for r in range(rank)], os_[2:]
    )
    ctx.line("  " * ind + f"o0[{oi}] += xv * ({t})a1[{wi}];")
    for _ in range(rank):
        ind -= 1
        ctx.line("  " * ind + "}")
    ctx.line("    }")
    ctx.line("  }")
    ctx.line("}")


def _pool_layout(
    ctx: KernelContext, rank: int
) -> tuple[list[int], list[int], list[int], list[int]]:
    """Canonical dims and strides of the data and the output of a pool."""
    x, o = ctx.ins[0], ctx.outs[0]
    layout = str(ctx.attrs["layout"])
    out_layout = str(ctx.attrs.get("out_layout") or layout)
    can = "NC" + _SPATIAL[rank]
    return (
        _dims(x, layout, can),
        _strides(x, layout, can, ctx),
        _dims(o, out_layout, can),
        _strides(o, out_layout, can, ctx),
    )


def _reduce_windows(
    ctx: KernelContext, rank: int, is_max: bool, bounds: str, count: str | None
) -> None:
    """Shared pool body: ``bounds`` declares ``lo{r}, hi{r}, st{r}`` (window start,
    end and step in the input) for output coordinate ``y{r}``; ``count`` is the divisor
    of an average (None: the number of positions read)."""
    xd, xs, od, os_ = _pool_layout(ctx, rank)
    t = ctx.outs[0].ctype
    acc_t = t if is_max else "double"
    ctx.line(f"for (int64_t n = 0; n < {xd[0]}; ++n)")
    ctx.line(f"for (int64_t c = 0; c < {xd[1]}; ++c)")
    for r in range(rank):
        ctx.line(f"for (int64_t y{r} = 0; y{r} < {od[2 + r]}; ++y{r})")
    ctx.line("{")
    ctx.line(f"  const {ctx.ins[0].ctype} *px = a0 + n * {xs[0]} + c * {xs[1]};")
    for line in bounds.splitlines():
        ctx.line("  " + line)
    ctx.line(f"  {acc_t} acc = {'-INFINITY' if is_max else '0'};")
    ctx.line("  int64_t cnt = 0;")
    for r in range(rank):
        ctx.line("  " * (r + 1) + f"for (int64_t i{r} = lo{r}; i{r} < hi{r}; i{r} += st{r}) {{")
        ctx.line("  " * (r + 2) + f"if (i{r} < 0 || i{r} >= {xd[2 + r]}) continue;")
    inner = "  " * (rank + 1)
    ctx.line(inner + f"const {t} v = px[{_index([f'i{r}' for r in range(rank)], xs[2:])}];")
    ctx.line(inner + ("if (v > acc || v != v) acc = v;" if is_max else "acc += v;"))
    ctx.line(inner + "++cnt;")
    for r in range(rank - 1, -1, -1):
        ctx.line("  " * (r + 1) + "}")
    oi = f"n * {os_[0]} + c * {os_[1]} + " + _index([f"y{r}" for r in range(rank)], os_[2:])
    if is_max:
        ctx.line(f"  o0[{oi}] = acc;")
    else:
        div = count or "cnt"
        ctx.line(f"  o0[{oi}] = ({t})({div} > 0 ? acc / (double)({div}) : 0);")
    ctx.line("}")


@register_c_emitter("nn.max_pool1d", "nn.avg_pool1d", "nn.max_pool3d", "nn.avg_pool3d")
def _pool_nd(ctx: KernelContext) -> None:
    a = ctx.attrs
    rank = len(ctx.ins[0].shape) - 2
    k = _ints(a["pool_size"], rank, "pool_size", ctx)
    s = _ints(a["strides"], rank, "strides", ctx)
    d = _ints(a["dilation"], rank, "dilation", ctx)
    pad = (
        [int(v) for v in a["padding"]]
        if isinstance(a["padding"], (list, tuple))
        else [int(a["padding"])]
    )
    if len(pad) == 1:
        pad *= 2 * rank
    elif len(pad) == rank:
        pad = pad + pad
    if len(pad) != 2 * rank:
        raise ctx.error(f"padding={a['padding']!r} must have 1, {rank} or {2 * rank} values")
    pb, pe = pad[:rank], pad[rank:]
    is_max = ctx.node.name.startswith("nn.max")
    xd = _pool_layout(ctx, rank)[0]
    lines = []
    for r in range(rank):
        lines.append(
            f"const int64_t lo{r} = y{r} * {s[r]} - {pb[r]}, "
            f"hi{r} = lo{r} + {(k[r] - 1) * d[r] + 1}, st{r} = {d[r]};"
        )
    count = None
    if not is_max and a.get("count_include_pad"):
        # padded positions count, never those past the end padding (ceil mode)
        for r in range(rank):
            lines.append(
                f"const int64_t e{r} = hi{r} < {xd[2 + r] + pe[r]} ? hi{r} : {xd[2 + r] + pe[r]};"
            )
            lines.append(
                f"const int64_t n{r} = e{r} > lo{r} ? (e{r} - lo{r} + {d[r] - 1}) / {d[r]} : 0;"
            )
        count = " * ".join(f"n{r}" for r in range(rank))
    _reduce_windows(ctx, rank, is_max, "\n".join(lines), count)


@register_c_emitter(
    "nn.adaptive_avg_pool1d",
    "nn.adaptive_max_pool1d",
    "nn.adaptive_avg_pool2d",
    "nn.adaptive_max_pool2d",
    "nn.adaptive_avg_pool3d",
    "nn.adaptive_max_pool3d",
    "nn.global_avg_pool1d",
    "nn.global_max_pool1d",
)
def _adaptive_pool(ctx: KernelContext) -> None:
    rank = len(ctx.ins[0].shape) - 2
    xd, _, od, _ = _pool_layout(ctx, rank)
    lines = []
    for r in range(rank):
        lo, hi = adaptive_bounds(xd[2 + r], od[2 + r])
        tl = ctx.table("int32_t", np.asarray(lo).tolist(), f"lo{r}_")
        th = ctx.table("int32_t", np.asarray(hi).tolist(), f"hi{r}_")
        lines.append(f"const int64_t lo{r} = {tl}[y{r}], hi{r} = {th}[y{r}], st{r} = 1;")
    _reduce_windows(ctx, rank, "max" in ctx.node.name, "\n".join(lines), None)


@register_c_emitter("nn.max_pool2d_with_argmax")
def _max_pool2d_with_argmax(ctx: KernelContext) -> None:
    """NCHW max pooling that also writes the flat index (``n, c, h, w`` row-major, or
    ``w`` before ``h`` with ``storage_order=1``) of each window's first maximum."""
    a = ctx.attrs
    x, o = ctx.ins[0], ctx.outs[0]
    n_, c_, h_, w_ = x.shape
    oh_, ow_ = o.shape[2], o.shape[3]
    kh, kw = _ints(a["pool_size"], 2, "pool_size", ctx)
    sh, sw = _ints(a["strides"], 2, "strides", ctx)
    dh, dw = _ints(a["dilation"], 2, "dilation", ctx)
    pt, pl = _pads(a["padding"], 2, ctx)
    where = f"w * {h_} + h" if int(a["storage_order"]) else f"h * {w_} + w"
    ctx.line(f"for (int64_t p = 0; p < {n_ * c_}; ++p)")
    ctx.line(f"for (int64_t y = 0; y < {oh_}; ++y)")
    ctx.line(f"for (int64_t z = 0; z < {ow_}; ++z) {{")
    ctx.line(f"  const {x.ctype} *px = a0 + p * {h_ * w_};")
    ctx.line(f"  {x.ctype} best = 0;")
    ctx.line("  int64_t arg = -1;")
    ctx.line(f"  for (int64_t i = 0; i < {kh}; ++i) {{")
    ctx.line(f"    const int64_t h = y * {sh} - {pt} + i * {dh};")
    ctx.line(f"    if (h < 0 || h >= {h_}) continue;")
    ctx.line(f"    for (int64_t j = 0; j < {kw}; ++j) {{")
    ctx.line(f"      const int64_t w = z * {sw} - {pl} + j * {dw};")
    ctx.line(f"      if (w < 0 || w >= {w_}) continue;")
    ctx.line(f"      if (arg < 0 || px[h * {w_} + w] > best) {{")
    ctx.line(f"        best = px[h * {w_} + w]; arg = p * {h_ * w_} + {where};")
    ctx.line("      }")
    ctx.line("    }")
    ctx.line("  }")
    ctx.line(f"  o0[(p * {oh_} + y) * {ow_} + z] = best;")
    ctx.line(f"  o1[(p * {oh_} + y) * {ow_} + z] = arg;")
    ctx.line("}")
