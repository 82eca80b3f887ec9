"""Shape-manipulating operators: reshape, transpose, squeeze, expand_dims,
concatenate, stack, split, strided_slice, take, broadcast_to, tile, repeat, reverse.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 3, 4))
>>> reshape(x, (0, -1)).attrs.newshape
[0, -1]
>>> len(split(x, 3, axis=1))
3
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from relaykit.errors import ArgumentError, IRError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, Tuple, TupleWrapper, const
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.symbolic import SymExpr, Var, floordiv
from relaykit.ir.types import TensorType, TupleType, Type

from ._relations import (
    INT_DTYPES,
    broadcast_shape,
    differ,
    normalize_axes,
    normalize_axis,
    static,
    static_value,
    tensor_arg,
    tuple_arg,
)
from .define import OpPattern, TypeRelError, define_op, int_tuple, make_call, no_default

__all__ = [
    "reshape",
    "transpose",
    "squeeze",
    "expand_dims",
    "concatenate",
    "stack",
    "split",
    "strided_slice",
    "take",
    "broadcast_to",
    "tile",
    "repeat",
    "reverse",
]

_I = OpPattern.INJECTIVE


# -- reshape --------------------------------------------------------------------------------------


def _split_dim(spec: tuple[int, ...], i: int, d: int) -> tuple[int, int]:
    """The two factors ``spec[i + 1], spec[i + 2]`` that a ``-4`` at ``spec[i]`` splits
    the input dimension ``d`` into (one may be ``-1``, inferred)."""
    if i + 2 >= len(spec):
        raise TypeRelError(f"reshape {spec}: -4 must be followed by two dimensions")
    d0, d1 = spec[i + 1], spec[i + 2]
    if d0 == -1 and d1 == -1:
        raise TypeRelError(f"reshape {spec}: at most one of the -4 factors may be -1")
    if d0 == -1:
        d0 = d // d1 if d1 else 0
    elif d1 == -1:
        d1 = d // d0 if d0 else 0
    if static(d0, d1, d) and d0 * d1 != d:
        raise TypeRelError(
            f"reshape {spec}: cannot split dimension {d} into {spec[i + 1]} x {spec[i + 2]}"
        )
    return d0, d1


def _inferred_dim(
    ishape: tuple[Any, ...], spec: tuple[int, ...], out: list[Any], infer_at: int
) -> Any:
    """The value of the ``-1`` at ``out[infer_at]``: what the other dimensions leave."""
    total = math.prod(ishape)
    rest = math.prod(out[:infer_at] + out[infer_at + 1 :])
    if not static(total, rest):
        # A dynamic input: the -1 is what the symbols divide out to, else unknown (?).
        q = floordiv(total, rest) if rest != 0 else AnyDim()
        return q if static(q) or isinstance(q, Var | SymExpr) else AnyDim()
    if rest == 0 or total % rest:
        raise TypeRelError(f"cannot reshape {ishape} ({total} elements) to {spec}")
    return total // rest


def infer_reshape(
    ishape: Sequence[int], newshape: Sequence[int], allowzero: bool = False
) -> tuple[int, ...]:
    """The output shape of ``reshape`` with TVM's special values.

    ``0`` copies the input dimension, ``-1`` is inferred, ``-2`` copies all
    remaining dimensions, ``-3`` merges two input dimensions, ``-4`` splits one
    into the two values that follow (one of which may be ``-1``).

    >>> infer_reshape((2, 3, 4), (-3, -1))
    (6, 4)
    >>> infer_reshape((6, 4), (-4, 2, -1, 0))
    (2, 3, 4)
    """
    ishape = tuple(ishape)
    out: list[int] = []
    infer_at = -1
    src = 0
    i = 0
    spec = tuple(newshape)

    def src_dim(k: int) -> int:
        if k >= len(ishape):
            raise TypeRelError(
                f"reshape {spec} refers to input dimension {k}, but the input has shape {ishape}"
            )
        return ishape[k]

    while i < len(spec):
        v = spec[i]
        if v > 0:
            out.append(v)
            src += 1
        elif v == 0:
            out.append(0 if allowzero else src_dim(src))
            src += 1
        elif v == -1:
            if infer_at >= 0:
                raise TypeRelError(f"reshape {spec} has more than one -1")
            infer_at = len(out)
            out.append(1)
            src += 1
        elif v == -2:
            out.extend(ishape[src:])
            src = len(ishape)
        elif v == -3:
            out.append(src_dim(src) * src_dim(src + 1))
            src += 2
        elif v == -4:
            out.extend(_split_dim(spec, i, src_dim(src)))
            src += 1
            i += 2
        else:
            raise TypeRelError(f"reshape {spec}: invalid value {v}")
        i += 1
    total = math.prod(ishape)
    if infer_at >= 0:
        out[infer_at] = _inferred_dim(ishape, spec, out, infer_at)
    if static(total, math.prod(out)) and math.prod(out) != total:
        raise TypeRelError(
            f"cannot reshape {ishape} ({total} elements) to {tuple(out)} "
            f"({math.prod(out)} elements)"
        )
    return tuple(out)


def _reshape_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(infer_reshape(data.shape, attrs.newshape, attrs.allowzero), data.dtype)


define_op(
    "reshape",
    num_inputs=1,
    attrs={"newshape": no_default(), "allowzero": False},
    attrs_type_key="relay.attrs.ReshapeAttrs",
    type_rel=_reshape_rel,
    compute=lambda ins, attrs: ins[0].reshape(
        infer_reshape(ins[0].shape, attrs.newshape, attrs.allowzero)
    ),
    pattern=_I,
    doc="Reshape with TVM's special values 0, -1, -2, -3, -4.",
)


def reshape(data: Expr, newshape: Any, allowzero: bool = False) -> Call:
    """``data`` with a new shape; ``0`` keeps a dimension and ``-1`` infers one.

    >>> from relaykit import relay
    >>> reshape(relay.var("x", shape=(2, 6)), (-1, 3)).attrs.newshape
    [-1, 3]
    """
    newshape = static_value(newshape)
    if isinstance(newshape, Expr):
        return make_call("dyn.reshape", [data, newshape], allowzero=bool(allowzero))
    return make_call(
        "reshape", [data], newshape=int_tuple(newshape, "newshape"), allowzero=bool(allowzero)
    )


# -- transpose, squeeze, expand_dims --------------------------------------------------------------


def _perm(axes: Any, ndim: int) -> tuple[int, ...]:
    if axes is None or len(axes) == 0:
        return tuple(reversed(range(ndim)))
    if len(axes) != ndim:
        raise TypeRelError(f"transpose axes {tuple(axes)} must list all {ndim} axes of the input")
    return normalize_axes(axes, ndim, "transpose axes")


def _transpose_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    perm = _perm(attrs.axes, data.ndim)
    return TensorType(tuple(data.shape[p] for p in perm), data.dtype)


define_op(
    "transpose",
    num_inputs=1,
    attrs={"axes": no_default()},
    attrs_type_key="relay.attrs.TransposeAttrs",
    type_rel=_transpose_rel,
    compute=lambda ins, attrs: np.transpose(ins[0], _perm(attrs.axes, ins[0].ndim)),
    pattern=_I,
    doc="Permute the axes.",
)


def transpose(data: Expr, axes: Any = None) -> Call:
    """``data`` with its axes permuted (reversed when ``axes`` is None).

    >>> from relaykit import relay
    >>> transpose(relay.var("x", shape=(2, 3)), (1, 0)).attrs.axes
    [1, 0]
    """
    return make_call("transpose", [data], axes=None if axes is None else int_tuple(axes, "axes"))


def _squeeze_axes(axis: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    if axis is None:
        return tuple(i for i, d in enumerate(shape) if d == 1)
    axes = normalize_axes(axis, len(shape), "squeeze axis")
    for a in axes:
        if differ(shape[a], 1):
            raise TypeRelError(f"cannot squeeze axis {a} of shape {shape}: its size is not 1")
    return axes


def _squeeze_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    axes = _squeeze_axes(attrs.axis, data.shape)
    return TensorType(tuple(d for i, d in enumerate(data.shape) if i not in axes), data.dtype)


define_op(
    "squeeze",
    num_inputs=1,
    attrs={"axis": None},
    attrs_type_key="relay.attrs.SqueezeAttrs",
    type_rel=_squeeze_rel,
    compute=lambda ins, attrs: np.squeeze(ins[0], _squeeze_axes(attrs.axis, ins[0].shape)),
    pattern=_I,
    doc="Remove axes of size 1.",
)


def squeeze(data: Expr, axis: Any = None) -> Call:
    """``data`` without its size-1 axes (only those in ``axis`` when given).

    >>> from relaykit import relay
    >>> squeeze(relay.var("x", shape=(1, 3, 1)), [0]).attrs.axis
    [0]
    """
    axis = static_value(axis)
    if isinstance(axis, Expr):
        return make_call("dyn.squeeze", [data, axis])
    return make_call("squeeze", [data], axis=None if axis is None else int_tuple(axis, "axis"))


_MAX_RANK = 32


def _expanded_shape(shape: tuple[int, ...], attrs: Attrs) -> tuple[int, ...]:
    n = attrs.num_newaxis
    if not isinstance(n, int) or n < 0:
        raise TypeRelError(f"num_newaxis must be a non-negative integer, got {n!r}")
    if len(shape) + n > _MAX_RANK:
        raise TypeRelError(f"num_newaxis={n} gives a rank above {_MAX_RANK}, NumPy's limit")
    axis = normalize_axis(attrs.axis, len(shape), "expand_dims axis", extra=1)
    return shape[:axis] + (1,) * n + shape[axis:]


def _expand_dims_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(_expanded_shape(data.shape, attrs), data.dtype)


define_op(
    "expand_dims",
    num_inputs=1,
    attrs={"axis": no_default(), "num_newaxis": 1},
    attrs_type_key="relay.attrs.ExpandDimsAttrs",
    type_rel=_expand_dims_rel,
    compute=lambda ins, attrs: ins[0].reshape(_expanded_shape(ins[0].shape, attrs)),
    pattern=_I,
    doc="Insert axes of size 1.",
)


def expand_dims(data: Expr, axis: int, num_newaxis: int = 1) -> Call:
    """``data`` with ``num_newaxis`` size-1 axes inserted at ``axis``.

    >>> from relaykit import relay
    >>> expand_dims(relay.var("x", shape=(3,)), 0).attrs.num_newaxis
    1
    """
    axis = static_value(axis)
    if isinstance(axis, Expr):
        return make_call("dyn.expand_dims", [data, axis], num_newaxis=int(num_newaxis))
    return make_call("expand_dims", [data], axis=int(axis), num_newaxis=int(num_newaxis))


# -- concatenate, stack, split --------------------------------------------------------------------


def _as_tuple(data: Any, what: str) -> Expr:
    if isinstance(data, TupleWrapper):
        return data.astuple()
    if isinstance(data, Expr):
        return data
    fields = list(data)
    if not fields:
        raise IRError(f"{what} needs at least one tensor")
    return Tuple(fields)


def _concat_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    tup = tuple_arg(arg_types, 0, "the input of concatenate")
    fields: tuple[TensorType, ...] = tup.fields  # type: ignore[assignment]
    if not fields:
        raise TypeRelError("concatenate needs at least one tensor")
    first = fields[0]
    axis = normalize_axis(attrs.axis, first.ndim, "concatenate axis")
    total = 0
    for j, f in enumerate(fields):
        if f.ndim != first.ndim or f.dtype != first.dtype:
            raise TypeRelError(
                f"all tensors must have the same rank and dtype: field 0 is {first}, "
                f"field {j} is {f}"
            )
        for k in range(f.ndim):
            if k != axis and differ(f.shape[k], first.shape[k]):
                raise TypeRelError(
                    f"field {j} ({f}) differs from field 0 ({first}) in dimension {k}, "
                    f"which is not the concatenation axis {axis}"
                )
        total += f.shape[axis]
    shape = _known_dims(fields)
    shape[axis] = total
    return TensorType(shape, first.dtype)


define_op(
    "concatenate",
    num_inputs=1,
    attrs={"axis": 0},
    attrs_type_key="relay.attrs.ConcatenateAttrs",
    type_rel=_concat_rel,
    compute=lambda ins, attrs: np.concatenate(tuple(ins[0]), axis=attrs.axis),
    pattern=_I,
    doc="Join a tuple of tensors along an existing axis.",
)


def concatenate(data: Any, axis: int) -> Call:
    """Join a list (or Tuple) of tensors along ``axis``.

    >>> from relaykit import relay
    >>> a = relay.var("a", shape=(2, 3))
    >>> concatenate([a, a], axis=1).args[0].__class__.__name__
    'Tuple'
    """
    return make_call("concatenate", [_as_tuple(data, "concatenate")], axis=int(axis))


def _stack_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    tup = tuple_arg(arg_types, 0, "the input of stack")
    fields: tuple[TensorType, ...] = tup.fields  # type: ignore[assignment]
    if not fields:
        raise TypeRelError("stack needs at least one tensor")
    first = fields[0]
    for j, f in enumerate(fields):
        same = f.dtype == first.dtype and f.ndim == first.ndim
        if not same or any(differ(a, b) for a, b in zip(f.shape, first.shape, strict=True)):
            raise TypeRelError(
                f"all stacked tensors must have one type: field 0 is {first}, field {j} is {f}"
            )
    axis = normalize_axis(attrs.axis, first.ndim, "stack axis", extra=1)
    shape = _known_dims(fields)
    return TensorType((*shape[:axis], len(fields), *shape[axis:]), first.dtype)


def _known_dims(fields: Sequence[TensorType]) -> list[Any]:
    """The first field's shape with each ``?`` replaced by a size another field knows."""
    shape = list(fields[0].shape)
    for k, d in enumerate(shape):
        known = [f.shape[k] for f in fields if isinstance(f.shape[k], int)]
        if known and not isinstance(d, int):
            shape[k] = known[0]
    return shape


