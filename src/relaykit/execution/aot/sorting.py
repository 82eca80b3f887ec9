"""C emitters of ``argmax``/``argmin``, ``sort``, ``argsort`` and ``topk``.

``argmax``/``argmin`` scan the reduced axes of each kept position in row-major order
(the index is the flat position within the reduced axes, as TVM returns it; the first
NaN wins, as in NumPy). The sorts order each row along the axis with a stable merge
sort of its indices in scratch (ascending or descending; equal values keep their
order, NaN last), then gather values and indices.
"""

from __future__ import annotations

import math

from .emit import KernelContext, contiguous_strides, register_c_emitter
from .nn import _reduce_axes

__all__: list[str] = []


@register_c_emitter("argmax", "argmin")
def _arg_reduce(ctx: KernelContext) -> None:
    x, o = ctx.ins[0], ctx.outs[0]
    axes = _reduce_axes(ctx, len(x.shape))
    kept = [d for d in range(len(x.shape)) if d not in axes]
    xs = contiguous_strides(x.shape)
    better = ">" if ctx.node.name == "argmax" else "<"
    if ctx.attrs.get("select_last_index"):
        better += "="
    t = x.ctype
    ctx.line("int64_t p = 0;")
    for i, d in enumerate(kept):
        ctx.line("  " * i + f"for (int64_t k{d} = 0; k{d} < {x.shape[d]}; ++k{d})")
    ind = "  " * len(kept)
    ctx.line(ind + "{")
    base = " + ".join(f"k{d} * {xs[d]}" for d in kept) or "0"
    ctx.line(ind + f"  const {t} *px = a0 + {base};")
    ctx.line(ind + f"  {t} best = 0;")
    ctx.line(ind + "  int64_t arg = -1, r = 0;")
    for i, d in enumerate(axes):
        ctx.line(ind + "  " * (i + 1) + f"for (int64_t j{d} = 0; j{d} < {x.shape[d]}; ++j{d})")
    inner = ind + "  " * (len(axes) + 1)
    xi = " + ".join(f"j{d} * {xs[d]}" for d in axes) or "0"
    ctx.line(inner + "{")
    ctx.line(inner + f"  const {t} v = px[{xi}];")
    if x.dtype in ("float32", "float64"):
        ctx.line(inner + "  if (best != best) { ++r; continue; }")  # a NaN stays the answer
        ctx.line(inner + f"  if (arg < 0 || v {better} best || v != v) {{ best = v; arg = r; }}")
    else:
        ctx.line(inner + f"  if (arg < 0 || v {better} best) {{ best = v; arg = r; }}")
    ctx.line(inner + "  ++r;")
    ctx.line(inner + "}")
    ctx.line(ind + f"  o0[p++] = ({o.ctype})arg;")
    ctx.line(ind + "}")


def _sort_rows(ctx: KernelContext, axis: int) -> tuple[int, int, int]:
    """Emit a loop over the rows along ``axis`` that leaves, in ``ix[0..n)``, the order
    of the row's elements; the caller's lines follow inside the loop. Returns
    (outer, n, inner); the loop variables are ``p`` and ``q``, the row base ``b``."""
    x = ctx.ins[0]
    axis %= len(x.shape)
    outer, n, inner = math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1 :])
    ascend = bool(ctx.attrs.get("is_ascend", True))
    ctx.scratch_bytes = max(2 * n * 8, 8)
    cmp = "<" if ascend else ">"
    t = x.ctype
    nan = x.dtype in ("float32", "float64")
    # before(u, w): element u goes strictly before element w
    before = f"(xu {cmp} xw" + (" || (xw != xw && xu == xu))" if nan else ")")
    ctx.line("int64_t *ix = (int64_t *)sc, *tmp = ix + " + str(n) + ";")
    ctx.line(f"for (int64_t p = 0; p < {outer}; ++p)")
    ctx.line(f"for (int64_t q = 0; q < {inner}; ++q) {{")
    ctx.line(f"  const int64_t b = p * {n * inner} + q;")
    ctx.line(f"  for (int64_t i = 0; i < {n}; ++i) ix[i] = i;")
    ctx.line(f"  for (int64_t width = 1; width < {n}; width *= 2) {{")
    ctx.line(f"    for (int64_t lo = 0; lo < {n}; lo += 2 * width) {{")
    ctx.line(f"      int64_t mid = lo + width < {n} ? lo + width : {n};")
    ctx.line(f"      int64_t hi = lo + 2 * width < {n} ? lo + 2 * width : {n};")
    ctx.line("      int64_t i = lo, j = mid, k = lo;")
    ctx.line("      while (i < mid && j < hi) {")
    ctx.line(f"        const {t} xu = a0[b + ix[j] * {inner}], xw = a0[b + ix[i] * {inner}];")
    ctx.line(f"        tmp[k++] = {before} ? ix[j++] : ix[i++];")
    ctx.line("      }")
    ctx.line("      while (i < mid) tmp[k++] = ix[i++];")
    ctx.line("      while (j < hi) tmp[k++] = ix[j++];")
    ctx.line("    }")
    ctx.line(f"    for (int64_t i = 0; i < {n}; ++i) ix[i] = tmp[i];")
    ctx.line("  }")
    return outer, n, inner


@register_c_emitter("sort", "argsort")
def _sort(ctx: KernelContext) -> None:
    o = ctx.outs[0]
    _, n, inner = _sort_rows(ctx, int(ctx.attrs["axis"]))
    if ctx.node.name == "sort":
        ctx.line(
            f"  for (int64_t i = 0; i < {n}; ++i) o0[b + i * {inner}] = a0[b + ix[i] * {inner}];"
        )
    else:
        ctx.line(f"  for (int64_t i = 0; i < {n}; ++i) o0[b + i * {inner}] = ({o.ctype})ix[i];")
    ctx.line("}")


@register_c_emitter("topk")
def _topk(ctx: KernelContext) -> None:
    x = ctx.ins[0]
    axis = int(ctx.attrs["axis"]) % len(x.shape)
    k = ctx.outs[0].shape[axis]
    inner = _sort_rows(ctx, axis)[2]
    ret = str(ctx.attrs["ret_type"])
    base = f"p * {k * inner} + q"
    if ret in ("both", "values"):
        value = f"a0[b + ix[i] * {inner}]"
        ctx.line(f"  for (int64_t i = 0; i < {k}; ++i) o0[{base} + i * {inner}] = {value};")
    if ret in ("both", "indices"):
        o = ctx.outs[1 if ret == "both" else 0]
        name = "o1" if ret == "both" else "o0"
        ctx.line(
            f"  for (int64_t i = 0; i < {k}; ++i) {name}[{base} + i * {inner}] = ({o.ctype})ix[i];"
        )
    ctx.line("}")
