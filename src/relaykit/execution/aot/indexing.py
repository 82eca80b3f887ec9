"""C emitters of operators that index with run-time values or scan an axis: ``gather``,
``gather_nd``, ``scatter_elements``, ``scatter_nd``, ``one_hot``, ``cumsum``/``cumprod``,
``trilu``, ``arange``, ``meshgrid``, ``reverse_sequence``, ``searchsorted``,
``unravel_index``, the sums
that undo a broadcast (``collapse_sum_to``/``collapse_sum_like``), and ``shape_of``/
``ndarray_size`` (constants of a static model).

Indices read at run time are wrapped when negative (``-1`` is the last element, as the
graph executor reads them) and then clamped into the axis, so that no index reads
outside its tensor.
"""

from __future__ import annotations

import math

import numpy as np

from .emit import (
    KernelContext,
    broadcast_strides,
    c_float,
    contiguous_strides,
    nd_loop,
    register_c_emitter,
)

__all__: list[str] = []


def _wrap(var: str, n: int) -> str:
    """C statements wrapping and clamping index ``var`` into ``[0, n)``."""
    clamp = f"{var} = {var} < 0 ? 0 : ({var} > {n - 1} ? {n - 1} : {var});"
    return f"{var} = {var} < 0 ? {var} + {n} : {var}; {clamp}"


@register_c_emitter("gather")
def _gather(ctx: KernelContext) -> None:
    x, ind = ctx.ins[0], ctx.ins[1]
    o = ctx.outs[0]
    axis = int(ctx.attrs["axis"]) % len(x.shape)
    xs = contiguous_strides(x.shape)
    step = xs[axis]
    xs[axis] = 0
    n = x.shape[axis]

    def body(ix: list[str]) -> str:
        read = f"o0[{ix[0]}] = a0[{ix[2]} + j * {step}];"
        return f"{{ int64_t j = (int64_t)a1[{ix[1]}]; {_wrap('j', n)} {read} }}"

    nd_loop(ctx, o.shape, [contiguous_strides(o.shape), contiguous_strides(ind.shape), xs], body)


@register_c_emitter("gather_nd")
def _gather_nd(ctx: KernelContext) -> None:
    """Indices in TVM's layout ``(M, Y...)``: column ``pos`` of the ``M`` index rows
    picks a slice of ``data`` (after its ``batch_dims`` leading axes)."""
    x, ind = ctx.ins[0], ctx.ins[1]
    b = int(ctx.attrs["batch_dims"])
    m = ind.shape[0]
    y_total = math.prod(ind.shape[1:])
    batch = math.prod(x.shape[:b])
    per_batch = y_total // batch if batch else 0
    rest = x.shape[b:]
    inner = math.prod(rest[m:])
    rs = contiguous_strides(rest)
    item = np.dtype(x.dtype).itemsize
    ctx.line(f"for (int64_t bi = 0; bi < {batch}; ++bi)")
    ctx.line(f"for (int64_t y = 0; y < {per_batch}; ++y) {{")
    ctx.line(f"  const int64_t pos = bi * {per_batch} + y;")
    ctx.line(f"  int64_t off = bi * {math.prod(rest)};")
    for k in range(m):
        ctx.line(f"  {{ int64_t j = (int64_t)a1[{k * y_total} + pos]; {_wrap('j', rest[k])}")
        ctx.line(f"    off += j * {rs[k]}; }}")
    ctx.line(f"  memcpy(o0 + pos * {inner}, a0 + off, {inner * item});")
    ctx.line("}")


@register_c_emitter("one_hot")
def _one_hot(ctx: KernelContext) -> None:
    ind, o = ctx.ins[0], ctx.outs[0]
    depth = int(ctx.attrs["depth"])
    axis = int(ctx.attrs["axis"]) % (len(ind.shape) + 1)
    outer, inner = math.prod(ind.shape[:axis]), math.prod(ind.shape[axis:])
    ctx.line(f"for (int64_t p = 0; p < {outer}; ++p)")
    ctx.line(f"for (int64_t d = 0; d < {depth}; ++d)")
    ctx.line(f"for (int64_t q = 0; q < {inner}; ++q)")
    ctx.line(
        f"  o0[(p * {depth} + d) * {inner} + q] = ({o.ctype})((int64_t)a0[p * {inner} + q] == d "
        "? a1[0] : a2[0]);"
    )


@register_c_emitter("cumsum", "cumprod")
def _cumulative(ctx: KernelContext) -> None:
    x, o = ctx.ins[0], ctx.outs[0]
    shape = (x.size,) if ctx.attrs["axis"] is None else x.shape
    axis = 0 if ctx.attrs["axis"] is None else int(ctx.attrs["axis"]) % len(shape)
    outer, n, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
    is_sum = ctx.node.name == "cumsum"
    ctx.line(f"for (int64_t p = 0; p < {outer}; ++p)")
    ctx.line(f"for (int64_t q = 0; q < {inner}; ++q) {{")
    ctx.line(f"  {o.ctype} acc = {'0' if is_sum else '1'};")
    ctx.line(f"  for (int64_t i = 0; i < {n}; ++i) {{")
    ctx.line(f"    const int64_t at = (p * {n} + i) * {inner} + q;")
    update = f"acc {'+' if is_sum else '*'}= ({o.ctype})a0[at];"
    if ctx.attrs["exclusive"]:
        ctx.line(f"    o0[at] = acc; {update}")
    else:
        ctx.line(f"    {update} o0[at] = acc;")
    ctx.line("  }")
    ctx.line("}")


