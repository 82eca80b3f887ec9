"""ONNX converters: shapes and layout (Shape, Reshape, Transpose, Slice, Concat, Pad...)
and constant generators (Constant, ConstantOfShape, Range, EyeLike).

Shapes are static, so ``Shape`` and ``Size`` become constants, and any later
arithmetic on them is folded at import by the importer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from relaykit import op
from relaykit.frontend.onnx.limits import check_shape, check_unroll
from relaykit.frontend.onnx.proto import onnx_dtype_name, tensor_to_numpy
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Constant, Expr, TupleGetItem
from relaykit.op import dyn

from .common import normalize_axis, scalar, static_reshape

__all__: list[str] = []


@converter("Shape", 1)
def _shape(ctx: NodeContext, x: Expr, *, start: int = 0, end: Any = None) -> Expr:
    shape = ctx.shape(x)
    n = len(shape)
    lo = max(0, min(n, start + n if start < 0 else start))
    hi = n if end is None else max(0, min(n, end + n if end < 0 else end))
    if not all(type(d) is int for d in shape[lo:hi]):  # a ? dimension: shape_of at run time
        dims = op.shape_of(x, "int64")
        return dims if (lo, hi) == (0, n) else op.strided_slice(dims, [lo], [hi])
    return Constant(np.array(shape[lo:hi], dtype="int64"))


@converter("Size", 1)
def _size(ctx: NodeContext, x: Expr) -> Expr:
    if not all(type(d) is int for d in ctx.shape(x)):
        return op.ndarray_size(x, "int64")
    return Constant(np.array(math.prod(ctx.shape(x)), dtype="int64"))


def _static(shape: tuple[Any, ...]) -> bool:
    return all(type(d) is int for d in shape)


def _reshape_to(ctx: NodeContext, x: Expr, spec: tuple[int, ...], allowzero: int) -> Expr:
    shape = ctx.shape(x)
    if not _static(shape):  # ? dimensions: reshape's 0 and -1 are resolved at run time
        return op.reshape(x, spec, allowzero=bool(allowzero))
    out = []
    infer = -1
    for i, d in enumerate(spec):
        if d == 0 and not allowzero:
            if i >= len(shape):
                raise ctx.fail(f"shape {spec} copies dimension {i}, but the input is {shape}")
            out.append(shape[i])
        elif d == -1:
            if infer >= 0:
                raise ctx.fail(f"shape {spec} has more than one -1")
            infer = i
            out.append(1)
        elif d < -1:
            raise ctx.fail(f"shape {spec} has the invalid value {d}")
        else:
            out.append(d)
    total = math.prod(shape)
    if infer >= 0:
        rest = math.prod(out)
        if rest == 0 or total % rest:
            raise ctx.fail(f"cannot reshape {shape} to {spec}")
        out[infer] = total // rest
    if math.prod(out) != total:
        raise ctx.fail(f"cannot reshape {shape} ({total} elements) to {tuple(out)}")
    return static_reshape(x, tuple(out))


@converter("Reshape", 1)
def _reshape_v1(ctx: NodeContext, x: Expr, *, shape: Any = (), consumed_inputs: Any = ()):
    return _reshape_to(ctx, x, tuple(shape), 0)


@converter("Reshape", 5)
def _reshape(ctx: NodeContext, x: Expr, shape: Expr, *, allowzero: int = 0) -> Expr:
    if not ctx.is_constant(shape):  # a run-time target: dyn.reshape
        return op.reshape(x, shape, allowzero=bool(allowzero))
    return _reshape_to(ctx, x, ctx.ints(shape, "shape"), allowzero)


@converter("Flatten", 1)
def _flatten(ctx: NodeContext, x: Expr, *, axis: int = 1) -> Expr:
    shape = ctx.shape(x)
    a = axis + len(shape) if axis < 0 else axis
    if not 0 <= a <= len(shape):
        raise ctx.fail(f"axis {axis} is out of range for rank {len(shape)}")
    lead, trail = shape[:a], shape[a:]
    if _static(shape):
        return static_reshape(x, (math.prod(lead), math.prod(trail)))
    if _static(trail):
        return op.reshape(x, (-1, math.prod(trail)))
    if _static(lead):
        return op.reshape(x, (math.prod(lead), -1))
    # ? dimensions on both sides: the leading product at run time
    rows = op.prod(op.strided_slice(op.shape_of(x, "int64"), [0], [a]), keepdims=True)
    return op.reshape(x, op.concatenate([rows, Constant(np.array([-1], "int64"))], 0))


@converter("Transpose", 1)
def _transpose(ctx: NodeContext, x: Expr, *, perm: Any = None) -> Expr:
    n = ctx.ndim(x)
    axes = tuple(perm) if perm else tuple(reversed(range(n)))
    if sorted(a % max(n, 1) for a in axes) != list(range(n)):
        raise ctx.fail(f"perm {axes} is not a permutation of the {n} axes")
    if axes == tuple(range(n)):
        return x
    return op.transpose(x, axes)


def _squeeze(ctx: NodeContext, x: Expr, axes: Any) -> Expr:
    shape = ctx.shape(x)
    n = len(shape)
    if not _static(shape):  # ? dimensions: squeeze the named axes (or the known 1s)
        if axes is None or len(axes) == 0:
            drop = [i for i, d in enumerate(shape) if d == 1]
        else:
            drop = sorted({normalize_axis(ctx, int(a), n) for a in axes})
            bad = [a for a in drop if type(shape[a]) is int and shape[a] != 1]
            if bad:
                raise ctx.fail(f"cannot squeeze axis {bad[0]} of shape {shape}: its size is not 1")
        return op.squeeze(x, drop) if drop else x
    if axes is None or len(axes) == 0:
        keep = [d for d in shape if d != 1]
    else:
        named = {normalize_axis(ctx, int(a), n) for a in axes}
        for a in named:
            if shape[a] != 1:
                raise ctx.fail(f"cannot squeeze axis {a} of shape {shape}: its size is not 1")
        keep = [d for i, d in enumerate(shape) if i not in named]
    return static_reshape(x, tuple(keep))


@converter("Squeeze", 1)
def _squeeze_v1(ctx: NodeContext, x: Expr, *, axes: Any = None) -> Expr:
    return _squeeze(ctx, x, axes)


@converter("Squeeze", 13)
def _squeeze_v13(ctx: NodeContext, x: Expr, axes: Expr | None = None) -> Expr:
    if axes is not None and not ctx.is_constant(axes):
        return op.squeeze(x, axes)
    return _squeeze(ctx, x, None if axes is None else ctx.ints(axes, "axes"))


def _unsqueeze(ctx: NodeContext, x: Expr, axes: Any) -> Expr:
    shape = list(ctx.shape(x))
    n = len(shape) + len(axes)
    norm = sorted(normalize_axis(ctx, int(a), n) for a in axes)
    if len(set(norm)) != len(norm):
        raise ctx.fail(f"axes {tuple(axes)} name an axis twice")
    if not _static(tuple(shape)):  # ? dimensions: one expand_dims per new axis
        out = x
        for a in norm:
            out = op.expand_dims(out, a)
        return out
    for a in norm:
        shape.insert(a, 1)
    return static_reshape(x, tuple(shape))


@converter("Unsqueeze", 1)
def _unsqueeze_v1(ctx: NodeContext, x: Expr, *, axes: Any = ()) -> Expr:
    return _unsqueeze(ctx, x, axes)


@converter("Unsqueeze", 13)
def _unsqueeze_v13(ctx: NodeContext, x: Expr, axes: Expr) -> Expr:
    if not ctx.is_constant(axes):
        return dyn.unsqueeze(x, axes)
    return _unsqueeze(ctx, x, ctx.ints(axes, "axes"))


@converter("Concat", 1)
def _concat(ctx: NodeContext, *xs: Expr, axis: int = 1) -> Expr:
    if not xs:
        raise ctx.fail("needs at least one input")
    if len(xs) == 1:
        return xs[0]
    return op.concatenate(list(xs), axis)


def _split(ctx: NodeContext, x: Expr, axis: int, sizes: Any, num: int) -> list[Expr]:
    shape = ctx.shape(x)
    axis = normalize_axis(ctx, axis, len(shape))
    dim = shape[axis]
    if type(dim) is not int and (sizes is None or len(sizes) == 0):
        # an even split of a ? dimension: the sizes are computed at run time
        n = num or ctx.num_outputs
        size = op.strided_slice(op.shape_of(x, "int64"), [axis], [axis + 1])
        step = op.floor_divide(op.add(size, scalar(n - 1, "int64")), scalar(n, "int64"))
        starts = op.multiply(step, Constant(np.arange(n, dtype="int64")))
        left = op.maximum(op.subtract(size, starts), scalar(0, "int64"))
        parts = dyn.split(x, op.minimum(step, left), axis)
        return [TupleGetItem(parts, k) for k in range(n)]
    if sizes is None or len(sizes) == 0:
        n = num or ctx.num_outputs
        if n <= 0:
            raise ctx.fail(f"cannot split into {n} outputs")
        check_unroll(ctx.where, "the number of outputs", n)
        chunk = -(-dim // n)
        sizes = [min(chunk, max(0, dim - k * chunk)) for k in range(n)]
    check_unroll(ctx.where, "the number of outputs", len(sizes))
    if sum(sizes) != dim or min(sizes) < 0:
        raise ctx.fail(f"split sizes {tuple(sizes)} do not add up to dimension {dim}")
    outs: list[Expr] = []
    start = 0
    for s in sizes:
        outs.append(op.strided_slice(x, [start], [start + s], [1], axes=[axis]))
        start += s
    return outs


@converter("Split", 1)
def _split_v2(ctx: NodeContext, x: Expr, split: Expr | None = None, *, axis: int = 0, **kw: Any):
    sizes = kw.get("split") or (ctx.ints(split, "split") if split is not None else None)
    return _split(ctx, x, axis, sizes, 0)


@converter("Split", 13)
def _split_v13(ctx: NodeContext, x: Expr, split: Expr | None = None, *, axis: int = 0, **kw: Any):
    if split is not None and not ctx.is_constant(split):
        parts = dyn.split(x, split, normalize_axis(ctx, axis, ctx.ndim(x)))
        return [TupleGetItem(parts, k) for k in range(ctx.num_outputs)]
    sizes = None if split is None else ctx.ints(split, "split")
    return _split(ctx, x, axis, sizes, int(kw.get("num_outputs") or 0))


def _slice(ctx: NodeContext, x: Expr, starts: Any, ends: Any, axes: Any, steps: Any) -> Expr:
    shape = ctx.shape(x)
    n = len(shape)
    axes = list(range(len(starts))) if axes is None or len(axes) == 0 else list(axes)
    steps = [1] * len(starts) if steps is None or len(steps) == 0 else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.fail("starts, ends, axes and steps must have the same length")
    begin, end, stride, on = [], [], [], []
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        a = normalize_axis(ctx, int(a), n)
        if st == 0:
            raise ctx.fail("a slice step is 0")
        dim = shape[a]
        big = 2**62
        b, f, k = slice(max(-big, min(big, int(s))), max(-big, min(big, int(e))), int(st)).indices(
            dim
        )
        if k < 0 and f < 0:
            f = -1 - dim  # "before index 0" for strided_slice
        begin.append(b)
        end.append(f)
        stride.append(k)
        on.append(a)
    return op.strided_slice(x, begin, end, stride, axes=on)


@converter("Slice", 1)
def _slice_v1(ctx: NodeContext, x: Expr, *, starts: Any = (), ends: Any = (), axes: Any = None):
    return _slice(ctx, x, starts, ends, axes, None)


@converter("Slice", 10)
def _slice_v10(
    ctx: NodeContext,
    x: Expr,
    starts: Expr,
    ends: Expr,
    axes: Expr | None = None,
    steps: Expr | None = None,
) -> Expr:
    if not all(ctx.is_constant(e) for e in (starts, ends, axes, steps) if e is not None):
        empty = Constant(np.zeros(0, "int64"))
        return dyn.slice_axes(
            x, starts, ends, empty if axes is None else axes, empty if steps is None else steps
        )
    return _slice(
        ctx,
        x,
        ctx.ints(starts, "starts"),
        ctx.ints(ends, "ends"),
        None if axes is None else ctx.ints(axes, "axes"),
        None if steps is None else ctx.ints(steps, "steps"),
    )


@converter("Gather", 1)
def _gather(ctx: NodeContext, x: Expr, indices: Expr, *, axis: int = 0) -> Expr:
    shape = ctx.shape(x)
    axis = normalize_axis(ctx, axis, len(shape))
    if isinstance(indices, Constant):
        idx = indices.data.numpy().astype(np.int64)
        if idx.size and (idx.min() < -shape[axis] or idx.max() >= shape[axis]):
            raise ctx.fail(f"indices out of range for axis {axis} of size {shape[axis]}")
        indices = Constant(np.where(idx < 0, idx + shape[axis], idx))
    return op.take(x, indices, axis=axis, mode="wrap")


@converter("Expand", 8)
def _expand(ctx: NodeContext, x: Expr, shape: Expr) -> Expr:
    if not ctx.is_constant(shape):
        return dyn.expand(x, shape)
    target = ctx.ints(shape, "shape")
    if not _static(ctx.shape(x)):  # ? dimensions: broadcast at run time
        return dyn.expand(x, shape)
    try:
        out = np.broadcast_shapes(ctx.shape(x), target)
    except ValueError:
        raise ctx.fail(f"cannot expand {ctx.shape(x)} to {target}") from None
    if tuple(out) == ctx.shape(x):
        return x
    return op.broadcast_to(x, tuple(out))


@converter("Tile", 6)
def _tile(ctx: NodeContext, x: Expr, repeats: Expr) -> Expr:
    if not ctx.is_constant(repeats):
        return op.tile(x, repeats)
    return op.tile(x, ctx.ints(repeats, "repeats"))


def _pad(ctx: NodeContext, x: Expr, pads: Any, value: Expr | None, mode: str, axes: Any) -> Expr:
    shape = ctx.shape(x)
    n = len(shape)
    axes = list(range(n)) if axes is None else [normalize_axis(ctx, int(a), n) for a in axes]
    k = len(axes)
    if len(pads) != 2 * k:
        raise ctx.fail(f"pads has {len(pads)} values, expected {2 * k}")
    width = [[0, 0] for _ in range(n)]
    for j, a in enumerate(axes):
        width[a] = [int(pads[j]), int(pads[j + k])]
    crop = any(b < 0 or e < 0 for b, e in width)
    grow = tuple((max(b, 0), max(e, 0)) for b, e in width)
    dt = ctx.dtype(x)
    if value is None:
        value = scalar(0, dt)
    elif ctx.shape(value) != ():
        value = op.reshape(value, ())
    out = x
    if mode == "wrap" and any(b or e for b, e in grow):
        for a, (b, e) in enumerate(grow):
            d = shape[a]
            parts: list[Expr] = []
            if b:
                parts.append(op.strided_slice(out, [d - b], [d], axes=[a]))
            parts.append(out)
            if e:
                parts.append(op.strided_slice(out, [0], [e], axes=[a]))
            out = op.concatenate(parts, axis=a) if len(parts) > 1 else out
        grow = tuple((0, 0) for _ in grow)
    if any(b or e for b, e in grow):
        np_mode = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}
        if mode not in np_mode:
            raise ctx.fail(f"unknown pad mode {mode!r}")
        out = op.nn.pad(x, grow, value, np_mode[mode])
    if crop:
        begin = [max(-b, 0) for b, _ in width]
        padded = [d + g[0] + g[1] for d, g in zip(shape, grow, strict=True)]
        end = [p - max(-e, 0) for p, (_, e) in zip(padded, width, strict=True)]
        out = op.strided_slice(out, begin, end)
    return out


@converter("Pad", 2)
def _pad_v2(
    ctx: NodeContext, x: Expr, *, pads: Any = (), value: float = 0.0, mode: str = "constant"
):
    return _pad(ctx, x, pads, scalar(value, ctx.dtype(x)), mode, None)


@converter("Pad", 11)
def _pad_v11(
    ctx: NodeContext,
    x: Expr,
    pads: Expr,
    value: Expr | None = None,
    axes: Expr | None = None,
    *,
    mode: str = "constant",
) -> Expr:
    if not all(ctx.is_constant(e) for e in (pads, value, axes) if e is not None):
        empty = Constant(np.zeros(0, "int64"))
        fill = value if value is not None else scalar(0, ctx.dtype(x))
        return dyn.pad_axes(x, pads, fill, empty if axes is None else axes, mode)
    ax = None if axes is None else ctx.ints(axes, "axes")
    return _pad(ctx, x, ctx.ints(pads, "pads"), value, mode, ax)


# -- constants ------------------------------------------------------------------------------------


def _sparse_to_dense(sparse: Any, where: str) -> np.ndarray:
    values = tensor_to_numpy(sparse.values, where)
    indices = tensor_to_numpy(sparse.indices, where).astype(np.int64)
    dims = tuple(int(d) for d in sparse.dims)
    check_shape(dims, where)
    dense = np.zeros(dims, dtype=values.dtype)
    if indices.ndim == 1:
        dense.reshape(-1)[indices] = values
    else:
        dense[tuple(indices.T)] = values
    return dense


@converter("Constant", 1)
def _constant(ctx: NodeContext, **attrs: Any) -> Expr:
    if "value" in attrs:
        return Constant(np.asarray(attrs["value"]))
    if "value_float" in attrs:
        return Constant(np.array(attrs["value_float"], dtype="float32"))
    if "value_floats" in attrs:
        return Constant(np.array(attrs["value_floats"], dtype="float32"))
    if "value_int" in attrs:
        return Constant(np.array(attrs["value_int"], dtype="int64"))
    if "value_ints" in attrs:
        return Constant(np.array(attrs["value_ints"], dtype="int64"))
    if "sparse_value" in attrs:
        return Constant(_sparse_to_dense(attrs["sparse_value"], ctx.where))
    if "value_string" in attrs or "value_strings" in attrs:
        raise ctx.unsupported("a string constant")
    raise ctx.fail("has none of the value attributes")


@converter("ConstantOfShape", 9)
def _constant_of_shape(ctx: NodeContext, shape: Expr, *, value: Any = None) -> Expr:
    if not ctx.is_constant(shape):
        fill = np.zeros(1, dtype="float32") if value is None else np.asarray(value).reshape(-1)
        return op.full(Constant(fill.reshape(())), shape, fill.dtype.name)
    dims = ctx.ints(shape, "shape")
    fill = np.zeros(1, dtype="float32") if value is None else np.asarray(value).reshape(-1)
    if fill.size != 1:
        raise ctx.fail(f"value must hold one element, got {fill.size}")
    check_shape(dims, ctx.where)
    if math.prod(dims) * fill.dtype.itemsize > ctx.importer.max_fold_bytes:
        # too large to build at import: filled when the model runs
        return op.full(Constant(fill.reshape(())), dims, fill.dtype.name)
    return Constant(np.full(dims, fill[0], dtype=fill.dtype))


@converter("Range", 11)
def _range(ctx: NodeContext, start: Expr, limit: Expr, delta: Expr) -> Expr:
    if not all(ctx.is_constant(e) for e in (start, limit, delta)):
        dt = ctx.dtype(start)
        lo, hi, step = (
            e if ctx.shape(e) == () else op.reshape(e, ()) for e in (start, limit, delta)
        )
        return op.arange(lo, hi, step, dtype=dt)
    s = ctx.scalar(start, "start")
    lim = ctx.scalar(limit, "limit")
    d = ctx.scalar(delta, "delta")
    if not np.isfinite([float(s), float(lim), float(d)]).all() or float(d) == 0.0:
        raise ctx.fail(f"start {s}, limit {lim} and delta {d} must be finite, delta nonzero")
    n = max(int(np.ceil((float(lim) - float(s)) / float(d))), 0)
    ctx.check_constant((n,), np.dtype(s.dtype).itemsize, "the range")
    return Constant((s + np.arange(n, dtype=s.dtype) * d).astype(s.dtype))


@converter("EyeLike", 9)
def _eye_like(ctx: NodeContext, x: Expr, *, dtype: Any = None, k: int = 0) -> Expr:
    shape = ctx.shape(x)
    if len(shape) != 2:
        raise ctx.fail(f"EyeLike needs a 2-D input, got shape {shape}")
    dt = onnx_dtype_name(dtype, ctx.where) if dtype else ctx.dtype(x)
    ctx.check_constant(shape, 8, "the identity matrix")
    return Constant(np.eye(shape[0], shape[1], k=k, dtype=dt))
