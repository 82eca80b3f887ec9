"""Converters of the aten array ops beyond :mod:`.ops_tensor`: bitwise and logical
ops with torch's dtype rules, broadcasting and tiling, triangles, rolls and
repeats, fills, one-hot and linspace, statistics and norms (``var``, ``std``,
``logsumexp``, ``linalg_vector_norm``), vector products, sorting and searching,
scatter and ``index_put``, random numbers.
"""

from __future__ import annotations

import itertools
import operator
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit import op
from relaykit.ir.expr import Expr
from relaykit.op import random

from .ops_math import promote
from .ops_tensor import index_tensor
from .registry import OpContext, as_int_list, const_value, converter, dtype_name, is_float

__all__: list[str] = []


def _opt(args: list[Any], i: int, default: Any = None) -> Any:
    return args[i] if len(args) > i and args[i] is not None else default


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, bool)) and not isinstance(value, Expr)


def _float(ctx: OpContext, value: Any) -> Expr:
    x = ctx.expr(value)
    return x if is_float(ctx.dtype(x)) else op.cast(x, ctx.default_dtype)


def _as_bool(ctx: OpContext, value: Any) -> Expr:
    x = ctx.expr(value)
    return x if ctx.dtype(x) == "bool" else op.not_equal(x, ctx.expr(0, ctx.dtype(x)))


# -- logical and bitwise ---------------------------------------------------------------------
def _logical(relay_fn: Callable[[Expr, Expr], Expr], py_fn: Callable[[Any, Any], Any]) -> Any:
    """torch's logical_*: any dtype, nonzero is true, the result is bool."""

    def convert(ctx: OpContext, args: list[Any]) -> Any:
        a, b = args[0], args[1]
        if _is_number(a) and _is_number(b):
            return bool(py_fn(bool(a), bool(b)))
        return relay_fn(_as_bool(ctx, a), _as_bool(ctx, b))

    return convert


converter("logical_and")(_logical(op.logical_and, operator.and_))
converter("logical_or")(_logical(op.logical_or, operator.or_))
converter("logical_xor")(_logical(op.logical_xor, operator.xor))


@converter("logical_not", "__not__")
def _logical_not(ctx: OpContext, args: list[Any]) -> Any:
    if _is_number(args[0]):
        return not args[0]
    return op.logical_not(_as_bool(ctx, args[0]))


def _bitwise(
    relay_fn: Callable[[Expr, Expr], Expr],
    bool_fn: Callable[[Expr, Expr], Expr],
    py_fn: Callable[[Any, Any], Any],
) -> Any:
    """torch's bitwise ops (and ``&``, ``|``, ``^``): bitwise on integers, logical on bools."""

    def convert(ctx: OpContext, args: list[Any]) -> Any:
        a, b = args[0], args[1]
        if _is_number(a) and _is_number(b):
            return py_fn(a, b)
        ea, eb = promote(ctx, a, b)
        if is_float(ctx.dtype(ea)):
            raise ctx.fail(f"{ctx.op_name} takes integer or bool tensors, got {ctx.dtype(ea)}")
        return (bool_fn if ctx.dtype(ea) == "bool" else relay_fn)(ea, eb)

    return convert


converter("bitwise_and", "__and__", "__iand__")(
    _bitwise(op.bitwise_and, op.logical_and, operator.and_)
)
converter("bitwise_or", "__or__", "__ior__")(_bitwise(op.bitwise_or, op.logical_or, operator.or_))
converter("bitwise_xor", "__xor__", "__ixor__")(
    _bitwise(op.bitwise_xor, op.logical_xor, operator.xor)
)
converter("bitwise_left_shift", "__lshift__")(
    _bitwise(op.left_shift, op.left_shift, operator.lshift)
)
converter("bitwise_right_shift", "__rshift__")(
    _bitwise(op.right_shift, op.right_shift, operator.rshift)
)


