"""C emitters of pooling, softmax, layer / instance / group normalisation and reductions.

Softmax and layer norm work on an ``outer x axis x inner`` view of the tensor; pooling
reads the layout's strides, so NCHW and NHWC share one loop nest.
"""

from __future__ import annotations

import math

from relaykit.op.nn.geometry import pad4, pair

from .emit import (
    KernelContext,
    broadcast_strides,
    c_float,
    contiguous_strides,
    nd_loop,
    register_c_emitter,
)

__all__: list[str] = []


def _split(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    axis %= len(shape)
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])


@register_c_emitter("nn.softmax", "nn.fast_softmax", "nn.log_softmax")
def _softmax(ctx: KernelContext) -> None:
    o = ctx.outs[0]
    outer, n, inner = _split(o.shape, int(ctx.attrs["axis"]))
    t, exp, log = o.ctype, ctx.math_fn("exp", o.dtype), ctx.math_fn("log", o.dtype)
    log_sm = ctx.node.name == "nn.log_softmax"
    ctx.line(f"for (int64_t p = 0; p < {outer}; ++p)")
    ctx.line(f"for (int64_t q = 0; q < {inner}; ++q) {{")
    ctx.line(f"  const {t} *x = a0 + p * {n * inner} + q;")
    ctx.line(f"  {t} *y = o0 + p * {n * inner} + q;")
    ctx.line(f"  {t} mx = x[0];")
    ctx.line(f"  for (int64_t i = 1; i < {n}; ++i) if (x[i * {inner}] > mx) mx = x[i * {inner}];")
    ctx.line(f"  {t} s = 0;")
    if log_sm:
        ctx.line(f"  for (int64_t i = 0; i < {n}; ++i) s += {exp}(x[i * {inner}] - mx);")
        ctx.line(f"  const {t} ls = {log}(s);")
        ctx.line(f"  for (int64_t i = 0; i < {n}; ++i) y[i * {inner}] = x[i * {inner}] - mx - ls;")
    else:
        ctx.line(f"  for (int64_t i = 0; i < {n}; ++i) {{")
        ctx.line(f"    y[i * {inner}] = {exp}(x[i * {inner}] - mx);")
        ctx.line(f"    s += y[i * {inner}];")
        ctx.line("  }")
        ctx.line(f"  const {t} r = 1 / s;")
        ctx.line(f"  for (int64_t i = 0; i < {n}; ++i) y[i * {inner}] *= r;")
    ctx.line("}")


@register_c_emitter("nn.layer_norm")
def _layer_norm(ctx: KernelContext) -> None:
    o = ctx.outs[0]
    outer, n, inner = _split(o.shape, int(ctx.attrs["axis"]))
    eps = c_float(float(ctx.attrs["epsilon"]), "float64")
    t = o.ctype
    scale = "a1[i]" if ctx.attrs["scale"] else "1"
    shift = "a2[i]" if ctx.attrs["center"] else "0"
    ctx.line(f"for (int64_t p = 0; p < {outer}; ++p)")
    ctx.line(f"for (int64_t q = 0; q < {inner}; ++q) {{")
    ctx.line(f"  const {t} *x = a0 + p * {n * inner} + q;")
    ctx.line(f"  {t} *y = o0 + p * {n * inner} + q;")
    ctx.line("  double m = 0, v = 0;")
    ctx.line(f"  for (int64_t i = 0; i < {n}; ++i) m += x[i * {inner}];")
    ctx.line(f"  m /= {n};")
    ctx.line(
        f"  for (int64_t i = 0; i < {n}; ++i) {{ double d = x[i * {inner}] - m; v += d * d; }}"
    )
    ctx.line(f"  const {t} r = ({t})(1.0 / sqrt(v / {n} + {eps}));")
    ctx.line(f"  const {t} mf = ({t})m;")
    norm = f"(x[i * {inner}] - mf) * r * {scale} + {shift}"
    ctx.line(f"  for (int64_t i = 0; i < {n}; ++i) y[i * {inner}] = {norm};")
    ctx.line("}")


