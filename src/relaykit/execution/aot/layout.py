"""C emitters of shape and layout operators: data movement with static index maps.

``transpose``, ``strided_slice``, ``nn.pad`` and friends move elements without
arithmetic. Their C is derived from the operator's own reference kernel, run once at
build time on the *indices* of the input: the result says, for each output element,
which input element it reads (or -1: the pad value). Runs of consecutive indices
become ``memmove`` calls, so a slice or a concatenation copies whole rows; other maps
become an index table. ``concatenate`` copies blocks from each input.
"""

from __future__ import annotations

import math

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.op import default_registry

from .emit import KernelContext, c_float, contiguous_strides, nd_loop, register_c_emitter

__all__ = ["GATHER_OPS"]

#: Operators lowered through their index map (one data input, then optional scalars).
GATHER_OPS = (
    "transpose",
    "strided_slice",
    "broadcast_to",
    "tile",
    "repeat",
    "reverse",
    "layout_transform",
    "nn.pad",
    "nn.depth_to_space",
    "nn.space_to_depth",
    "split",
    "reshape",
    "squeeze",
    "expand_dims",
    "nn.batch_flatten",
    "annotation.stop_fusion",
    "reshape_like",
    "broadcast_to_like",
    "contrib_reverse_reshape",
    "sliding_window",
    "slice_like",
    "nn.batch_to_space_nd",
    "nn.space_to_batch_nd",
    "vision.yolo_reorg",
)