@register_c_emitter("trilu")
def _trilu(ctx: KernelContext) -> None:
    x = ctx.ins[0]
    rows, cols = x.shape[-2], x.shape[-1]
    keep = ">=" if ctx.attrs["upper"] else "<="
    ctx.line("const int64_t k = (int64_t)a1[0];")
    ctx.line(f"for (int64_t b = 0; b < {x.size // max(rows * cols, 1)}; ++b)")
    ctx.line(f"for (int64_t r = 0; r < {rows}; ++r)")
    ctx.line(f"for (int64_t c = 0; c < {cols}; ++c) {{")
    ctx.line(f"  const int64_t at = (b * {rows} + r) * {cols} + c;")
    ctx.line(f"  o0[at] = c - r {keep} k ? a0[at] : 0;")
    ctx.line("}")


@register_c_emitter("arange")
def _arange(ctx: KernelContext) -> None:
    """``start + i * step`` (static bounds are attributes; computed in double)."""
    o = ctx.outs[0]
    start = c_float(float(ctx.attrs["start"]), "float64")
    step = c_float(float(ctx.attrs["step"]), "float64")
    ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) o0[i] = ({o.ctype})({start} + i * {step});")


@register_c_emitter("collapse_sum_to", "collapse_sum_like")
def _collapse_sum(ctx: KernelContext) -> None:
    x, o = ctx.ins[0], ctx.outs[0]
    ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) o0[i] = 0;")
    nd_loop(
        ctx,
        x.shape,
        [broadcast_strides(o.shape, x.shape), contiguous_strides(x.shape)],
        lambda ix: f"o0[{ix[0]}] += a0[{ix[1]}];",
    )


@register_c_emitter("shape_of", "ndarray_size")
def _shape_constant(ctx: KernelContext) -> None:
    x, o = ctx.ins[0], ctx.outs[0]
    values = list(x.shape) if ctx.node.name == "shape_of" else [x.size]
    for i, v in enumerate(values):
        literal = c_float(float(v), o.dtype) if o.dtype in ("float32", "float64") else str(v)
        ctx.line(f"o0[{i}] = ({o.ctype}){literal};")


_SCATTER = {
    "none": "*p = u;",
    "update": "*p = u;",
    "add": "*p += u;",
    "mul": "*p *= u;",
    "min": "if (u < *p) *p = u;",
    "max": "if (u > *p) *p = u;",
}


def _scatter_update(ctx: KernelContext) -> str:
    reduction = str(ctx.attrs["reduction"])
    if reduction not in _SCATTER:
        raise ctx.error(f"reduction {reduction!r} has no C lowering ({', '.join(_SCATTER)})")
    return _SCATTER[reduction]


@register_c_emitter("scatter_elements")
def _scatter_elements(ctx: KernelContext) -> None:
    """A copy of ``data``; then each update, in order, at its index along ``axis``."""
    x, ind, o = ctx.ins[0], ctx.ins[1], ctx.outs[0]
    axis = int(ctx.attrs["axis"]) % len(x.shape)
    update = _scatter_update(ctx)
    os_ = contiguous_strides(o.shape)
    step = os_[axis]
    os_[axis] = 0
    n = x.shape[axis]
    ctx.line(f"memmove(o0, a0, {x.size * np.dtype(x.dtype).itemsize});")
    full = contiguous_strides(ind.shape)

    def body(ix: list[str]) -> str:
        head = f"int64_t j = (int64_t)a1[{ix[0]}]; {_wrap('j', n)}"
        point = f"{o.ctype} *p = o0 + {ix[1]} + j * {step}; {o.ctype} u = a2[{ix[0]}];"
        return f"{{ {head} {point} {update} }}"

    nd_loop(ctx, ind.shape, [full, os_], body)


@register_c_emitter("scatter_nd")
def _scatter_nd(ctx: KernelContext) -> None:
    """A copy of ``data``; then each slice of ``updates`` at its index tuple (TVM's
    layout: tuples along the first axis of ``indices``)."""
    x, ind, o = ctx.ins[0], ctx.ins[1], ctx.outs[0]
    update = _scatter_update(ctx)
    m = ind.shape[0]
    y_total = math.prod(ind.shape[1:])
    inner = math.prod(x.shape[m:])
    xs = contiguous_strides(x.shape)
    ctx.line(f"memmove(o0, a0, {x.size * np.dtype(x.dtype).itemsize});")
    ctx.line(f"for (int64_t y = 0; y < {y_total}; ++y) {{")
    ctx.line("  int64_t off = 0;")
    for k in range(m):
        ctx.line(f"  {{ int64_t j = (int64_t)a1[{k * y_total} + y]; {_wrap('j', x.shape[k])}")
        ctx.line(f"    off += j * {xs[k]}; }}")
    ctx.line(f"  for (int64_t i = 0; i < {inner}; ++i) {{")
    ctx.line(f"    {o.ctype} *p = o0 + off + i; {o.ctype} u = a2[y * {inner} + i]; {update}")
    ctx.line("  }")
    ctx.line("}")


