"""ONNX converters: gather/scatter (and TensorScatter's KV-cache writes), cumulative ops,
TopK, OneHot, Trilu, depth/space rearrangements, and the resizing ops (Resize, Upsample)."""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr, TupleGetItem
from relaykit.op import dyn

from .common import normalize_axis, scalar

__all__: list[str] = []


@converter("GatherElements", 11)
def _gather_elements(ctx: NodeContext, x: Expr, indices: Expr, *, axis: int = 0) -> Expr:
    return op.gather(x, normalize_axis(ctx, axis, ctx.ndim(x)), indices)


def _tuples_first(ctx: NodeContext, indices: Expr) -> Expr:
    """ONNX's index tuples (last axis) moved to the first axis, where relay's are."""
    n = ctx.ndim(indices)
    return op.transpose(indices, [n - 1, *range(n - 1)])


@converter("GatherND", 11)
def _gather_nd(ctx: NodeContext, x: Expr, indices: Expr, *, batch_dims: int = 0) -> Expr:
    return op.gather_nd(x, _tuples_first(ctx, indices), batch_dims)


@converter("ScatterElements", 11)
def _scatter_elements(
    ctx: NodeContext, x: Expr, indices: Expr, updates: Expr, *, axis: int = 0, reduction="none"
) -> Expr:
    axis = normalize_axis(ctx, axis, ctx.ndim(x))
    return op.scatter_elements(
        x, indices, updates, axis, "update" if reduction == "none" else reduction
    )


@converter("TensorScatter", 24)
def _tensor_scatter(
    ctx: NodeContext,
    cache: Expr,
    update: Expr,
    write_indices: Expr | None = None,
    *,
    axis: int = -2,
    mode: str = "linear",
) -> Expr:
    """Write ``update`` into a KV cache along ``axis`` from ``write_indices[b]`` on (per
    batch entry ``b``; wrapping around the cache in ``circular`` mode)."""
    if mode not in ("linear", "circular"):
        raise ctx.unsupported(f"mode={mode!r}")
    shape, ushape = ctx.shape(cache), ctx.shape(update)
    nd = len(shape)
    a = normalize_axis(ctx, axis, nd)
    if a == 0:
        raise ctx.fail("axis must not be the batch axis 0")
    ctx.check_constant((ushape[a],), 8, "the index sequence")
    seq = np.arange(ushape[a], dtype="int64").reshape([-1 if i == a else 1 for i in range(nd)])
    index: Expr = Constant(seq)
    if write_indices is not None:
        start = op.reshape(op.cast(write_indices, "int64"), (ushape[0],) + (1,) * (nd - 1))
        index = op.add(start, index)
    if mode == "circular":
        index = op.floor_mod(index, scalar(shape[a], "int64"))
    index = op.broadcast_to(index, ushape)
    return op.scatter_elements(cache, index, update, a)


@converter("Scatter", 9)
def _scatter(ctx: NodeContext, x: Expr, indices: Expr, updates: Expr, *, axis: int = 0) -> Expr:
    return op.scatter_elements(x, indices, updates, normalize_axis(ctx, axis, ctx.ndim(x)))


@converter("ScatterND", 11)
def _scatter_nd(
    ctx: NodeContext, x: Expr, indices: Expr, updates: Expr, *, reduction: str = "none"
) -> Expr:
    indices = _tuples_first(ctx, indices)
    return op.scatter_nd(x, indices, updates, "update" if reduction == "none" else reduction)


def _cumulative(fn: Any):
    def convert(ctx: NodeContext, x: Expr, axis: Expr, *, exclusive: int = 0, reverse: int = 0):
        if not ctx.is_constant(axis):  # a run-time axis
            kind = "sum" if fn is op.cumsum else "prod"
            return dyn.cumulative(x, axis, kind, bool(exclusive), bool(reverse))
        a = normalize_axis(ctx, int(ctx.scalar(axis, "axis")), ctx.ndim(x))
        data = op.reverse(x, a) if reverse else x
        out = fn(data, axis=a, exclusive=bool(exclusive))
        return op.reverse(out, a) if reverse else out

    return convert