@converter("bitwise_not")
def _bitwise_not(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    return op.logical_not(x) if ctx.dtype(x) == "bool" else op.bitwise_not(x)


@converter("isfinite")
def _isfinite(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    if not is_float(ctx.dtype(x)):
        return op.ones_like(op.cast(x, "bool"))
    return op.isfinite(x)


@converter("is_floating_point")
def _is_floating_point(ctx: OpContext, args: list[Any]) -> bool:
    return is_float(ctx.dtype(args[0]))


# -- arithmetic ---------------------------------------------------------------------------
@converter("square")
def _square(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    if ctx.dtype(x) == "bool":
        x = op.cast(x, "int64")
    return op.multiply(x, x)


def _addc(relay_fn: Callable[[Expr, Expr], Expr]) -> Any:
    def convert(ctx: OpContext, args: list[Any]) -> Expr:
        # (input, tensor1, tensor2, value): input + value * fn(tensor1, tensor2)
        prod = relay_fn(*promote(ctx, args[1], args[2]))
        value = _opt(args, 3, 1)
        if value != 1:
            prod = op.multiply(*promote(ctx, prod, value))
        return op.add(*promote(ctx, args[0], prod))

    return convert


converter("addcmul")(_addc(op.multiply))
converter("addcdiv")(_addc(op.divide))


@converter("lerp")
def _lerp(ctx: OpContext, args: list[Any]) -> Expr:
    # start + weight * (end - start)
    start, end = promote(ctx, args[0], args[1])
    diff = op.subtract(end, start)
    return op.add(start, op.multiply(*promote(ctx, diff, args[2])))


@converter("dot", "vdot")
def _dot(ctx: OpContext, args: list[Any]) -> Expr:
    a, b = promote(ctx, args[0], args[1])
    return op.sum(op.multiply(a, b))


@converter("mv")
def _mv(ctx: OpContext, args: list[Any]) -> Expr:
    a, v = promote(ctx, args[0], args[1])
    return op.sum(op.multiply(a, op.expand_dims(v, 0)), axis=[1])


# -- statistics and norms -------------------------------------------------------------------
def _axes(ctx: OpContext, x: Expr, dims: Any) -> list[int] | None:
    if dims is None:
        return None
    dims = as_int_list(dims)
    return [ctx.axis(x, d) for d in dims] or None


def _moments_args(ctx: OpContext, args: list[Any]) -> tuple[Any, bool, bool]:
    """(dims, unbiased, keepdim) of var/std: (x, unbiased) / (x, dim, unbiased, keepdim) /
    (x, dim, correction=, keepdim=)."""
    if len(args) == 2:
        return None, bool(args[1]), False
    dims, corr, keep = args[1], args[2], bool(_opt(args, 3, False))
    unbiased = True if corr is None else bool(corr)  # correction 1 / unbiased True
    if isinstance(corr, (int, float)) and not isinstance(corr, bool) and corr not in (0, 1):
        raise ctx.fail(f"correction={corr} is not supported (0 and 1 are)")
    return dims, unbiased, keep


def _moment(ctx: OpContext, args: list[Any], std: bool) -> Expr:
    x = _float(ctx, args[0])
    dims, unbiased, keep = _moments_args(ctx, args)
    fn = op.std if std else op.variance
    return fn(x, _axes(ctx, x, dims), keepdims=keep, unbiased=unbiased)


@converter("var")
def _var(ctx: OpContext, args: list[Any]) -> Expr:
    return _moment(ctx, args, std=False)


@converter("std")
def _std(ctx: OpContext, args: list[Any]) -> Expr:
    return _moment(ctx, args, std=True)


@converter("var_mean", "std_mean")
def _var_mean(ctx: OpContext, args: list[Any]) -> list[Expr]:
    x = _float(ctx, args[0])
    dims, _, keep = _moments_args(ctx, args)
    mean = op.mean(x, _axes(ctx, x, dims), keepdims=keep)
    return [_moment(ctx, args, std=ctx.op_name.endswith("std_mean")), mean]


@converter("logsumexp")
def _logsumexp(ctx: OpContext, args: list[Any]) -> Expr:
    x = _float(ctx, args[0])
    return op.logsumexp(x, _axes(ctx, x, args[1]), keepdims=bool(_opt(args, 2, False)))


@converter("linalg_vector_norm", "norm", "frobenius_norm", "linalg_norm")
def _vector_norm(ctx: OpContext, args: list[Any]) -> Expr:
    # linalg_vector_norm(x, ord, dim, keepdim, dtype) / norm(x, p, dim, keepdim[, dtype])
    # / frobenius_norm(x, dim, keepdim)
    if ctx.op_name.endswith("frobenius_norm"):
        order: Any = 2
        dims, keep, dtype = _opt(args, 1), bool(_opt(args, 2, False)), None
    else:
        order = _opt(args, 1, 2)
        dims, keep, dtype = _opt(args, 2), bool(_opt(args, 3, False)), _opt(args, 4)
    x = ctx.expr(args[0])
    if dtype is not None:
        x = op.cast(x, dtype_name(dtype) or ctx.default_dtype)
    x = _float(ctx, x)
    axes = _axes(ctx, x, dims)
    if isinstance(order, str):
        if order != "fro":
            raise ctx.fail(f"norm ord={order!r} is not supported (vector norms and 'fro' are)")
        order = 2
    p = float(order)
    ax = op.abs(x)
    if p == float("inf"):
        return op.max(ax, axes, keepdims=keep)
    if p == float("-inf"):
        return op.min(ax, axes, keepdims=keep)
    if p == 0:
        nonzero = op.cast(op.not_equal(x, ctx.expr(0.0, ctx.dtype(x))), ctx.dtype(x))
        return op.sum(nonzero, axes, keepdims=keep)
    if p == 1:
        return op.sum(ax, axes, keepdims=keep)
    if p == 2:
        return op.sqrt(op.sum(op.multiply(x, x), axes, keepdims=keep))
    dt = ctx.dtype(x)
    powered = op.sum(op.power(ax, ctx.expr(p, dt)), axes, keepdims=keep)
    return op.power(powered, ctx.expr(1.0 / p, dt))


# -- broadcasting, tiling and rearranging ----------------------------------------------------
def _broadcast_shape(shapes: list[tuple[int, ...]]) -> list[int]:
    n = max(len(s) for s in shapes)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate((1,) * (n - len(s)) + tuple(s)):
            out[i] = max(out[i], d)
    return out


@converter("broadcast_tensors")
def _broadcast_tensors(ctx: OpContext, args: list[Any]) -> list[Expr]:
    xs = [ctx.expr(x) for x in args[0]]
    shape = _broadcast_shape([ctx.shape(x) for x in xs])
    return [x if list(ctx.shape(x)) == shape else op.broadcast_to(x, shape) for x in xs]


@converter("meshgrid")
def _meshgrid(ctx: OpContext, args: list[Any]) -> list[Expr]:
    xs = [ctx.expr(x) for x in args[0]]
    indexing = _opt(args, 1, "ij")
    grid = op.meshgrid(xs, indexing=indexing)
    return [grid[i] for i in range(len(xs))]


@converter("tile")
def _tile(ctx: OpContext, args: list[Any]) -> Expr:
    return op.tile(ctx.expr(args[0]), as_int_list(args[1]))


@converter("tril", "triu")
def _trilu(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    k = int(_opt(args, 1, 0))
    return op.trilu(x, ctx.expr(k, "int32"), upper=ctx.op_name.endswith("triu"))


@converter("roll")
def _roll(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, shifts, dims): no dims rolls the flattened tensor
    x = ctx.expr(args[0])
    shifts = as_int_list(args[1])
    dims = as_int_list(_opt(args, 2, []))
    shape = list(ctx.shape(x))
    if not dims:
        flat = _roll_axis(op.reshape(x, [-1]), int(np.prod(shape)), shifts[0], 0)
        return op.reshape(flat, shape)
    for shift, dim in zip(shifts, dims, strict=True):
        axis = ctx.axis(x, dim)
        x = _roll_axis(x, shape[axis], shift, axis)
    return x


def _roll_axis(x: Expr, size: int, shift: int, axis: int) -> Expr:
    k = shift % size if size else 0
    if k == 0:
        return x
    tail = op.strided_slice(x, [size - k], [size], axes=[axis])
    head = op.strided_slice(x, [0], [size - k], axes=[axis])
    return op.concatenate([tail, head], axis)


@converter("repeat_interleave")
def _repeat_interleave(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, repeats, dim, output_size): repeats an int or a tensor known at import
    x = ctx.expr(args[0])
    dim = _opt(args, 2)
    if dim is None:
        x, axis = op.reshape(x, [-1]), 0
    else:
        axis = ctx.axis(x, dim)
    reps = const_value(args[1])
    if reps is None:
        raise ctx.fail("repeat_interleave with repeats only known at run time is not supported")
    counts = np.asarray(reps).reshape(-1)
    if counts.size == 1:
        return op.repeat(x, int(counts[0]), axis)
    index = np.repeat(np.arange(counts.size), counts).astype("int64")
    return op.take(x, ctx.expr(index), axis=axis)


@converter("tensor_split")
def _tensor_split(ctx: OpContext, args: list[Any]) -> list[Expr]:
    # (input, sections | indices, dim)
    x = ctx.expr(args[0])
    axis = ctx.axis(x, _opt(args, 2, 0))
    size = ctx.shape(x)[axis]
    spec = const_value(args[1])
    if np.asarray(spec).ndim == 0:  # n parts, the first size % n one larger
        n = int(spec)
        lengths = [size // n + (1 if i < size % n else 0) for i in range(n)]
        bounds = list(np.cumsum([0, *lengths]))
    else:
        idx = [min(max(int(i), 0), size) for i in as_int_list(spec)]
        bounds = [0, *idx, size]
    return [
        op.strided_slice(x, [int(b)], [max(int(b), int(e))], axes=[axis])
        for b, e in itertools.pairwise(bounds)
    ]


@converter("take")
def _take(ctx: OpContext, args: list[Any]) -> Expr:
    x, index = ctx.expr(args[0]), index_tensor(ctx, args[1])
    n = int(np.prod(ctx.shape(x)))
    wrapped = op.where(op.less(index, ctx.expr(0, ctx.dtype(index))),
                       op.add(index, ctx.expr(n, ctx.dtype(index))), index)  # fmt: skip
    return op.take(op.reshape(x, [-1]), wrapped, axis=0)


# -- fills and constants --------------------------------------------------------------------
@converter("new_zeros", "new_ones", "new_full", "new_empty")
def _new_filled(ctx: OpContext, args: list[Any]) -> Expr:
    # new_zeros(self, size, dtype, ...) / new_full(self, size, fill_value, dtype, ...)
    x = ctx.expr(args[0])
    if ctx.op_name.endswith("new_full"):
        value, dtype = args[2], _opt(args, 3)
    else:
        value, dtype = (1 if ctx.op_name.endswith("new_ones") else 0), _opt(args, 2)  # empty: 0
    name = dtype_name(dtype) or ctx.dtype(x)
    shape = [int(np.asarray(const_value(d))) for d in as_list(args[1])]
    return op.full(ctx.expr(value, name), shape, name)


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


@converter("fill", "fill_")
def _fill(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    dt = ctx.dtype(x)
    value = ctx.expr(args[1], dt)
    if ctx.dtype(value) != dt:
        value = op.cast(value, dt)
    if all(isinstance(d, int) for d in ctx.shape(x)):
        return op.full(op.reshape(value, []), list(ctx.shape(x)), dt)
    return op.full_like(x, op.reshape(value, []))


@converter("zero", "zero_")
def _zero(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    if all(isinstance(d, int) for d in ctx.shape(x)):
        return op.zeros(list(ctx.shape(x)), ctx.dtype(x))
    return op.zeros_like(x)


@converter("one_hot")
def _one_hot(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    depth = int(_opt(args, 1, -1))
    if depth < 0:
        data = const_value(x)
        if data is None:
            raise ctx.fail("one_hot needs num_classes when the indices are only known at run time")
        depth = int(np.max(data)) + 1
    one, zero = ctx.expr(1, "int64"), ctx.expr(0, "int64")
    return op.one_hot(x, one, zero, depth, -1, "int64")


@converter("linspace")
def _linspace(ctx: OpContext, args: list[Any]) -> Expr:
    # (start, end, steps, dtype, layout, device, pin_memory)
    start, end = const_value(args[0]), const_value(args[1])
    if start is None or end is None:
        raise ctx.fail("linspace with bounds only known at run time is not supported")
    dtype = dtype_name(_opt(args, 3)) or ctx.default_dtype
    values = np.linspace(float(np.asarray(start)), float(np.asarray(end)), int(args[2]))
    if not is_float(dtype):
        values = np.trunc(values)
    return ctx.expr(values.astype(dtype), dtype)


@converter("tensor", "as_tensor")
def _tensor(ctx: OpContext, args: list[Any]) -> Expr:
    # (data, dtype, device, requires_grad)
    data = args[0]
    if isinstance(data, Expr):
        dtype = dtype_name(_opt(args, 1))
        return data if dtype is None or dtype == ctx.dtype(data) else op.cast(data, dtype)
    arr = np.asarray(data)
    dtype = dtype_name(_opt(args, 1))
    if dtype is None:
        dtype = "bool" if arr.dtype == np.bool_ else (
            "int64" if np.issubdtype(arr.dtype, np.integer) else ctx.default_dtype
        )  # fmt: skip
    return ctx.expr(arr.astype(dtype), dtype)


# -- sorting and searching ------------------------------------------------------------------
@converter("argsort")
def _argsort(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, dim, descending) / (input, stable, dim, descending)
    x = ctx.expr(args[0])
    if len(args) == 4:
        dim, descending = args[2], args[3]
    else:
        dim, descending = _opt(args, 1, -1), _opt(args, 2, False)
    return op.argsort(x, axis=ctx.axis(x, dim), is_ascend=not descending, dtype="int64")


@converter("searchsorted")
def _searchsorted(ctx: OpContext, args: list[Any]) -> Expr:
    # (sorted_sequence, input, out_int32, right, side, sorter)
    right = bool(_opt(args, 3, False)) or _opt(args, 4) == "right"
    if _opt(args, 5) is not None:
        raise ctx.fail("searchsorted with a sorter is not supported")
    dtype = "int32" if _opt(args, 2, False) else "int64"
    return _search(ctx, ctx.expr(args[0]), ctx.expr(args[1]), right, dtype)


def _search(ctx: OpContext, seq: Expr, values: Expr, right: bool, dtype: str) -> Expr:
    if ctx.ndim(values) == 0:  # one value: searched as a 1-element vector
        found = op.searchsorted(seq, op.reshape(values, [1]), right=right, dtype=dtype)
        return op.reshape(found, [])
    return op.searchsorted(seq, values, right=right, dtype=dtype)


@converter("bucketize")
def _bucketize(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, boundaries, out_int32, right)
    dtype = "int32" if _opt(args, 2, False) else "int64"
    values, bounds = ctx.expr(args[0]), ctx.expr(args[1])
    return _search(ctx, bounds, values, bool(_opt(args, 3, False)), dtype)


# -- scatter --------------------------------------------------------------------------------
_REDUCTIONS = {"sum": "add", "add": "add", "prod": "mul", "multiply": "mul",
               "mean": "mean", "amax": "max", "amin": "min"}  # fmt: skip


@converter("scatter", "scatter_add", "scatter_reduce")
def _scatter(ctx: OpContext, args: list[Any]) -> Expr:
    # scatter(x, dim, index, src|value[, reduce]) / scatter_add(x, dim, index, src)
    # / scatter_reduce(x, dim, index, src, reduce, include_self)
    x, index = ctx.expr(args[0]), index_tensor(ctx, args[2])
    axis = ctx.axis(x, args[1])
    src = args[3]
    dt = ctx.dtype(x)
    if 0 in ctx.shape(index):  # nothing is scattered
        return x
    if _is_number(src):
        src = op.full(ctx.expr(src, dt), list(ctx.shape(index)), dt)
    src = ctx.expr(src)
    if ctx.shape(src) != ctx.shape(index):  # only the index's region of src is used
        src = op.strided_slice(src, [0] * ctx.ndim(index), list(ctx.shape(index)))
    reduction = "update"
    if ctx.op_name.endswith("scatter_add"):
        reduction = "add"
    elif len(args) > 4 and isinstance(args[4], str):
        reduction = _REDUCTIONS.get(args[4], "")
        if not reduction:
            raise ctx.fail(f"scatter reduce={args[4]!r} is not supported")
        if ctx.op_name.endswith("scatter_reduce") and not bool(_opt(args, 5, True)):
            raise ctx.fail("scatter_reduce with include_self=False is not supported")
    if reduction == "mean":  # the sum over x and the scattered values, over their count
        total = op.scatter_elements(x, index, src, axis=axis, reduction="add")
        ones = op.ones_like(x)
        count = op.scatter_elements(ones, index, op.ones_like(src), axis=axis, reduction="add")
        if is_float(dt):
            return op.divide(total, count)
        return op.floor_divide(total, count)
    return op.scatter_elements(x, index, src, axis=axis, reduction=reduction)


@converter("index_put")
def _index_put(ctx: OpContext, args: list[Any]) -> Expr:
    # (input, indices (one index tensor per leading axis), values, accumulate)
    x = ctx.expr(args[0])
    if any(i is None for i in args[1]):
        raise ctx.fail("index_put with a None index (a full slice) is not supported")
    indices = [ctx.expr(i) for i in args[1]]
    if any(ctx.dtype(i) == "bool" for i in indices):
        raise ctx.fail("index_put with a boolean mask is not supported (its size is dynamic)")
    indices = [index_tensor(ctx, i) for i in indices]
    shape = _broadcast_shape([ctx.shape(i) for i in indices])
    stacked = op.stack([op.broadcast_to(i, shape) for i in indices], 0)
    rest = list(ctx.shape(x))[len(indices) :]
    values = op.broadcast_to(ctx.expr(args[2], ctx.dtype(x)), [*shape, *rest])
    mode = "add" if bool(_opt(args, 3, False)) else "update"
    return op.scatter_nd(x, stacked, values, reduction=mode)


# -- random numbers -------------------------------------------------------------------------
def _key(ctx: OpContext) -> Expr:
    """A threefry key seeded from the node (the same model imports to the same graph;
    its numbers follow relaykit's generator, not torch's)."""
    return random.threefry_key(zlib.crc32(ctx.where.encode()))


@converter("randn", "rand", "randn_like", "rand_like")
def _random(ctx: OpContext, args: list[Any]) -> Expr:
    # randn(size, dtype, layout, device, pin_memory) / randn_like(x, dtype, ...)
    if isinstance(args[0], Expr):
        x = ctx.expr(args[0])
        shape, dtype = list(ctx.shape(x)), dtype_name(_opt(args, 1)) or ctx.dtype(x)
    else:
        shape = [int(np.asarray(const_value(d))) for d in as_list(args[0])]
        dtype = dtype_name(_opt(args, 1)) or ctx.default_dtype
    if ctx.op_name.split("::")[-1].startswith("randn"):
        return random.normal(_key(ctx), shape, dtype)[1]
    return random.uniform(_key(ctx), shape, dtype)[1]


@converter("multinomial")
def _multinomial(ctx: OpContext, args: list[Any]) -> Expr:
    # (probs, num_samples, replacement, generator)
    n = int(args[1])
    if not bool(_opt(args, 2, False)) and n > 1:
        raise ctx.fail("multinomial without replacement is not supported (replacement=True is)")
    probs = _float(ctx, args[0])
    return op.cast(random.multinomial(_key(ctx), probs, n)[1], "int64")


@converter("_unique2", "unique_dim", "_unique")
def _unique(ctx: OpContext, args: list[Any]) -> list[Expr]:
    # _unique2(x, sorted, return_inverse, return_counts) -> (values, inverse, counts); the
    # number of values is known at run time only (the VM runs the result)
    if ctx.op_name.endswith("unique_dim"):
        raise ctx.fail("unique along a dimension is not supported (unique of all elements is)")
    x = ctx.expr(args[0])
    shape = list(ctx.shape(x))
    flat = op.reshape(x, [-1])
    found = op.unique(flat, bool(_opt(args, 1, True)), True)
    n = op.reshape(op.cast(found[3], "int64"), [1])
    zero = ctx.expr(np.array([0], dtype="int64"))
    values = op.strided_slice(found[0], begin=zero, end=n)
    inverse = op.reshape(op.cast(found[2], "int64"), shape)
    counts = op.cast(op.strided_slice(found[4], begin=zero, end=n), "int64")
    return [values, inverse, counts]