@register_c_emitter("nn.instance_norm", "nn.group_norm")
def _group_norm(ctx: KernelContext) -> None:
    """Per sample and group of channels (instance norm: one channel a group), over the
    group's channels and every other non-batch axis; sums in double."""
    o = ctx.outs[0]
    shape = o.shape
    axis = int(ctx.attrs["axis"]) % len(shape)
    if axis == 0:
        raise ctx.error("the channel axis is the batch axis: no C lowering")
    n_, c_ = shape[0], shape[axis]
    p_, q_ = math.prod(shape[1:axis]), math.prod(shape[axis + 1 :])
    groups = int(ctx.attrs["num_groups"]) if ctx.node.name == "nn.group_norm" else c_
    per, count = c_ // groups, (c_ // groups) * p_ * q_
    eps = c_float(float(ctx.attrs["epsilon"]), "float64")
    t = o.ctype
    scale = "a1[c]" if ctx.attrs["scale"] else "1"
    shift = "a2[c]" if ctx.attrs["center"] else "0"
    index = f"n * {p_ * c_ * q_} + p * {c_ * q_} + c * {q_} + q"
    loops = (
        f"for (int64_t p = 0; p < {p_}; ++p) "
        f"for (int64_t c = g * {per}; c < (g + 1) * {per}; ++c) "
        f"for (int64_t q = 0; q < {q_}; ++q)"
    )
    ctx.line(f"for (int64_t n = 0; n < {n_}; ++n)")
    ctx.line(f"for (int64_t g = 0; g < {groups}; ++g) {{")
    ctx.line("  double m = 0, v = 0;")
    ctx.line(f"  {loops} m += a0[{index}];")
    ctx.line(f"  m /= {count};")
    ctx.line(f"  {loops} {{ double d = a0[{index}] - m; v += d * d; }}")
    ctx.line(f"  const double r = 1.0 / sqrt(v / {count} + {eps});")
    ctx.line(f"  {loops} o0[{index}] = ({t})((a0[{index}] - m) * r * {scale} + {shift});")
    ctx.line("}")


_REDUCE_INIT = {"sum": "0", "mean": "0", "prod": "1", "max": "-INFINITY", "min": "INFINITY"}


def _reduce_axes(ctx: KernelContext, ndim: int) -> list[int]:
    axis = ctx.attrs.get("axis")
    if axis is None:
        axes = list(range(ndim))
    else:
        axes = sorted(
            {int(a) % ndim for a in (axis if isinstance(axis, (list, tuple)) else [axis])}
        )
    if ctx.attrs.get("exclude"):
        axes = [d for d in range(ndim) if d not in axes]
    return axes


@register_c_emitter("sum", "mean", "prod", "max", "min", "all", "any")
def _reduce(ctx: KernelContext) -> None:
    x, o = ctx.ins[0], ctx.outs[0]
    name = ctx.node.name
    axes = _reduce_axes(ctx, len(x.shape))
    kept = [d for d in range(len(x.shape)) if d not in axes]
    ost = contiguous_strides([x.shape[d] for d in kept])
    out_strides = [0] * len(x.shape)
    for d, s in zip(kept, ost, strict=True):
        out_strides[d] = s
    integer = o.dtype not in ("float32", "float64")
    init = {"all": "1", "any": "0"}.get(name, _REDUCE_INIT.get(name, "0"))
    if integer and name in ("max", "min"):
        init = f"(({o.ctype})a0[0])"
    ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) o0[i] = {init};")
    update = {
        "sum": "o0[{o}] += a0[{x}];",
        "mean": "o0[{o}] += a0[{x}];",
        "prod": "o0[{o}] *= a0[{x}];",
        "max": "if (a0[{x}] > o0[{o}] || a0[{x}] != a0[{x}]) o0[{o}] = a0[{x}];",
        "min": "if (a0[{x}] < o0[{o}] || a0[{x}] != a0[{x}]) o0[{o}] = a0[{x}];",
        "all": "o0[{o}] = o0[{o}] && a0[{x}];",
        "any": "o0[{o}] = o0[{o}] || a0[{x}];",
    }[name]
    nd_loop(
        ctx,
        x.shape,
        [out_strides, contiguous_strides(x.shape)],
        lambda ix: update.format(o=ix[0], x=ix[1]),
    )
    if name == "mean":
        count = math.prod(x.shape[d] for d in axes)
        ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) o0[i] /= {count};")


def _pool_geometry(ctx: KernelContext, layout: str) -> dict[str, int]:
    x, o = ctx.ins[0], ctx.outs[0]
    if sorted(layout) != sorted("NCHW"):
        raise ctx.error(f"layout {layout} has no C lowering (use NCHW or NHWC)")
    xs = contiguous_strides(x.shape)
    os_ = contiguous_strides(o.shape)
    g = {f"x{c}": xs[layout.index(c)] for c in "NCHW"}
    g.update({f"o{c}": os_[layout.index(c)] for c in "NCHW"})
    g.update({c: x.shape[layout.index(c)] for c in "NCHW"})
    g["OH"], g["OW"] = o.shape[layout.index("H")], o.shape[layout.index("W")]
    return g