define_op(
    "stack",
    num_inputs=1,
    attrs={"axis": 0},
    attrs_type_key="relay.attrs.StackAttrs",
    type_rel=_stack_rel,
    compute=lambda ins, attrs: np.stack(tuple(ins[0]), axis=attrs.axis),
    pattern=_I,
    doc="Join a tuple of tensors along a new axis.",
)


def stack(data: Any, axis: int) -> Call:
    """Stack a list (or Tuple) of same-typed tensors along a new ``axis``."""
    return make_call("stack", [_as_tuple(data, "stack")], axis=int(axis))


def _split_points(ios: Any, dim: Any) -> tuple[Any, ...]:
    if isinstance(ios, int) and not static(dim):
        if ios <= 0:
            raise TypeRelError(f"cannot split into {ios} sections")
        step = floordiv(dim, ios)  # sections of a dynamic axis: dim // ios each
        return tuple(step * k for k in range(1, ios))
    if not static(dim):
        return tuple(ios)
    if isinstance(ios, int):
        if ios <= 0 or dim % ios:
            raise TypeRelError(f"cannot split a dimension of size {dim} into {ios} equal sections")
        step = dim // ios
        return tuple(range(step, dim, step))[: ios - 1]
    points = tuple(ios)
    prev = 0
    for p in points:
        if not isinstance(p, int) or p < prev or p > dim:
            raise TypeRelError(
                f"split indices {points} must be ascending integers within [0, {dim}]"
            )
        prev = p
    return points


