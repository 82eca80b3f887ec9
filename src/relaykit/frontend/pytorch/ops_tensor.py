"""Converters of aten ops that move, select, create or reduce tensors: views and
reshapes, slicing and indexing, concatenation and splitting, constant tensors
(``arange``, ``zeros``...), sizes and reductions. Sizes are static: ``size``
answers a Python int from the argument's type.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import op
from relaykit.errors import DynamicShapeError
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Call, Expr, Tuple, TupleGetItem, TupleWrapper
from relaykit.op import nn
from relaykit.transform.fold_constant import fold_constant

from .ops_math import cast_to
from .registry import OpContext, as_int_list, const_value, converter, dtype_name

__all__: list[str] = []

_BIG = 2**62


def _shape_arg(ctx: OpContext, value: Any) -> list[int]:
    out = []
    for v in value if isinstance(value, (list, tuple)) else [value]:
        c = const_value(v)
        if c is None:
            raise ctx.fail("a shape that is only known at run time is not supported")
        out.append(int(np.asarray(c)))
    return out


def _sizes(ctx: OpContext, value: Any) -> list[int | None]:
    """A size list whose items may be run-time sizes (scalar expressions, from ``sym_size``
    of a symbolic dimension): those are ``None``."""
    items = value if isinstance(value, (list, tuple)) else [value]
    return [None if const_value(v) is None else int(np.asarray(const_value(v))) for v in items]


def _is_static(shape: Any) -> bool:
    return all(isinstance(d, (int, np.integer)) for d in shape)


# -- identities ---------------------------------------------------------------------------
@converter(
    "contiguous", "clone", "detach", "alias", "lift_fresh", "lift_fresh_copy",
    "dropout", "feature_dropout", "alpha_dropout", "copy", "_to_dense",
)  # fmt: skip
def _identity(ctx: OpContext, args: list[Any]) -> Any:
    """Inference: dropout is the identity; copies and layout changes are values."""
    return args[0]


@converter("copy_")
def _copy_(ctx: OpContext, args: list[Any]) -> Expr:
    """``dst.copy_(src)``: ``src`` in ``dst``'s dtype and shape (the walker writes it back)."""
    dst = ctx.expr(args[0])
    src = ctx.expr(args[1], ctx.dtype(dst))
    if ctx.dtype(src) != ctx.dtype(dst):
        src = op.cast(src, ctx.dtype(dst))
    return op.broadcast_to(src, list(ctx.shape(dst)))


@converter("native_dropout")
def _native_dropout(ctx: OpContext, args: list[Any]) -> Any:
    x = ctx.expr(args[0])
    return [x, op.ones_like(op.cast(x, "bool"))]


@converter("_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range_for_size")
def _no_value(ctx: OpContext, args: list[Any]) -> None:
    return None


# -- sizes --------------------------------------------------------------------------------
@converter("size", "sym_size")
def _size(ctx: OpContext, args: list[Any]) -> Any:
    """Static sizes as ints; a symbolic (``relay.Any``) size as a scalar int64 expression."""
    x = ctx.expr(args[0])
    shape = list(ctx.shape(x))

    def size(d: int) -> Any:
        if isinstance(shape[d], (int, np.integer)):
            return int(shape[d])
        return op.take(op.shape_of(x, "int64"), ctx.expr(d, "int64"))

    if len(args) > 1 and args[1] is not None:
        return size(ctx.axis(x, args[1]))
    return [size(d) for d in range(len(shape))]


@converter("numel", "sym_numel")
def _numel(ctx: OpContext, args: list[Any]) -> int:
    return int(np.prod(ctx.shape(args[0]), dtype=np.int64))


@converter("dim")
def _dim(ctx: OpContext, args: list[Any]) -> int:
    return ctx.ndim(args[0])


@converter("Int", "Float", "Bool", "ScalarImplicit", "item", "_local_scalar_dense")
def _scalar(ctx: OpContext, args: list[Any]) -> Any:
    value = const_value(args[0])
    if value is None and isinstance(args[0], Expr) and not free_vars(args[0]):
        value = const_value(fold_constant(args[0]))  # computed from constants (sizes...)
    if value is None and ctx.op_name.endswith("::Bool") and isinstance(args[0], Expr):
        return op.cast(op.reshape(args[0], []), "bool")  # a run-time condition (prim::If)
    if value is None:
        raise ctx.fail("a tensor's value used as a Python number is only known at run time")
    return np.asarray(value).item()