converter("CumSum", 11)(_cumulative(op.cumsum))
converter("CumProd", 26)(_cumulative(op.cumprod))


def _topk(ctx: NodeContext, x: Expr, k: int, axis: int, largest: int) -> list[Expr]:
    axis = normalize_axis(ctx, axis, ctx.ndim(x))
    values, indices = op.topk(x, k=k, axis=axis, is_ascend=not largest, dtype="int64")
    return [values, indices]


@converter("TopK", 1)
def _topk_v1(ctx: NodeContext, x: Expr, *, k: int = 1, axis: int = -1) -> list[Expr]:
    return _topk(ctx, x, k, axis, 1)


@converter("TopK", 10)
def _topk_v10(
    ctx: NodeContext,
    x: Expr,
    k: Expr,
    *,
    axis: int = -1,
    largest: int = 1,
    sorted: int = 1,
) -> list[Expr]:
    if not ctx.is_constant(k):  # a run-time count: dyn.topk
        a = normalize_axis(ctx, axis, ctx.ndim(x))
        kk = op.reshape(k, ()) if ctx.shape(k) != () else k
        out = op.dyn.topk(x, kk, axis=a, is_ascend=not largest, dtype="int64")
        return [TupleGetItem(out, 0), TupleGetItem(out, 1)]
    return _topk(ctx, x, int(ctx.value(k, "k").reshape(-1)[0]), axis, largest)


@converter("OneHot", 9)
def _one_hot(ctx: NodeContext, indices: Expr, depth: Expr, values: Expr, *, axis: int = -1):
    if not ctx.is_constant(depth):  # a run-time depth: dyn.one_hot
        dep = op.cast(op.reshape(depth, ()) if ctx.shape(depth) != () else depth, "int64")
        idx = op.cast(indices, "int64") if ctx.dtype(indices) != "int64" else indices
        idx = op.where(op.less(idx, scalar(0, "int64")), op.add(idx, dep), idx)
        off = op.reshape(op.strided_slice(values, [0], [1]), ())
        on = op.reshape(op.strided_slice(values, [1], [2]), ())
        return op.one_hot(idx, on, off, dep, axis, ctx.dtype(values))
    d = int(np.asarray(ctx.value(depth, "depth")).reshape(-1)[0])
    shape = ctx.shape(indices)
    nd = len(shape) + 1
    axis = normalize_axis(ctx, axis, nd)
    idx = op.cast(indices, "int64") if ctx.dtype(indices) != "int64" else indices
    idx = op.where(op.less(idx, scalar(0, "int64")), op.add(idx, scalar(d, "int64")), idx)
    idx = op.expand_dims(idx, axis)
    ctx.check_constant((d,), 8, "the positions")
    pos = np.arange(d, dtype="int64").reshape([d if i == axis else 1 for i in range(nd)])
    hit = op.equal(idx, Constant(pos))
    vdt = ctx.dtype(values)
    off = op.strided_slice(values, [0], [1])
    on = op.strided_slice(values, [1], [2])
    return op.where(hit, op.reshape(on, ()), op.reshape(off, ())) if vdt else hit


@converter("Trilu", 14)
def _trilu(ctx: NodeContext, x: Expr, k: Expr | None = None, *, upper: int = 1) -> Expr:
    if k is not None and not ctx.is_constant(k):  # a run-time diagonal offset
        kk_ = op.reshape(k, ()) if ctx.shape(k) != () else k
        return op.trilu(x, kk_, upper=bool(upper))
    shape = ctx.shape(x)
    kk = 0 if k is None else int(np.asarray(ctx.value(k, "k")).reshape(-1)[0])
    rows, cols = shape[-2], shape[-1]
    ctx.check_constant((rows, cols), 1, "the triangle mask")
    mask = (
        np.triu(np.ones((rows, cols), bool), kk)
        if upper
        else np.tril(np.ones((rows, cols), bool), kk)
    )
    return op.where(Constant(mask), x, scalar(0, ctx.dtype(x)))