@register_c_emitter("meshgrid")
def _meshgrid(ctx: KernelContext) -> None:
    """Output ``k`` repeats input ``k`` along its axis (the first two swapped for "xy")."""
    n = len(ctx.ins)
    xy = str(ctx.attrs["indexing"]) == "xy" and n >= 2
    for k, o in enumerate(ctx.outs):
        axis = {0: 1, 1: 0}.get(k, k) if xy else k
        st = [0] * len(o.shape)
        if ctx.ins[k].size > 1:
            st[axis] = 1
        copy = f"o{k}[{{0}}] = a{k}[{{1}}];"

        def body(ix: list[str], fmt: str = copy) -> str:
            return fmt.format(*ix)

        nd_loop(ctx, o.shape, [contiguous_strides(o.shape), st], body)


@register_c_emitter("reverse_sequence")
def _reverse_sequence(ctx: KernelContext) -> None:
    """The first ``lengths[b]`` elements along ``seq_axis`` of each batch entry reversed
    (a length is clamped into ``[1, size]``); the rest copied."""
    x = ctx.ins[0]
    r = len(x.shape)
    seq, batch = int(ctx.attrs["seq_axis"]) % r, int(ctx.attrs["batch_axis"]) % r
    st = contiguous_strides(x.shape)
    size = x.shape[seq]
    for d in range(r):
        ctx.line("  " * d + f"for (int64_t i{d} = 0; i{d} < {x.shape[d]}; ++i{d})")
    ind = "  " * r
    ctx.line(ind + "{")
    ctx.line(ind + f"  int64_t n = (int64_t)a1[i{batch}];")
    ctx.line(ind + f"  n = n < 1 ? 1 : (n > {size} ? {size} : n);")
    ctx.line(ind + f"  const int64_t s = i{seq} < n ? n - 1 - i{seq} : i{seq};")
    at = " + ".join(f"i{d} * {st[d]}" for d in range(r))
    ctx.line(ind + f"  o0[{at}] = a0[{at} + (s - i{seq}) * {st[seq]}];")
    ctx.line(ind + "}")


@register_c_emitter("searchsorted")
def _searchsorted(ctx: KernelContext) -> None:
    """A binary search of each value in its row of the sorted sequence (``right``:
    the first element greater than the value, else the first not less)."""
    seq, vals, o = ctx.ins[0], ctx.ins[1], ctx.outs[0]
    n = seq.shape[-1]
    rows = 1 if len(seq.shape) == 1 else seq.size // max(n, 1)
    per_row = vals.size // rows if rows else 0
    row_of = "0" if len(seq.shape) == 1 else f"(i / {max(per_row, 1)})"
    goes_left = "v < row[mid]" if ctx.attrs["right"] else "v <= row[mid]"
    ctx.line(f"for (int64_t i = 0; i < {vals.size}; ++i) {{")
    ctx.line(f"  const {seq.ctype} *row = a0 + {row_of} * {n};")
    ctx.line(f"  const {vals.ctype} v = a1[i];")
    ctx.line(f"  int64_t lo = 0, hi = {n};")
    ctx.line("  while (lo < hi) {")
    ctx.line("    const int64_t mid = lo + (hi - lo) / 2;")
    ctx.line(f"    if ({goes_left}) hi = mid; else lo = mid + 1;")
    ctx.line("  }")
    ctx.line(f"  o0[i] = ({o.ctype})lo;")
    ctx.line("}")


@register_c_emitter("unravel_index")
def _unravel_index(ctx: KernelContext) -> None:
    """Coordinates of flat indices in a shape read at run time (the first coordinate
    is not wrapped, as in TVM)."""
    idx, shp, o = ctx.ins[0], ctx.ins[1], ctx.outs[0]
    d = shp.shape[0]
    ctx.line(f"for (int64_t i = 0; i < {idx.size}; ++i) {{")
    ctx.line("  int64_t stride = 1;")
    ctx.line(f"  for (int64_t k = {d} - 1; k >= 0; --k) {{")
    ctx.line("    const int64_t q = (int64_t)a0[i] / stride, dim = (int64_t)a1[k];")
    ctx.line(f"    o0[k * {idx.size} + i] = ({o.ctype})(k == 0 || dim == 0 ? q : q % dim);")
    ctx.line("    stride *= dim;")
    ctx.line("  }")
    ctx.line("}")