# -- dtype changes ------------------------------------------------------------------------
@converter("to", "_to_copy")
def _to(ctx: OpContext, args: list[Any]) -> Any:
    x = args[0]
    rest = args[1:]
    if rest and isinstance(rest[0], Expr):  # to(other, ...)
        return cast_to(ctx, x, ctx.dtype(rest[0]))
    # to(dtype, non_blocking, copy, memory_format) / to(device, dtype, ...) /
    # _to_copy(dtype, layout, device, pin_memory, non_blocking, memory_format)
    dtype = None
    if len(rest) in (4,) or (rest and not _is_device(rest[0])):
        dtype = rest[0] if rest else None
    elif len(rest) >= 2:
        dtype = rest[1]
    if isinstance(dtype, bool):
        dtype = None
    return cast_to(ctx, x, dtype)


def _is_device(value: Any) -> bool:
    return value is not None and (
        type(value).__name__ == "device" or (isinstance(value, str) and value != "")
    )


@converter("type")
def _type(ctx: OpContext, args: list[Any]) -> Any:
    return cast_to(ctx, args[0], args[1])


@converter("float")
def _float(ctx: OpContext, args: list[Any]) -> Any:
    return cast_to(ctx, args[0], "float32")


@converter("long")
def _long(ctx: OpContext, args: list[Any]) -> Any:
    return cast_to(ctx, args[0], "int64")