def _split_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    axis = normalize_axis(attrs.axis, data.ndim, "split axis")
    dim, ios = data.shape[axis], attrs.indices_or_sections
    points = _split_points(ios, dim)
    bounds = (0, *points, dim)
    fields = []
    for lo, hi in itertools.pairwise(bounds):
        shape = list(data.shape)
        # equal sections of a symbolic axis are each dim // n (as TVM assumes n divides it)
        shape[axis] = floordiv(dim, ios) if isinstance(ios, int) and not static(dim) else hi - lo
        fields.append(TensorType(shape, data.dtype))
    return TupleType(fields)


def _split_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, ...]:
    x = ins[0]
    axis = attrs.axis % x.ndim
    return tuple(np.split(x, list(_split_points(attrs.indices_or_sections, x.shape[axis])), axis))


define_op(
    "split",
    num_inputs=1,
    attrs={"indices_or_sections": no_default(), "axis": 0},
    attrs_type_key="relay.attrs.SplitAttrs",
    type_rel=_split_rel,
    compute=_split_kernel,
    pattern=_I,
    doc="Split into equal sections or at indices; the result is a tuple.",
)


def split(data: Expr, indices_or_sections: Any, axis: int = 0) -> TupleWrapper:
    """Split ``data`` along ``axis`` into N equal sections or at the given indices.

    >>> from relaykit import relay
    >>> parts = split(relay.var("x", shape=(6,)), (2, 4))
    >>> len(parts), parts[0].index
    (3, 0)
    """
    if isinstance(indices_or_sections, (int, np.integer)):
        ios: Any = int(indices_or_sections)
        size = ios
    else:
        ios = int_tuple(indices_or_sections, "indices_or_sections")
        size = len(ios) + 1
    return TupleWrapper(make_call("split", [data], indices_or_sections=ios, axis=int(axis)), size)