@register_c_emitter("nn.max_pool2d", "nn.avg_pool2d")
def _pool2d(ctx: KernelContext) -> None:
    a = ctx.attrs
    layout = str(a["layout"])
    g = _pool_geometry(ctx, layout)
    kh, kw = pair(a["pool_size"], "pool_size")
    sh, sw = pair(a["strides"], "strides")
    dh, dw = pair(a["dilation"], "dilation")
    pt, pl, pb, pr = pad4(a["padding"])
    is_max = ctx.node.name == "nn.max_pool2d"
    t = ctx.outs[0].ctype
    ctx.line(f"for (int64_t n = 0; n < {g['N']}; ++n)")
    ctx.line(f"for (int64_t c = 0; c < {g['C']}; ++c)")
    ctx.line(f"for (int64_t oh = 0; oh < {g['OH']}; ++oh)")
    ctx.line(f"for (int64_t ow = 0; ow < {g['OW']}; ++ow) {{")
    ctx.line(f"  const {t} *px = a0 + n * {g['xN']} + c * {g['xC']};")
    ctx.line(f"  {t} acc = {'-INFINITY' if is_max else '0'};")
    ctx.line("  int64_t cnt = 0;")
    ctx.line(f"  for (int64_t i = 0; i < {kh}; ++i) {{")
    ctx.line(f"    const int64_t ih = oh * {sh} - {pt} + i * {dh};")
    ctx.line(f"    if (ih < 0 || ih >= {g['H']}) continue;")
    ctx.line(f"    for (int64_t j = 0; j < {kw}; ++j) {{")
    ctx.line(f"      const int64_t iw = ow * {sw} - {pl} + j * {dw};")
    ctx.line(f"      if (iw < 0 || iw >= {g['W']}) continue;")
    ctx.line(f"      const {t} v = px[ih * {g['xH']} + iw * {g['xW']}];")
    if is_max:
        ctx.line("      if (v > acc || v != v) acc = v;")
    else:
        ctx.line("      acc += v;")
    ctx.line("      ++cnt;")
    ctx.line("    }")
    ctx.line("  }")
    if not is_max:
        if a["count_include_pad"]:
            # TVM counts the padded window, clipped to the padded input.
            ctx.line(f"  int64_t h0 = oh * {sh} - {pt}, w0 = ow * {sw} - {pl};")
            ctx.line(f"  int64_t h1 = h0 + ({kh} - 1) * {dh} + 1, w1 = w0 + ({kw} - 1) * {dw} + 1;")
            ctx.line(f"  if (h1 > {g['H'] + pb}) h1 = {g['H'] + pb};")
            ctx.line(f"  if (w1 > {g['W'] + pr}) w1 = {g['W'] + pr};")
            ctx.line(f"  cnt = ((h1 - h0 + {dh - 1}) / {dh}) * ((w1 - w0 + {dw - 1}) / {dw});")
        ctx.line(f"  acc = cnt > 0 ? acc / ({t})cnt : 0;")
    ctx.line(f"  o0[n * {g['oN']} + c * {g['oC']} + oh * {g['oH']} + ow * {g['oW']}] = acc;")
    ctx.line("}")


@register_c_emitter("nn.global_avg_pool2d", "nn.global_max_pool2d")
def _global_pool(ctx: KernelContext) -> None:
    g = _pool_geometry(ctx, str(ctx.attrs["layout"]))
    is_max = ctx.node.name == "nn.global_max_pool2d"
    t = ctx.outs[0].ctype
    ctx.line(f"for (int64_t n = 0; n < {g['N']}; ++n)")
    ctx.line(f"for (int64_t c = 0; c < {g['C']}; ++c) {{")
    ctx.line(f"  const {t} *px = a0 + n * {g['xN']} + c * {g['xC']};")
    ctx.line(f"  {t} acc = {'-INFINITY' if is_max else '0'};")
    ctx.line(f"  for (int64_t h = 0; h < {g['H']}; ++h)")
    ctx.line(f"  for (int64_t w = 0; w < {g['W']}; ++w) {{")
    ctx.line(f"    const {t} v = px[h * {g['xH']} + w * {g['xW']}];")
    ctx.line("    if (v > acc || v != v) acc = v;" if is_max else "    acc += v;")
    ctx.line("  }")
    if not is_max:
        ctx.line(f"  acc /= ({t}){g['H'] * g['W']};")
    ctx.line(f"  o0[n * {g['oN']} + c * {g['oC']}] = acc;")
    ctx.line("}")