@converter("DepthToSpace", 1)
def _depth_to_space(ctx: NodeContext, x: Expr, *, blocksize: int = 1, mode: str = "DCR") -> Expr:
    n, c, h, w = ctx.shape(x)
    b = int(blocksize)
    if mode == "DCR":
        t = op.reshape(x, (n, b, b, c // (b * b), h, w))
        t = op.transpose(t, (0, 3, 4, 1, 5, 2))
    else:
        t = op.reshape(x, (n, c // (b * b), b, b, h, w))
        t = op.transpose(t, (0, 1, 4, 2, 5, 3))
    return op.reshape(t, (n, c // (b * b), h * b, w * b))


@converter("SpaceToDepth", 1)
def _space_to_depth(ctx: NodeContext, x: Expr, *, blocksize: int = 1, mode: str = "DCR") -> Expr:
    if mode not in ("DCR", "CRD"):
        raise ctx.unsupported(f"mode={mode!r}")
    n, c, h, w = ctx.shape(x)
    b = int(blocksize)
    t = op.reshape(x, (n, c, h // b, b, w // b, b))
    # DCR puts the block offsets before the channels, CRD after them
    t = op.transpose(t, (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4))
    return op.reshape(t, (n, c * b * b, h // b, w // b))


@converter("NonZero", 9)
def _nonzero(ctx: NodeContext, x: Expr) -> Expr:
    if not ctx.is_constant(x):  # argwhere, one column per entry
        return op.cast(op.transpose(op.argwhere(x), (1, 0)), "int64")
    value = ctx.value(x, "data")
    return Constant(np.array(np.nonzero(value), dtype="int64").reshape(value.ndim, -1))


@converter("Compress", 9)
def _compress(ctx: NodeContext, x: Expr, condition: Expr, *, axis: Any = None) -> Expr:
    if not ctx.is_constant(condition):
        a = None if axis is None else normalize_axis(ctx, axis, ctx.ndim(x))
        return dyn.compress(x, condition, a)
    cond = np.asarray(ctx.value(condition, "condition")).astype(bool).reshape(-1)
    if axis is None:
        flat = op.reshape(x, (-1,))
        idx = np.nonzero(cond[: int(np.prod(ctx.shape(x)))])[0]
        return op.take(flat, Constant(idx.astype("int64")), axis=0)
    a = normalize_axis(ctx, axis, ctx.ndim(x))
    idx = np.nonzero(cond[: ctx.shape(x)[a]])[0]
    return op.take(x, Constant(idx.astype("int64")), axis=a)


@converter("ReverseSequence", 10)
def _reverse_sequence(
    ctx: NodeContext, x: Expr, lens: Expr, *, batch_axis: int = 1, time_axis: int = 0
) -> Expr:
    shape = ctx.shape(x)
    if not ctx.is_constant(lens):  # run-time lengths: the index grid gathers them
        ctx.check_constant((len(shape), *shape), 8, "the index grid")
        grid = np.indices(shape)
        t = Constant(grid[time_axis].astype("int64"))
        seq = op.take(op.cast(lens, "int64"), Constant(grid[batch_axis].astype("int64")), axis=0)
        back = op.subtract(op.subtract(seq, scalar(1, "int64")), t)
        return op.gather(x, time_axis, op.where(op.less(t, seq), back, t))
    lengths = np.asarray(ctx.value(lens, "sequence_lens")).astype(np.int64)
    ctx.check_constant((len(shape), *shape), 8, "the index grid")
    grid = np.indices(shape)
    t, b = grid[time_axis], grid[batch_axis]
    seq = lengths[b]
    idx = np.where(t < seq, seq - 1 - t, t)
    return op.gather(x, time_axis, Constant(idx.astype("int64")))


# -- resize ---------------------------------------------------------------------------------------


def _resize(ctx: NodeContext, x: Expr, roi: Any, scales: Any, sizes: Any, attrs: dict) -> Expr:
    shape = ctx.shape(x)
    r = len(shape)
    axes = attrs.get("axes")
    axes = list(range(r)) if not axes else [normalize_axis(ctx, int(a), r) for a in axes]
    full_scales = [1.0] * r
    full_sizes = list(shape)
    if sizes is not None and len(sizes):
        for a, s in zip(axes, sizes, strict=True):
            full_sizes[a] = int(s)
        full_scales = [o / i if i else 1.0 for o, i in zip(full_sizes, shape, strict=True)]
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(full_scales[a] for a in axes)
            full_scales = [s if i in axes else 1.0 for i in range(r)]
            full_sizes = [int(s * shape[i] + 0.5) if i in axes else shape[i] for i in range(r)]
    elif scales is not None and len(scales):
        for a, s in zip(axes, scales, strict=True):
            full_scales[a] = float(s)
        full_sizes = [int(np.floor(d * s)) for d, s in zip(shape, full_scales, strict=True)]
    else:
        raise ctx.fail("needs either scales or sizes")
    box: tuple[float, ...] = ()
    mode = attrs.get("coordinate_transformation_mode", "half_pixel")
    if mode == "tf_crop_and_resize" and roi is not None and len(roi):
        lo, hi = [0.0] * r, [1.0] * r
        k = len(axes)
        for j, a in enumerate(axes):
            lo[a], hi[a] = float(roi[j]), float(roi[j + k])
        box = tuple(lo + hi)
    method = attrs.get("mode", "nearest")
    return op.image.resize(
        x,
        full_sizes,
        scales=full_scales,
        roi=box,
        method=method,
        coordinate_transformation_mode=mode,
        rounding_method=attrs.get("nearest_mode", "round_prefer_floor")
        if method == "nearest"
        else "",
        cubic_alpha=attrs.get("cubic_coeff_a", -0.75),
        cubic_exclude=attrs.get("exclude_outside", 0),
        extrapolation_value=attrs.get("extrapolation_value", 0.0),
        antialias=bool(attrs.get("antialias", 0)),
    )


def _resize_dynamic(
    ctx: NodeContext,
    x: Expr,
    roi: Expr | None,
    scales: Expr | None,
    sizes: Expr | None,
    attrs: dict,
) -> Expr:
    """Resize with run-time roi, scales or sizes: ``dyn.image.resize``."""

    def given(e: Expr | None, dt: str) -> Expr:
        return e if e is not None else Constant(np.zeros(0, dt))

    method = attrs.get("mode", "nearest")
    return dyn.image_resize(
        x,
        given(roi, "float32"),
        given(scales, "float32"),
        given(sizes, "int64"),
        axes=tuple(int(a) for a in (attrs.get("axes") or ())),
        keep_aspect_ratio_policy=attrs.get("keep_aspect_ratio_policy", "stretch"),
        method=method,
        coordinate_transformation_mode=attrs.get("coordinate_transformation_mode", "half_pixel"),
        rounding_method=attrs.get("nearest_mode", "round_prefer_floor")
        if method == "nearest"
        else "",
        cubic_alpha=attrs.get("cubic_coeff_a", -0.75),
        cubic_exclude=attrs.get("exclude_outside", 0),
        extrapolation_value=attrs.get("extrapolation_value", 0.0),
        antialias=bool(attrs.get("antialias", 0)),
    )


def _opt_values(ctx: NodeContext, e: Expr | None, what: str) -> Any:
    if e is None:
        return None
    v = np.asarray(ctx.value(e, what)).reshape(-1)
    return v if v.size else None


@converter("Resize", 10)
def _resize_v10(ctx: NodeContext, x: Expr, scales: Expr, *, mode: str = "nearest") -> Expr:
    attrs = {"mode": mode, "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    if not ctx.is_constant(scales):
        return _resize_dynamic(ctx, x, None, scales, None, attrs)
    return _resize(ctx, x, None, _opt_values(ctx, scales, "scales"), None, attrs)


@converter("Resize", 11)
def _resize_v11(
    ctx: NodeContext,
    x: Expr,
    roi: Expr | None = None,
    scales: Expr | None = None,
    sizes: Expr | None = None,
    **attrs: Any,
) -> Expr:
    if not all(ctx.is_constant(e) for e in (roi, scales, sizes) if e is not None):
        return _resize_dynamic(ctx, x, roi, scales, sizes, attrs)
    return _resize(
        ctx,
        x,
        _opt_values(ctx, roi, "roi"),
        _opt_values(ctx, scales, "scales"),
        _opt_values(ctx, sizes, "sizes"),
        attrs,
    )


def _upsample(ctx: NodeContext, x: Expr, scales: Any, mode: str) -> Expr:
    attrs = {
        "mode": "linear" if mode in ("linear", "bilinear") else "nearest",
        "coordinate_transformation_mode": "asymmetric",
        "nearest_mode": "floor",
    }
    return _resize(ctx, x, None, scales, None, attrs)


@converter("Upsample", 7)
def _upsample_v7(ctx: NodeContext, x: Expr, *, scales: Any = (), mode: str = "nearest") -> Expr:
    return _upsample(ctx, x, scales, mode)


@converter("Upsample", 9)
def _upsample_v9(ctx: NodeContext, x: Expr, scales: Expr, *, mode: str = "nearest") -> Expr:
    if not ctx.is_constant(scales):
        attrs = {
            "mode": "linear" if mode in ("linear", "bilinear") else "nearest",
            "coordinate_transformation_mode": "asymmetric",
            "nearest_mode": "floor",
        }
        return _resize_dynamic(ctx, x, None, scales, None, attrs)
    return _upsample(ctx, x, _opt_values(ctx, scales, "scales"), mode)


@converter("GridSample", 16)
def _grid_sample(
    ctx: NodeContext,
    x: Expr,
    grid: Expr,
    *,
    align_corners: int = 0,
    mode: str = "linear",
    padding_mode: str = "zeros",
) -> Expr:
    nd = ctx.ndim(grid)
    moved = op.transpose(grid, (0, nd - 1, *range(1, nd - 1)))
    return op.image.grid_sample(
        x, moved, method=mode, padding_mode=padding_mode, align_corners=bool(align_corners)
    )


@converter("CenterCropPad", 18)
def _center_crop_pad(ctx: NodeContext, x: Expr, shape: Expr, *, axes: Any = None) -> Expr:
    if not ctx.is_constant(shape):
        return dyn.center_crop_pad(x, shape, tuple(int(a) for a in (axes or ())))
    dims = ctx.shape(x)
    target = ctx.ints(shape, "shape")
    nd = len(dims)
    axes = list(range(nd)) if not axes else [normalize_axis(ctx, int(a), nd) for a in axes]
    out = x
    width = [(0, 0)] * nd
    for a, t in zip(axes, target, strict=True):
        d = dims[a]
        if t < d:
            start = (d - t) // 2
            out = op.strided_slice(out, [start], [start + t], axes=[a])
        elif t > d:
            before = (t - d) // 2
            width[a] = (before, t - d - before)
    if any(w != (0, 0) for w in width):
        out = op.nn.pad(out, width, scalar(0, ctx.dtype(x)))
    return out


@converter("AffineGrid", 20)
def _affine_grid(ctx: NodeContext, theta: Expr, size: Expr, *, align_corners: int = 0) -> Expr:
    if not ctx.is_constant(size):  # a run-time output size: dyn.affine_grid
        return dyn.affine_grid(theta, size, bool(align_corners))
    dims = ctx.ints(size, "size")
    if len(dims) < 3:
        raise ctx.fail(f"size {dims} must have at least 3 values (N, C, spatial...)")
    n, spatial = dims[0], dims[2:]
    ctx.check_constant((n, *spatial, len(spatial) + 1), 8, "the base grid")
    base = dyn.image.affine_base_grid(spatial, bool(align_corners))  # (P, r + 1)
    dt = ctx.dtype(theta)
    points = base.shape[0]
    base_c = Constant(np.broadcast_to(base.astype(dt), (n, points, base.shape[1])).copy())
    grid = op.nn.batch_matmul(base_c, theta, transpose_b=True)  # (N, P, r)
    return op.reshape(grid, (n, *spatial, len(spatial)))