# -- reshapes ------------------------------------------------------------------------------
@converter("view", "reshape", "_unsafe_view", "view_copy", "_reshape_alias")
def _reshape(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    sizes = _sizes(ctx, args[1])
    traced = ctx.out_shape
    if None in sizes and traced is not None and len(traced) == len(sizes):
        # torch knows the static sizes of the result: only its symbolic ones stay open
        sizes = [
            t if t is not None else (None if s is None else s)
            for s, t in zip(sizes, traced, strict=True)
        ]
    if None in sizes:
        items = list(args[1]) if isinstance(args[1], (list, tuple)) else [args[1]]
        # x's own run-time size at the same position: relay's 0 (copy that dimension)
        sizes = [0 if s is None and _size_of(items[i], x) == i else s for i, s in enumerate(sizes)]
        if sizes.count(None) + sizes.count(-1) > 1:
            raise DynamicShapeError(
                f"{ctx.where}: a reshape to {len(sizes)} dimensions of which several are only "
                "known at run time; export with fewer symbolic sizes"
            )
        # one run-time size left (a symbolic dimension): the one relay infers
        return op.reshape(x, [-1 if d is None else d for d in sizes])
    shape = [int(d) for d in sizes if d is not None]
    if not _is_static(ctx.shape(x)):
        return op.reshape(x, shape)
    if any(d == -1 for d in shape):
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        total = int(np.prod(ctx.shape(x), dtype=np.int64))
        shape = [total // max(known, 1) if d == -1 else d for d in shape]
    if tuple(shape) == ctx.shape(x):
        return x
    return op.reshape(x, shape)


def _size_of(item: Any, x: Expr) -> int | None:
    """``d`` when ``item`` is ``x``'s run-time size ``d`` (``take(shape_of(x), d)``, what
    ``sym_size`` gives), else None."""
    if not (isinstance(item, Call) and getattr(item.op, "name", "") == "take"):
        return None
    shape, index = item.args[0], const_value(item.args[1])
    if not (isinstance(shape, Call) and getattr(shape.op, "name", "") == "shape_of"):
        return None
    return int(index) if shape.args[0] is x and index is not None else None


@converter("view_as", "reshape_as")
def _view_as(ctx: OpContext, args: list[Any]) -> Expr:
    return _reshape(ctx, [args[0], list(ctx.shape(args[1]))])


@converter("flatten")
def _flatten(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    shape = list(ctx.shape(x))
    if not shape:
        return op.reshape(x, [1])
    start = ctx.axis(x, args[1] if len(args) > 1 else 0)
    end = ctx.axis(x, args[2] if len(args) > 2 else -1)
    merged = int(np.prod(shape[start : end + 1], dtype=np.int64))
    return _reshape(ctx, [x, [*shape[:start], merged, *shape[end + 1 :]]])


@converter("unflatten")
def _unflatten(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    shape = list(ctx.shape(x))
    d = ctx.axis(x, args[1])
    return _reshape(ctx, [x, [*shape[:d], *as_int_list(args[2]), *shape[d + 1 :]]])


@converter("permute", "permute_copy")
def _permute(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    axes = [ctx.axis(x, d) for d in as_int_list(args[1])]
    if axes == list(range(len(axes))):
        return x
    return op.transpose(x, axes)


@converter("transpose", "transpose_copy", "swapaxes")
def _transpose(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    axes = list(range(ctx.ndim(x)))
    a, b = ctx.axis(x, args[1]), ctx.axis(x, args[2])
    axes[a], axes[b] = axes[b], axes[a]
    return _permute(ctx, [x, axes])


@converter("t", "t_copy", "numpy_T")
def _t(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    if ctx.ndim(x) < 2:
        return x
    return _permute(ctx, [x, list(reversed(range(ctx.ndim(x))))])


@converter("unsqueeze", "unsqueeze_copy")
def _unsqueeze(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    d = int(args[1])
    if d < 0:
        d += ctx.ndim(x) + 1
    return op.expand_dims(x, d)


@converter("squeeze", "squeeze_copy")
def _squeeze(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    shape = ctx.shape(x)
    if len(args) < 2 or args[1] is None:
        axes = [i for i, s in enumerate(shape) if s == 1]
    else:
        axes = [ctx.axis(x, d) for d in as_int_list(args[1])]
        axes = [a for a in axes if shape[a] == 1]  # torch ignores non-1 dims
    return op.squeeze(x, axes) if axes else x


@converter("expand", "expand_copy", "broadcast_to")
def _expand(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    items = list(args[1]) if isinstance(args[1], (list, tuple)) else [args[1]]
    size = _sizes(ctx, items)
    shape = list(ctx.shape(x))
    lead = len(size) - len(shape)
    out: list[Any] = []
    dynamic = False
    for i, (s, item) in enumerate(zip(size, items, strict=True)):
        own = shape[i - lead] if i >= lead else None
        if s == -1 or (s is None and own is not None and not isinstance(own, int)):
            out.append(own)  # keep the input's size (a symbolic one is the same size)
        elif s is None:
            out.append(item)  # a run-time size the input broadcasts to
            dynamic = True
        else:
            out.append(s)
    if not dynamic and tuple(out) == tuple(shape):
        return x
    if dynamic or not _is_static(out):
        return op.broadcast_to(x, _shape_tensor(ctx, x, out, lead))
    return op.broadcast_to(x, out)


def _shape_tensor(ctx: OpContext, x: Expr, sizes: list[Any], lead: int) -> Expr:
    """An int64 shape vector of ``sizes``: ints, scalar expressions, or ``relay.Any``
    (the run-time size of ``x``'s dimension ``i - lead``)."""
    pieces = []
    for i, d in enumerate(sizes):
        if isinstance(d, (int, np.integer)):
            pieces.append(ctx.expr(np.array([int(d)], "int64")))
        elif isinstance(d, Expr):
            pieces.append(op.reshape(cast_to(ctx, d, "int64"), [1]))
        else:
            dim = ctx.expr(np.array([i - lead], "int64"))
            pieces.append(op.take(op.shape_of(x, "int64"), dim))
    return op.concatenate(pieces, 0)


@converter("expand_as")
def _expand_as(ctx: OpContext, args: list[Any]) -> Expr:
    return _expand(ctx, [args[0], list(ctx.shape(args[1]))])


@converter("repeat")
def _repeat(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    reps = as_int_list(args[1])
    lead = len(reps) - ctx.ndim(x)
    if lead > 0:
        x = op.reshape(x, [1] * lead + list(ctx.shape(x)))
    return op.tile(x, reps)


@converter("flip")
def _flip(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    for d in as_int_list(args[1]):
        x = op.reverse(x, ctx.axis(x, d))
    return x


# -- joining and splitting ----------------------------------------------------------------
@converter("cat", "concat", "concatenate")
def _cat(ctx: OpContext, args: list[Any]) -> Expr:
    tensors = [ctx.expr(t) for t in args[0]]
    tensors = [t for t in tensors if ctx.shape(t) != (0,)]  # torch skips empty 1-d tensors
    dim = ctx.axis(tensors[0], args[1] if len(args) > 1 else 0)
    if len(tensors) == 1:
        return tensors[0]
    dtypes = {ctx.dtype(t) for t in tensors}
    if len(dtypes) > 1:
        target = "float32" if any(d.startswith("float") for d in dtypes) else "int64"
        tensors = [cast_to(ctx, t, target) for t in tensors]
    return op.concatenate(tensors, dim)


@converter("stack")
def _stack(ctx: OpContext, args: list[Any]) -> Expr:
    tensors = [ctx.expr(t) for t in args[0]]
    dim = int(args[1]) if len(args) > 1 else 0
    if dim < 0:
        dim += ctx.ndim(tensors[0]) + 1
    return op.stack(tensors, dim)


def _split_at(ctx: OpContext, x: Expr, sizes: list[int], dim: int) -> list[Expr]:
    outs: list[Expr] = []
    start = 0
    for s in sizes:
        outs.append(op.strided_slice(x, [start], [start + s], [1], axes=[dim]))
        start += s
    return outs


@converter("split", "split_with_sizes", "split_copy", "split_with_sizes_copy")
def _split(ctx: OpContext, args: list[Any]) -> list[Expr]:
    x = ctx.expr(args[0])
    dim = ctx.axis(x, args[2] if len(args) > 2 else 0)
    n = ctx.shape(x)[dim]
    if isinstance(args[1], (list, tuple)):
        sizes = as_int_list(args[1])
    else:
        step = int(args[1])
        sizes = [step] * (n // step) + ([n % step] if n % step else [])
    return _split_at(ctx, x, sizes, dim)


@converter("chunk")
def _chunk(ctx: OpContext, args: list[Any]) -> list[Expr]:
    x = ctx.expr(args[0])
    dim = ctx.axis(x, args[2] if len(args) > 2 else 0)
    n = ctx.shape(x)[dim]
    step = -(-n // int(args[1]))
    return _split(ctx, [x, step, dim])


@converter("unbind", "unbind_copy")
def _unbind(ctx: OpContext, args: list[Any]) -> list[Expr]:
    x = ctx.expr(args[0])
    dim = ctx.axis(x, args[1] if len(args) > 1 else 0)
    return [op.squeeze(p, [dim]) for p in _split_at(ctx, x, [1] * ctx.shape(x)[dim], dim)]


# -- slicing and indexing -------------------------------------------------------------------
@converter("slice", "slice_copy")
def _slice(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    dim = ctx.axis(x, args[1] if len(args) > 1 else 0)
    n = ctx.shape(x)[dim]
    start = args[2] if len(args) > 2 and args[2] is not None else 0
    end = args[3] if len(args) > 3 and args[3] is not None else n
    step = int(args[4]) if len(args) > 4 and args[4] is not None else 1
    start, end = int(start), min(int(end), _BIG)
    start = max(0, min(n, start + n if start < 0 else start))
    end = max(0, min(n, end + n if end < 0 else end))
    if start == 0 and end == n and step == 1:
        return x
    return op.strided_slice(x, [start], [max(start, end)], [step], axes=[dim])


@converter("select", "select_copy")
def _select(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    dim = ctx.axis(x, args[1])
    n = ctx.shape(x)[dim]
    index = int(args[2])
    index = index + n if index < 0 else index
    part = op.strided_slice(x, [index], [index + 1], [1], axes=[dim])
    return op.squeeze(part, [dim])


@converter("narrow", "narrow_copy")
def _narrow(ctx: OpContext, args: list[Any]) -> Expr:
    start, length = _number(ctx, args[2]), _number(ctx, args[3])
    return _slice(ctx, [args[0], args[1], start, start + length, 1])


def _number(ctx: OpContext, value: Any) -> int:
    """An int argument that may arrive as a tensor computed from constants."""
    return int(_scalar(ctx, [value]))


@converter("index_select")
def _index_select(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    return op.take(x, ctx.expr(args[2]), axis=ctx.axis(x, args[1]))


@converter("index", "_unsafe_index")
def _index(ctx: OpContext, args: list[Any]) -> Expr:
    """Advanced indexing ``x[..., i, j, ...]`` with index tensors on consecutive
    dimensions (broadcast together); boolean masks have data-dependent shapes."""
    x = ctx.expr(args[0])
    indices = list(args[1])
    used = [i for i, v in enumerate(indices) if v is not None]
    idxs = [ctx.expr(indices[i]) for i in used]
    if any(ctx.dtype(i) == "bool" for i in idxs):
        raise ctx.fail("indexing with a boolean mask has a data-dependent shape")
    shape = list(ctx.shape(x))
    idxs = [_wrap_negative(ctx, i, shape[d]) for i, d in zip(idxs, used, strict=True)]
    if len(used) == 1:
        return op.take(x, idxs[0], axis=used[0])
    if used != list(range(used[0], used[0] + len(used))):
        raise ctx.fail("index tensors on non-adjacent dimensions are not supported")
    first = used[0]
    rest = [d for d in range(len(shape)) if d not in used]
    moved = op.transpose(x, [*used, *rest]) if used != list(range(len(used))) else x
    bshape = list(np.broadcast_shapes(*(ctx.shape(i) for i in idxs)))
    # gather_nd reads index tuples along the first axis of the indices (TVM's convention)
    stacked = op.stack([op.broadcast_to(i, bshape) for i in idxs], 0)
    out = op.gather_nd(moved, stacked)  # bshape + rest
    if first == 0:
        return out
    nb = len(bshape)
    order = [*range(nb, nb + first), *range(nb), *range(nb + first, nb + len(rest))]
    return op.transpose(out, order)


def _wrap_negative(ctx: OpContext, idx: Expr, n: int) -> Expr:
    value = const_value(idx)
    if value is not None:
        arr = np.asarray(value)
        return ctx.expr(np.where(arr < 0, arr + n, arr).astype(arr.dtype))
    dt = ctx.dtype(idx)
    return op.where(op.less(idx, ctx.expr(0, dt)), op.add(idx, ctx.expr(n, dt)), idx)


@converter("gather")
def _gather(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    return op.gather(x, ctx.axis(x, args[1]), index_tensor(ctx, args[2]))


def index_tensor(ctx: OpContext, value: Any) -> Expr:
    """An index argument as an integer tensor (a float tensor of indices is cast to int64)."""
    index = ctx.expr(value)
    return (
        index if not ctx.dtype(index).startswith(("float", "bfloat")) else op.cast(index, "int64")
    )


@converter("embedding")
def _embedding(ctx: OpContext, args: list[Any]) -> Expr:
    weight, indices = ctx.expr(args[0]), ctx.expr(args[1])
    return op.take(weight, indices, axis=0)


@converter("getitem", "__getitem__", "TupleIndex", "ListIndex")
def _getitem(ctx: OpContext, args: list[Any]) -> Any:
    seq, i = args[0], args[1]
    if isinstance(seq, TupleWrapper):
        return seq[int(i)]
    if isinstance(seq, Tuple):
        return seq.fields[int(i)]
    if isinstance(seq, Expr):
        return TupleGetItem(seq, int(i))
    return seq[int(i)]


# -- constant tensors ---------------------------------------------------------------------
def _filled(ctx: OpContext, shape: Any, value: Any, dtype: Any) -> Expr:
    name = dtype_name(dtype) or (
        "int64" if isinstance(value, int) and not isinstance(value, bool) else ctx.default_dtype
    )
    if isinstance(value, bool):
        name = dtype_name(dtype) or "bool"
    return op.full(ctx.expr(value, name), _shape_arg(ctx, shape), name)


@converter("empty", "empty_like")
def _empty(ctx: OpContext, args: list[Any]) -> Expr:
    """Uninitialised memory (decompositions use it for outputs nobody reads): zeros."""
    if args and isinstance(args[0], Expr):  # empty_like(x, dtype, ...)
        return _like(ctx, args, 0, 1)
    return _filled(ctx, args[0], 0.0, args[1] if len(args) > 1 else None)


@converter("zeros")
def _zeros(ctx: OpContext, args: list[Any]) -> Expr:
    return _filled(ctx, args[0], 0.0, args[1] if len(args) > 1 else None)


@converter("ones")
def _ones(ctx: OpContext, args: list[Any]) -> Expr:
    return _filled(ctx, args[0], 1.0, args[1] if len(args) > 1 else None)


@converter("full")
def _full(ctx: OpContext, args: list[Any]) -> Expr:
    return _filled(ctx, args[0], args[1], args[2] if len(args) > 2 else None)


@converter("scalar_tensor")
def _scalar_tensor(ctx: OpContext, args: list[Any]) -> Expr:
    return _filled(ctx, [], args[0], args[1] if len(args) > 1 else None)


def _like(ctx: OpContext, args: list[Any], value: Any, dtype_pos: int) -> Expr:
    x = ctx.expr(args[0])
    dtype = args[dtype_pos] if len(args) > dtype_pos else None
    name = dtype_name(dtype) or ctx.dtype(x)
    if not _is_static(ctx.shape(x)):  # a symbolic shape: the value, shaped like x at run time
        like = x if name == ctx.dtype(x) else op.cast(x, name)
        return op.full_like(like, ctx.expr(value, name))
    return _filled(ctx, list(ctx.shape(x)), value, name)


@converter("zeros_like")
def _zeros_like(ctx: OpContext, args: list[Any]) -> Expr:
    return _like(ctx, args, 0, 1)


@converter("ones_like")
def _ones_like(ctx: OpContext, args: list[Any]) -> Expr:
    return _like(ctx, args, 1, 1)


@converter("full_like")
def _full_like(ctx: OpContext, args: list[Any]) -> Expr:
    return _like(ctx, args, args[1], 2)


@converter("arange")
def _arange(ctx: OpContext, args: list[Any]) -> Expr:
    # arange(end, dtype, layout, device, pin) / (start, end, ...) / (start, end, step, ...)
    n_num = {5: 1, 6: 2, 7: 3}.get(len(args))
    if n_num is None:
        n_num = sum(1 for a in args[:3] if isinstance(a, (int, float)) and not isinstance(a, bool))
    nums = [const_value(a) for a in args[:n_num]]
    if any(v is None for v in nums):
        raise ctx.fail("arange with bounds only known at run time is not supported")
    dtype = dtype_name(args[n_num] if len(args) > n_num else None)
    values = np.arange(*[np.asarray(v).item() for v in nums])
    if dtype is None:
        dtype = (
            ctx.default_dtype
            if any(isinstance(np.asarray(v).item(), float) for v in nums)
            else "int64"
        )
    return ctx.expr(values.astype(dtype), dtype)


# -- reductions ---------------------------------------------------------------------------
def _reduce_axes(ctx: OpContext, x: Expr, dims: Any) -> list[int] | None:
    if dims is None:
        return None
    dims = as_int_list(dims)
    if not dims:
        return None
    return [ctx.axis(x, d) for d in dims]


def _reduction(relay_fn: Any, float_only: bool = False) -> Any:
    def convert(ctx: OpContext, args: list[Any]) -> Expr:
        x = ctx.expr(args[0])
        # (x, dtype) / (x, dim, keepdim, dtype)
        if len(args) >= 3 or (len(args) == 2 and isinstance(args[1], (list, tuple, int))):
            dims, keep = args[1], bool(args[2]) if len(args) > 2 else False
            dtype = args[3] if len(args) > 3 else None
        else:
            dims, keep, dtype = None, False, args[1] if len(args) > 1 else None
        if isinstance(dims, bool):
            dims = None
        if dtype is not None:
            x = cast_to(ctx, x, dtype)
        elif float_only and not ctx.dtype(x).startswith("float"):
            x = op.cast(x, ctx.default_dtype)
        elif relay_fn is op.sum and ctx.dtype(x) in ("bool", "int32", "int16", "int8", "uint8"):
            x = op.cast(x, "int64")
        return relay_fn(x, axis=_reduce_axes(ctx, x, dims), keepdims=keep)

    return convert


def _spatial_mean(relay_fn: Any) -> Any:
    """``mean(x, [-1, -2], keepdim=True)`` of an NCHW tensor (what core aten makes of
    ``adaptive_avg_pool2d(x, 1)``) is ``nn.global_avg_pool2d``, as TorchScript gives it."""
    generic = _reduction(relay_fn, float_only=True)

    def convert(ctx: OpContext, args: list[Any]) -> Expr:
        x = args[0]
        if (
            len(args) >= 3
            and isinstance(x, Expr)
            and ctx.ndim(x) == 4
            and ctx.dtype(x).startswith("float")
            and bool(args[2])
            and isinstance(args[1], (list, tuple))
            and sorted(ctx.axis(x, d) for d in args[1]) == [2, 3]
            and (len(args) < 4 or args[3] is None)
        ):
            return nn.global_avg_pool2d(x)
        return generic(ctx, args)

    return convert


converter("sum")(_reduction(op.sum))
converter("mean")(_spatial_mean(op.mean))
converter("prod")(_reduction(op.prod))
converter("amax")(_reduction(op.max))
converter("amin")(_reduction(op.min))


def _bool_reduction(relay_fn: Any) -> Any:
    def convert(ctx: OpContext, args: list[Any]) -> Expr:
        x = ctx.expr(args[0])
        if ctx.dtype(x) != "bool":
            x = op.not_equal(x, ctx.expr(0, ctx.dtype(x)))
        dims = args[1] if len(args) > 1 else None
        keep = bool(args[2]) if len(args) > 2 else False
        return relay_fn(x, axis=_reduce_axes(ctx, x, dims), keepdims=keep)

    return convert


converter("any")(_bool_reduction(op.any))
converter("all")(_bool_reduction(op.all))


def _minmax(relay_fn: Any, arg_fn: Any, binary: str) -> Any:
    def convert(ctx: OpContext, args: list[Any]) -> Any:
        if len(args) >= 2 and isinstance(args[1], Expr):  # max(x, other)
            return (op.maximum if binary == "max" else op.minimum)(args[0], args[1])
        x = ctx.expr(args[0])
        if len(args) == 1:
            return relay_fn(x)
        dim = ctx.axis(x, args[1])
        keep = bool(args[2]) if len(args) > 2 else False
        values = relay_fn(x, axis=[dim], keepdims=keep)
        indices = op.cast(arg_fn(x, axis=[dim], keepdims=keep), "int64")
        return [values, indices]

    return convert


converter("max")(_minmax(op.max, op.argmax, "max"))
converter("min")(_minmax(op.min, op.argmin, "min"))


def _arg(relay_fn: Any) -> Any:
    def convert(ctx: OpContext, args: list[Any]) -> Expr:
        x = ctx.expr(args[0])
        dim = args[1] if len(args) > 1 else None
        keep = bool(args[2]) if len(args) > 2 else False
        if dim is None:
            return op.cast(relay_fn(op.reshape(x, [-1]), axis=[0], keepdims=False), "int64")
        return op.cast(relay_fn(x, axis=[ctx.axis(x, dim)], keepdims=keep), "int64")

    return convert


converter("argmax")(_arg(op.argmax))
converter("argmin")(_arg(op.argmin))


@converter("cumsum")
def _cumsum(ctx: OpContext, args: list[Any]) -> Expr:
    x = ctx.expr(args[0])
    dtype = dtype_name(args[2] if len(args) > 2 else None) or (
        "int64" if not ctx.dtype(x).startswith("float") else ctx.dtype(x)
    )
    return op.cumsum(cast_to(ctx, x, dtype), axis=ctx.axis(x, args[1]))


@converter("einsum")
def _einsum(ctx: OpContext, args: list[Any]) -> Expr:
    return op.einsum([ctx.expr(t) for t in args[1]], str(args[0]))


@converter("topk")
def _topk(ctx: OpContext, args: list[Any]) -> list[Expr]:
    # (input, k, dim=-1, largest=True, sorted=True): values and int64 indices
    x = ctx.expr(args[0])
    dim = ctx.axis(x, args[2] if len(args) > 2 and args[2] is not None else -1)
    largest = bool(args[3]) if len(args) > 3 and args[3] is not None else True
    out = op.topk(x, k=int(args[1]), axis=dim, is_ascend=not largest, dtype="int64")
    return [TupleGetItem(out.astuple(), 0), TupleGetItem(out.astuple(), 1)]


@converter("sort")
def _sort(ctx: OpContext, args: list[Any]) -> list[Expr]:
    # sort(input, dim=-1, descending=False) or sort.stable(input, stable, dim, descending)
    rest = args[2:] if len(args) == 4 else args[1:]
    x = ctx.expr(args[0])
    dim = ctx.axis(x, rest[0] if rest and rest[0] is not None else -1)
    descending = bool(rest[1]) if len(rest) > 1 and rest[1] is not None else False
    k = ctx.shape(x)[dim]
    out = op.topk(x, k=k, axis=dim, is_ascend=not descending, dtype="int64")
    return [TupleGetItem(out.astuple(), 0), TupleGetItem(out.astuple(), 1)]