@register_c_emitter("variance")
def _variance(ctx: KernelContext) -> None:
    """Sum of squared deviations from the given mean (broadcast), over the count
    (less one when ``unbiased``)."""
    x, mean, o = ctx.ins[0], ctx.ins[1], ctx.outs[0]
    axes = _reduce_axes(ctx, len(x.shape))
    kept = [d for d in range(len(x.shape)) if d not in axes]
    out_strides = [0] * len(x.shape)
    for d, s in zip(kept, contiguous_strides([x.shape[d] for d in kept]), strict=True):
        out_strides[d] = s
    ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) o0[i] = 0;")
    nd_loop(
        ctx,
        x.shape,
        [out_strides, contiguous_strides(x.shape), broadcast_strides(mean.shape, x.shape)],
        lambda ix: f"{{ const {o.ctype} d = a0[{ix[1]}] - a1[{ix[2]}]; o0[{ix[0]}] += d * d; }}",
    )
    count = math.prod(x.shape[d] for d in axes) - (1 if ctx.attrs.get("unbiased") else 0)
    ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) o0[i] /= ({o.ctype}){count};")


@register_c_emitter("nn.l2_normalize")
def _l2_normalize(ctx: KernelContext) -> None:
    """``x / sqrt(max(sum(x * x), eps))``: the sums in scratch, then one pass."""
    x, o = ctx.ins[0], ctx.outs[0]
    axis = ctx.attrs.get("axis")
    axes = list(range(len(x.shape))) if not axis else sorted(int(a) % len(x.shape) for a in axis)
    kept = [d for d in range(len(x.shape)) if d not in axes]
    sums = [0] * len(x.shape)
    for d, s in zip(kept, contiguous_strides([x.shape[d] for d in kept]), strict=True):
        sums[d] = s
    n = math.prod(x.shape[d] for d in kept)
    ctx.scratch_bytes = max(n, 1) * 8
    eps = c_float(float(ctx.attrs["eps"]), "float64")
    ctx.line("double *sq = (double *)sc;")
    ctx.line(f"for (int64_t i = 0; i < {n}; ++i) sq[i] = 0;")
    full = contiguous_strides(x.shape)
    nd_loop(
        ctx, x.shape, [sums, full], lambda ix: f"sq[{ix[0]}] += (double)a0[{ix[1]}] * a0[{ix[1]}];"
    )
    ctx.line(
        f"for (int64_t i = 0; i < {n}; ++i) sq[i] = 1.0 / sqrt(sq[i] > {eps} ? sq[i] : {eps});"
    )
    nd_loop(
        ctx,
        x.shape,
        [full, full, sums],
        lambda ix: f"o0[{ix[0]}] = ({o.ctype})(a0[{ix[1]}] * sq[{ix[2]}]);",
    )


@register_c_emitter("nn.lrn")
def _lrn(ctx: KernelContext) -> None:
    """``x / (bias + alpha / size * sum of x^2 over the window along axis) ^ beta``."""
    o = ctx.outs[0]
    outer, n, inner = _split(o.shape, int(ctx.attrs["axis"]))
    size = int(ctx.attrs["size"])
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    bias, alpha, beta = (c_float(float(ctx.attrs[k]), "float64") for k in ("bias", "alpha", "beta"))
    ctx.line(f"for (int64_t p = 0; p < {outer}; ++p)")
    ctx.line(f"for (int64_t q = 0; q < {inner}; ++q)")
    ctx.line(f"for (int64_t i = 0; i < {n}; ++i) {{")
    ctx.line(f"  const int64_t b = p * {n * inner} + q;")
    ctx.line("  double s = 0;")
    ctx.line(f"  for (int64_t j = i - {lo}; j <= i + {hi}; ++j)")
    ctx.line(f"    if (j >= 0 && j < {n}) s += (double)a0[b + j * {inner}] * a0[b + j * {inner}];")
    ctx.line(
        f"  o0[b + i * {inner}] = ({o.ctype})(a0[b + i * {inner}] / "
        f"pow({bias} + {alpha} / {size} * s, {beta}));"
    )
    ctx.line("}")