# -- strided_slice --------------------------------------------------------------------------------


def _slices(shape: tuple[int, ...], attrs: Attrs) -> tuple[tuple[slice, ...], tuple[int, ...]]:
    """Python slices and the output shape of a strided_slice with TVM's clamping rules."""
    ndim = len(shape)
    begin, end = attrs.begin, attrs.end
    if begin is None or end is None:
        raise TypeRelError("strided_slice needs begin and end")
    strides = attrs.strides or (1,)
    axes = attrs.axes
    if axes is None:
        # TVM slices every axis that begin, end or strides names; the missing bounds
        # take their defaults (the whole axis)
        axes = tuple(range(min(ndim, max(len(begin), len(end), len(attrs.strides or ())))))
        if len(begin) > ndim:
            raise TypeRelError(f"strided_slice begin {begin} is longer than the rank {ndim}")
    else:
        axes = normalize_axes(axes, ndim, "strided_slice axes")
        if len(begin) != len(axes) or len(end) != len(axes):
            raise TypeRelError("strided_slice begin, end and axes must have the same length")
    per_axis = [slice(None)] * ndim
    out: list[Any] = list(shape)
    for k, a in enumerate(axes):
        dim = shape[a]
        b = begin[k] if k < len(begin) else None
        e = end[k] if k < len(end) else None
        s = strides[k] if k < len(strides) else 1
        if attrs.slice_mode == "size":
            s = 1
            b = 0 if b is None else (b + dim if b < 0 else b)
            e = dim if e is None or e < 0 else b + e
        elif attrs.slice_mode != "end":
            raise TypeRelError(f"slice_mode must be 'end' or 'size', got {attrs.slice_mode!r}")
        if s == 0:
            raise TypeRelError(f"strided_slice stride on axis {a} is 0")
        if not static(dim):
            out[a] = AnyDim()  # the clamped length depends on the run-time size
            continue
        if b is None:
            b = 0 if s > 0 else dim - 1
        if e is None:
            e = dim if s > 0 else -1 - dim
        b = b + dim if b < 0 else b
        e = e + dim if e < 0 else e
        lo, hi = (0, dim) if s > 0 else (-1, dim - 1)
        b = min(max(b, lo), hi)
        e = min(max(e, lo), hi)
        n = max(0, -(-(e - b) // s)) if s > 0 else max(0, -(-(b - e) // -s))
        out[a] = n
        if n == 0:
            per_axis[a] = slice(0, 0)
        else:
            per_axis[a] = slice(b, e if e >= 0 else None, s)
    return tuple(per_axis), tuple(out)


def _strided_slice_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    return TensorType(_slices(data.shape, attrs)[1], data.dtype)


define_op(
    "strided_slice",
    num_inputs=1,
    attrs={
        "begin": no_default(),
        "end": no_default(),
        "strides": no_default(),
        "slice_mode": "end",
        "axes": no_default(),
    },
    attrs_type_key="relay.attrs.StridedSliceAttrs",
    type_rel=_strided_slice_rel,
    compute=lambda ins, attrs: np.ascontiguousarray(ins[0][_slices(ins[0].shape, attrs)[0]]),
    pattern=_I,
    doc="Slice with begin/end/strides per axis.",
)


def strided_slice(
    data: Expr,
    begin: Any,
    end: Any,
    strides: Any = None,
    axes: Any = None,
    slice_mode: str = "end",
) -> Call:
    """``data[begin:end:strides]`` per axis (on ``axes`` when given).

    With ``slice_mode="size"``, ``end`` holds sizes (``-1`` = to the end).

    >>> from relaykit import relay
    >>> strided_slice(relay.var("x", shape=(4, 4)), [1], [3]).attrs.strides
    [1]
    """
    begin, end, strides = (static_value(v) for v in (begin, end, strides))
    if any(isinstance(v, Expr) for v in (begin, end, strides)):
        return _dyn_strided_slice(data, begin, end, strides, axes, slice_mode)
    return make_call(
        "strided_slice",
        [data],
        begin=int_tuple(begin, "begin"),
        end=int_tuple(end, "end"),
        strides=int_tuple(strides or [1], "strides"),
        slice_mode=slice_mode,
        axes=None if axes is None else int_tuple(axes, "axes"),
    )


def _dyn_strided_slice(
    data: Expr, begin: Any, end: Any, strides: Any, axes: Any, slice_mode: str
) -> Call:
    """``dyn.strided_slice``: begin/end/strides as 1-D int64 tensors (numbers become
    constants); ``axes`` is not supported with run-time bounds, as in TVM."""
    if axes is not None:
        raise ArgumentError("strided_slice with run-time begin/end does not take axes")
    n_known = [len(v) for v in (begin, end, strides) if not isinstance(v, Expr) and v is not None]
    args = []
    for v, fill in ((begin, 0), (end, -1), (strides, 1)):
        if v is None:
            v = [fill] * (n_known[0] if n_known else 1)
        args.append(v if isinstance(v, Expr) else const(np.asarray(v, dtype="int64")))
    return make_call("dyn.strided_slice", [data, *args], slice_mode=slice_mode)


# -- take -----------------------------------------------------------------------------------------


def _take_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    indices = tensor_arg(arg_types, 1, "indices")
    if indices.dtype not in INT_DTYPES:
        raise TypeRelError(f"indices must be an integer tensor, got {indices}")
    if attrs.batch_dims not in (0, None):
        raise TypeRelError("take with batch_dims != 0 is not supported yet")
    if attrs.mode not in ("clip", "wrap", "fast"):
        raise TypeRelError(f"take mode must be 'clip', 'wrap' or 'fast', got {attrs.mode!r}")
    if attrs.axis is None:
        return TensorType(indices.shape, data.dtype)
    axis = normalize_axis(attrs.axis, data.ndim, "take axis")
    if data.shape[axis] == 0:
        raise TypeRelError(f"cannot take from axis {axis} of size 0 in {data}")
    return TensorType(data.shape[:axis] + indices.shape + data.shape[axis + 1 :], data.dtype)


def _take_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, indices = ins
    mode: Literal["clip", "wrap"] = "clip" if attrs.mode == "clip" else "wrap"
    return np.take(data, indices, axis=attrs.axis, mode=mode)


define_op(
    "take",
    num_inputs=2,
    attrs={"batch_dims": 0, "axis": None, "mode": "clip"},
    attrs_type_key="relay.attrs.TakeAttrs",
    type_rel=_take_rel,
    compute=_take_kernel,
    pattern=_I,
    doc="Gather elements along an axis (flattened when axis is None).",
)


def take(
    data: Expr, indices: Expr, axis: int | None = None, batch_dims: int = 0, mode: str = "clip"
) -> Call:
    """Elements of ``data`` at ``indices`` along ``axis``.

    ``mode`` says what out-of-range indices do: ``"clip"`` (default), ``"wrap"``
    or ``"fast"`` (assumed in range).

    >>> from relaykit import relay
    >>> take(relay.var("x", shape=(5, 2)), relay.const([0, 4]), axis=0).attrs.mode
    'clip'
    """
    return make_call(
        "take",
        [data, indices],
        batch_dims=int(batch_dims),
        axis=None if axis is None else int(axis),
        mode=mode,
    )


# -- broadcast_to, tile, repeat, reverse ----------------------------------------------------------


def _broadcast_to_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    target = tuple(attrs.shape or ())
    if not static(*data.shape, *target):
        out = broadcast_shape(data.shape, target)  # a dynamic input must broadcast at run time
        if len(out) != len(target):
            raise TypeRelError(f"cannot broadcast {data} to shape {target}")
        return TensorType(target, data.dtype)
    try:
        np.broadcast_shapes(data.shape, target)
        ok = np.broadcast_shapes(data.shape, target) == target
    except ValueError:
        ok = False
    if not ok:
        raise TypeRelError(f"cannot broadcast {data} to shape {target}")
    return TensorType(target, data.dtype)


define_op(
    "broadcast_to",
    num_inputs=1,
    attrs={"shape": no_default(), "dtype": ""},
    attrs_type_key="relay.attrs.InitOpAttrs",
    type_rel=_broadcast_to_rel,
    compute=lambda ins, attrs: np.ascontiguousarray(np.broadcast_to(ins[0], attrs.shape)),
    pattern=OpPattern.BROADCAST,
    doc="Broadcast to a shape.",
)


def broadcast_to(data: Expr, shape: Any) -> Call:
    """``data`` broadcast to ``shape`` (NumPy rules)."""
    shape = static_value(shape)
    if isinstance(shape, Expr):
        return make_call("dyn.broadcast_to", [data, shape])
    return make_call("broadcast_to", [data], shape=int_tuple(shape, "shape"))


def _tile_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    reps = tuple(attrs.reps or ())
    if any(r < 0 for r in reps):
        raise TypeRelError(f"tile reps {reps} must be non-negative")
    n = max(len(reps), data.ndim)
    shape = (1,) * (n - data.ndim) + data.shape
    reps = (1,) * (n - len(reps)) + reps
    return TensorType(tuple(d * r for d, r in zip(shape, reps, strict=True)), data.dtype)


define_op(
    "tile",
    num_inputs=1,
    attrs={"reps": no_default()},
    attrs_type_key="relay.attrs.TileAttrs",
    type_rel=_tile_rel,
    compute=lambda ins, attrs: np.tile(ins[0], attrs.reps),
    pattern=_I,
    doc="Repeat the whole tensor reps times per axis.",
)


def tile(data: Expr, reps: Any) -> Call:
    """``data`` repeated ``reps`` times along each axis (NumPy ``tile``)."""
    reps = static_value(reps)
    if isinstance(reps, Expr):
        return make_call("dyn.tile", [data, reps])
    return make_call("tile", [data], reps=int_tuple(reps, "reps"))


def _repeat_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if not isinstance(attrs.repeats, int) or attrs.repeats < 0:
        raise TypeRelError(f"repeats must be a non-negative integer, got {attrs.repeats!r}")
    axis = normalize_axis(attrs.axis, data.ndim, "repeat axis")
    shape = list(data.shape)
    shape[axis] *= attrs.repeats
    return TensorType(shape, data.dtype)


define_op(
    "repeat",
    num_inputs=1,
    attrs={"repeats": no_default(), "axis": None},
    attrs_type_key="relay.attrs.RepeatAttrs",
    type_rel=_repeat_rel,
    compute=lambda ins, attrs: np.repeat(ins[0], attrs.repeats, axis=attrs.axis),
    pattern=_I,
    doc="Repeat each element along an axis.",
)


def repeat(data: Expr, repeats: int, axis: int) -> Call:
    """Each element of ``data`` repeated ``repeats`` times along ``axis``."""
    return make_call("repeat", [data], repeats=int(repeats), axis=int(axis))


def _reverse_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    normalize_axis(attrs.axis, data.ndim, "reverse axis")
    return data


define_op(
    "reverse",
    num_inputs=1,
    attrs={"axis": None},
    attrs_type_key="relay.attrs.ReverseAttrs",
    type_rel=_reverse_rel,
    compute=lambda ins, attrs: np.flip(ins[0], attrs.axis).copy(),
    pattern=_I,
    doc="Reverse the order of elements along an axis.",
)


def reverse(data: Expr, axis: int) -> Call:
    """``data`` with the order of its elements along ``axis`` reversed."""
    return make_call("reverse", [data], axis=int(axis))