def _index_maps(ctx: KernelContext) -> list[np.ndarray]:
    """For each output, the flat input index each element reads (-1: the pad value)."""
    x = ctx.ins[0]
    compute = default_registry.get_attr(ctx.node.name, "FCompute")
    idx = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    args: list[np.ndarray] = [idx]
    for extra in ctx.ins[1:]:  # pad value or a *_like shape source: only its shape counts
        args.append(np.full(extra.shape, -1, dtype=np.int64))
    attrs = ctx.attrs
    if ctx.node.name == "nn.space_to_batch_nd":  # its pad value is an attribute: mark pads -1
        attrs = Attrs({**dict(attrs.items()), "pad_value": -1}, attrs.type_key)
    out = compute(args, attrs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    maps = [np.asarray(o, dtype=np.int64).reshape(-1) for o in outs]
    for m, buf in zip(maps, ctx.outs, strict=True):
        if m.size != buf.size:
            raise ctx.error(f"index map of {m.size} elements for an output of {buf.size}")
    return maps


def _runs(m: np.ndarray) -> list[tuple[int, int, int]]:
    """(output start, input start or -1, length) of maximal consecutive runs."""
    if m.size == 0:
        return []
    brk = np.flatnonzero((np.diff(m) != 1) | (m[1:] < 0) | (m[:-1] < 0)) + 1
    starts = np.concatenate([[0], brk])
    ends = np.concatenate([brk, [m.size]])
    return [(int(s), int(m[s]), int(e - s)) for s, e in zip(starts, ends, strict=True)]


def _affine(m: np.ndarray, shape: tuple[int, ...]) -> tuple[int, list[int]] | None:
    """``(base, strides)`` when the map is ``base + sum(i_d * strides_d)``, else None."""
    if m.size == 0 or m.min() < 0:
        return None
    grid = m.reshape(shape)
    base = int(grid.flat[0])
    strides = []
    for d, n in enumerate(shape):
        step = int(grid[(0,) * d + (1,) + (0,) * (len(shape) - d - 1)]) - base if n > 1 else 0
        strides.append(step)
    expect = np.full(shape, base, dtype=np.int64)
    for d, s in enumerate(strides):
        expect += (np.arange(shape[d], dtype=np.int64) * s).reshape(
            (1,) * d + (-1,) + (1,) * (len(shape) - d - 1)
        )
    return (base, strides) if np.array_equal(expect, grid) else None


def _strided_copy(
    ctx: KernelContext, k: int, shape: tuple[int, ...], base: int, strides: list[int]
) -> None:
    def body(ix: list[str]) -> str:
        return f"o{k}[{ix[0]}] = a0[{base} + {ix[1]}];"

    nd_loop(ctx, shape, [contiguous_strides(shape), strides], body)


def emit_gather(ctx: KernelContext) -> None:
    """The output(s) as strided loops when the map is affine (transpose, slice,
    broadcast), as ``memmove`` runs when rows are long, else through an index table."""
    x = ctx.ins[0]
    pad = "a1[0]" if ctx.node.name == "nn.pad" else "0"
    if ctx.node.name == "nn.space_to_batch_nd":
        pad = c_float(float(ctx.attrs["pad_value"]), "float64")
    for k, (m, o) in enumerate(zip(_index_maps(ctx), ctx.outs, strict=True)):
        runs = _runs(m)
        aff = _affine(m, o.shape) if len(runs) > 1 else None
        if aff is not None:
            _strided_copy(ctx, k, o.shape, *aff)
            continue
        if len(runs) <= 64 or m.size >= 16 * len(runs):
            if len(runs) <= 64:
                for s, src, n in runs:
                    if src < 0:
                        ctx.line(f"for (int64_t i = 0; i < {n}; ++i) o{k}[{s} + i] = {pad};")
                    else:
                        ctx.line(
                            f"memmove(o{k} + {s}, a0 + {src}, {n * np.dtype(x.dtype).itemsize});"
                        )
                continue
            triples = [v for r in runs for v in r]
            tab = ctx.table("int64_t" if x.size >= 2**31 else "int32_t", triples, f"runs{k}")
            ctx.line(f"for (int64_t r = 0; r < {len(runs)}; ++r) {{")
            ctx.line(
                f"  const int64_t s = {tab}[3 * r], src = {tab}[3 * r + 1], n = {tab}[3 * r + 2];"
            )
            ctx.line(f"  if (src < 0) {{ for (int64_t i = 0; i < n; ++i) o{k}[s + i] = {pad}; }}")
            ctx.line(f"  else {{ for (int64_t i = 0; i < n; ++i) o{k}[s + i] = a0[src + i]; }}")
            ctx.line("}")
        else:
            tab = ctx.table("int64_t" if x.size >= 2**31 else "int32_t", m.tolist(), f"idx{k}")
            ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) {{")
            ctx.line(f"  const int64_t j = {tab}[i];")
            ctx.line(f"  o{k}[i] = j < 0 ? {pad} : a0[j];")
            ctx.line("}")


register_c_emitter(*GATHER_OPS)(emit_gather)


@register_c_emitter("concatenate")
def _concatenate(ctx: KernelContext) -> None:
    o = ctx.outs[0]
    axis = int(ctx.attrs["axis"]) % len(o.shape)
    outer = math.prod(o.shape[:axis])
    inner = math.prod(o.shape[axis + 1 :])
    item = np.dtype(o.dtype).itemsize
    row = o.shape[axis] * inner
    offset = 0
    for i, a in enumerate(ctx.ins):
        chunk = a.shape[axis] * inner
        if chunk:
            dst, src = f"o0 + p * {row} + {offset}", f"a{i} + p * {chunk}"
            ctx.line(f"for (int64_t p = 0; p < {outer}; ++p) memcpy({dst}, {src}, {chunk * item});")
        offset += chunk


@register_c_emitter("take")
def _take(ctx: KernelContext) -> None:
    """``take`` along one axis (indices read at run time, clipped or wrapped as ``mode``)."""
    x, ind = ctx.ins[0], ctx.ins[1]
    if int(ctx.attrs["batch_dims"]) != 0:
        raise ctx.error("take with batch_dims has no C lowering")
    axis = ctx.attrs["axis"]
    shape = (x.size,) if axis is None else x.shape
    axis = 0 if axis is None else int(axis) % len(shape)
    outer, n, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
    mode = str(ctx.attrs["mode"])
    item = np.dtype(x.dtype).itemsize
    ctx.line(f"for (int64_t p = 0; p < {outer}; ++p)")
    ctx.line(f"for (int64_t i = 0; i < {ind.size}; ++i) {{")
    ctx.line("  int64_t j = (int64_t)a1[i];")
    if mode == "wrap":
        ctx.line(f"  j %= {n};")
        ctx.line(f"  if (j < 0) j += {n};")
    else:  # clip (and fast, which TVM leaves undefined out of range)
        ctx.line(f"  j = j < 0 ? 0 : (j > {n - 1} ? {n - 1} : j);")
    ctx.line(
        f"  memcpy(o0 + (p * {ind.size} + i) * {inner}, a0 + (p * {n} + j) * {inner}, "
        f"{inner * item});"
    )
    ctx.line("}")


@register_c_emitter("stack")
def _stack(ctx: KernelContext) -> None:
    o = ctx.outs[0]
    axis = int(ctx.attrs["axis"]) % len(o.shape)
    outer = math.prod(o.shape[:axis])
    inner = math.prod(o.shape[axis + 1 :])
    item = np.dtype(o.dtype).itemsize
    for i in range(len(ctx.ins)):
        if inner:
            dst, src = f"o0 + p * {len(ctx.ins) * inner} + {i * inner}", f"a{i} + p * {inner}"
            ctx.line(f"for (int64_t p = 0; p < {outer}; ++p) memcpy({dst}, {src}, {inner * item});")


@register_c_emitter("zeros", "ones", "full", "full_like")
def _fill(ctx: KernelContext) -> None:
    o = ctx.outs[0]
    value = {"zeros": "0", "ones": "1", "full": "a0[0]", "full_like": "a1[0]"}[ctx.node.name]
    ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) o0[i] = ({o.ctype}){value};")
