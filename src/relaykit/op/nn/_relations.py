"""Type relations of the ``nn.*`` operators, and the layout / padding helpers
their kernels share.

Layouts are any permutation of the canonical letters: data ``NCHW``/``NHWC``,
conv kernels ``OIHW``/``HWIO``/``OHWI``..., transposed-conv kernels ``IOHW``...

>>> layout_perm("NHWC", "NCHW")
(0, 3, 1, 2)
>>> pad4((1, 2))
(1, 2, 1, 2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from relaykit.ir.attrs import Attrs
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op._relations import (
    FLOAT_DTYPES,
    broadcast_dim,
    differ,
    is_int,
    normalize_axis,
    resolve_dtype,
    static,
    tensor_arg,
)
from relaykit.op.define import TypeRelError

__all__ = [
    "layout_perm",
    "to_layout",
    "pad4",
    "pair",
    "conv2d_rel",
    "conv2d_transpose_rel",
    "dense_rel",
    "batch_matmul_rel",
    "bias_add_rel",
    "prelu_rel",
    "softmax_rel",
    "pool2d_rel",
    "pool2d_out_size",
    "global_pool2d_rel",
    "adaptive_pool2d_rel",
    "adaptive_output_size",
    "batch_norm_rel",
    "layer_norm_rel",
    "dropout_rel",
    "batch_flatten_rel",
    "pad_rel",
    "float_unary_rel",
]


# -- helpers --------------------------------------------------------------------------------------


def layout_perm(layout: str, canonical: str) -> tuple[int, ...]:
    """The axes permutation that transposes ``layout`` to ``canonical`` order."""
    if sorted(layout) != sorted(canonical):
        raise TypeRelError(
            f"unsupported layout {layout!r}: relaykit supports permutations of {canonical!r} "
            f"(such as {canonical!r} or {canonical[0] + canonical[2:] + canonical[1]!r})"
        )
    return tuple(layout.index(c) for c in canonical)


def to_layout(shape: Sequence[int], canonical: str, layout: str) -> tuple[int, ...]:
    """A shape given in ``canonical`` order rearranged into ``layout``."""
    layout_perm(layout, canonical)
    return tuple(shape[canonical.index(c)] for c in layout)


def _canonical(t: TensorType, layout: str, canonical: str, what: str) -> tuple[int, ...]:
    if t.ndim != len(canonical):
        raise TypeRelError(
            f"{what} must be a {len(canonical)}-D tensor in layout {layout}, got {t}"
        )
    perm = layout_perm(layout, canonical)
    return tuple(t.shape[p] for p in perm)


def pair(value: Any, what: str, minimum: int = 1) -> tuple[int, int]:
    """An (h, w) pair from an int or a 1- or 2-element list, each at least ``minimum``."""
    vals = (value,) if isinstance(value, int) else tuple(value or ())
    if len(vals) == 1:
        vals = (vals[0], vals[0])
    if len(vals) != 2 or any(not isinstance(v, int) or v < minimum for v in vals):
        kind = "positive integers" if minimum == 1 else f"integers >= {minimum}"
        raise TypeRelError(f"{what} must be two {kind}, got {value!r}")
    return vals[0], vals[1]


def pad4(padding: Any, what: str = "padding") -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from 1, 2 or 4 values, as TVM's ``GetPaddingHeightWidth``."""
    vals = (padding,) if isinstance(padding, int) else tuple(padding or (0,))
    if len(vals) == 1:
        vals = vals * 4
    elif len(vals) == 2:
        vals = (vals[0], vals[1], vals[0], vals[1])
    if len(vals) != 4 or any(not isinstance(v, int) or v < 0 for v in vals):
        raise TypeRelError(f"{what} must be 1, 2 or 4 non-negative integers, got {padding!r}")
    return vals


def _same_dtype(a: TensorType, b: TensorType, names: str) -> None:
    if a.dtype != b.dtype:
        raise TypeRelError(f"{names} must have the same dtype, got {a} and {b}")


def _check_vector(t: TensorType, size: int, dtype: str, what: str) -> None:
    want = TensorType((size,), dtype)
    if t.dtype != dtype or t.ndim != 1 or differ(t.shape[0], size):
        raise TypeRelError(f"{what} must be {want}, got {t}")


def float_unary_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    t = tensor_arg(arg_types, 0, "data")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"data must be a floating-point tensor, got {t}")
    return t


# -- convolutions and matrix products -------------------------------------------------------------


def _conv_out(size: int, k: int, stride: int, dil: int, pad_lo: int, pad_hi: int, what: str) -> int:
    eff = (k - 1) * dil + 1
    span = size + pad_lo + pad_hi - eff
    if static(span) and span < 0:
        raise TypeRelError(
            f"the {what} window ({eff} with dilation) is larger than the padded input ({size} + "
            f"{pad_lo + pad_hi})"
        )
    return span // stride + 1


def conv2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    weight = tensor_arg(arg_types, 1, "weight")
    n, c, h, w = _canonical(data, attrs.data_layout, "NCHW", "data")
    o, i, kh, kw = _canonical(weight, attrs.kernel_layout, "OIHW", "weight")
    _same_dtype(data, weight, "data and weight")
    groups = attrs.groups
    if not isinstance(groups, int) or groups < 1:
        raise TypeRelError(f"groups must be a positive integer, got {groups!r}")
    if differ(c, i * groups):
        raise TypeRelError(
            f"data has {c} input channels but the weight {weight} expects {i} per group x "
            f"{groups} groups = {i * groups}"
        )
    if static(o) and o % groups:
        raise TypeRelError(f"the {o} output channels are not divisible by groups={groups}")
    if attrs.channels is not None and differ(attrs.channels, o):
        raise TypeRelError(f"channels={attrs.channels} but the weight {weight} has {o} filters")
    if attrs.kernel_size is not None and tuple(attrs.kernel_size) != (kh, kw):
        raise TypeRelError(
            f"kernel_size={tuple(attrs.kernel_size)} but the weight {weight} has a {kh}x{kw} kernel"
        )
    sh, sw = pair(attrs.strides, "strides")
    dh, dw = pair(attrs.dilation, "dilation")
    pt, pl, pb, pr = pad4(attrs.padding)
    oh = _conv_out(h, kh, sh, dh, pt, pb, "kernel height")
    ow = _conv_out(w, kw, sw, dw, pl, pr, "kernel width")
    out_layout = attrs.out_layout or attrs.data_layout
    shape = to_layout((n, o, oh, ow), "NCHW", out_layout)
    return TensorType(shape, resolve_dtype(attrs.out_dtype, data.dtype))


def conv2d_transpose_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    weight = tensor_arg(arg_types, 1, "weight")
    n, c, h, w = _canonical(data, attrs.data_layout, "NCHW", "data")
    i, og, kh, kw = _canonical(weight, attrs.kernel_layout, "IOHW", "weight")
    _same_dtype(data, weight, "data and weight")
    groups = attrs.groups
    if not isinstance(groups, int) or groups < 1 or (static(c) and c % groups):
        raise TypeRelError(f"groups={groups!r} must be a positive divisor of the {c} channels")
    if differ(c, i):
        raise TypeRelError(f"data has {c} input channels but the weight {weight} expects {i}")
    o = og * groups
    if attrs.channels is not None and attrs.channels != o:
        raise TypeRelError(f"channels={attrs.channels} but the weight gives {o} output channels")
    if attrs.kernel_size is not None and tuple(attrs.kernel_size) != (kh, kw):
        raise TypeRelError(
            f"kernel_size={tuple(attrs.kernel_size)} but the weight {weight} has a {kh}x{kw} kernel"
        )
    sh, sw = pair(attrs.strides, "strides")
    dh, dw = pair(attrs.dilation, "dilation")
    pt, pl, pb, pr = pad4(attrs.padding)
    oph, opw = pair(attrs.output_padding or 0, "output_padding", minimum=0)
    if oph >= max(sh, dh) or opw >= max(sw, dw):
        raise TypeRelError(
            f"output_padding {attrs.output_padding} must be smaller than the stride or the dilation"
        )
    oh = (h - 1) * sh - pt - pb + dh * (kh - 1) + oph + 1
    ow = (w - 1) * sw - pl - pr + dw * (kw - 1) + opw + 1
    if (static(oh) and oh < 1) or (static(ow) and ow < 1):
        raise TypeRelError(f"the padding {attrs.padding} leaves an empty output ({oh}x{ow})")
    shape = to_layout((n, o, oh, ow), "NCHW", attrs.out_layout or attrs.data_layout)
    return TensorType(shape, resolve_dtype(attrs.out_dtype, data.dtype))


def dense_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    weight = tensor_arg(arg_types, 1, "weight")
    if data.ndim < 1:
        raise TypeRelError(f"data must have at least one dimension, got {data}")
    if weight.ndim != 2:
        raise TypeRelError(f"weight must be 2-D (units, in_features), got {weight}")
    if not (attrs.out_dtype and is_int(data.dtype) and is_int(weight.dtype)):
        _same_dtype(data, weight, "data and weight")  # mixed integers (u8 x i8) need out_dtype
    units, k = weight.shape
    if differ(data.shape[-1], k):
        raise TypeRelError(
            f"data {data} has {data.shape[-1]} features but the weight {weight} expects {k} "
            "(the weight is (units, in_features))"
        )
    if attrs.units is not None and attrs.units != units:
        raise TypeRelError(f"units={attrs.units} but the weight {weight} has {units} rows")
    return TensorType((*data.shape[:-1], units), resolve_dtype(attrs.out_dtype, data.dtype))


def batch_matmul_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    a = tensor_arg(arg_types, 0, "tensor_a")
    b = tensor_arg(arg_types, 1, "tensor_b")
    if a.ndim != 3 or b.ndim != 3:
        raise TypeRelError(f"batch_matmul needs two 3-D tensors, got {a} and {b}")
    _same_dtype(a, b, "tensor_a and tensor_b")
    ba, m, ka = (a.shape[0], a.shape[2], a.shape[1]) if attrs.transpose_a else a.shape
    bb, kb, nn = (b.shape[0], b.shape[2], b.shape[1]) if attrs.transpose_b else b.shape
    if differ(ka, kb):
        raise TypeRelError(
            f"reduction dimensions differ: {ka} in {a} and {kb} in {b} "
            f"(transpose_a={attrs.transpose_a}, transpose_b={attrs.transpose_b})"
        )
    batch = broadcast_dim(ba, bb, f"batch dimensions {ba} and {bb} differ and neither is 1")
    return TensorType((batch, m, nn), resolve_dtype(attrs.out_dtype, a.dtype))


# -- elementwise nn ops ---------------------------------------------------------------------------


def bias_add_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    bias = tensor_arg(arg_types, 1, "bias")
    axis = normalize_axis(attrs.axis, data.ndim, "bias_add axis")
    _check_vector(bias, data.shape[axis], data.dtype, f"bias (for axis {axis} of {data})")
    return data


def prelu_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    alpha = tensor_arg(arg_types, 1, "alpha")
    axis = normalize_axis(attrs.axis, data.ndim, "prelu axis")
    _check_vector(alpha, data.shape[axis], data.dtype, f"alpha (for axis {axis} of {data})")
    return data


def softmax_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = float_unary_rel(arg_types, attrs)
    assert isinstance(data, TensorType)  # float_unary_rel returns a tensor type or raises
    normalize_axis(attrs.axis, data.ndim, "softmax axis")
    return data


# -- pooling --------------------------------------------------------------------------------------


def pool2d_out_size(size: int, k: int, s: int, d: int, lo: int, hi: int, ceil_mode: bool) -> int:
    """Output length of a pooling window, with TVM's ``ceil_mode`` rule."""
    eff = (k - 1) * d + 1
    span = size + lo + hi - eff
    if static(span) and span < 0:
        raise TypeRelError(
            f"the pooling window ({eff} with dilation) is larger than the padded input "
            f"({size} + {lo + hi})"
        )
    return (span + (s - 1 if ceil_mode else 0)) // s + 1


def pool2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n, c, h, w = _canonical(data, attrs.layout, "NCHW", "data")
    kh, kw = pair(attrs.pool_size, "pool_size")
    sh, sw = pair(attrs.strides, "strides")
    dh, dw = pair(attrs.dilation, "dilation")
    pt, pl, pb, pr = pad4(attrs.padding)
    oh = pool2d_out_size(h, kh, sh, dh, pt, pb, bool(attrs.ceil_mode))
    ow = pool2d_out_size(w, kw, sw, dw, pl, pr, bool(attrs.ceil_mode))
    return TensorType(
        to_layout((n, c, oh, ow), "NCHW", attrs.out_layout or attrs.layout), data.dtype
    )


def global_pool2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n, c, _, _ = _canonical(data, attrs.layout, "NCHW", "data")
    return TensorType(to_layout((n, c, 1, 1), "NCHW", attrs.out_layout or attrs.layout), data.dtype)


def adaptive_output_size(output_size: Any, h: int, w: int) -> tuple[int, int]:
    """(oh, ow) of an adaptive pool; an empty size keeps the input, ``None`` keeps one dim."""
    size = tuple(output_size or ()) if not isinstance(output_size, int) else (output_size,)
    if not size:
        return h, w
    if len(size) == 1:
        size = size * 2
    if len(size) != 2:
        raise TypeRelError(f"output_size must have 1 or 2 entries, got {output_size!r}")
    oh = h if size[0] is None else size[0]
    ow = w if size[1] is None else size[1]
    if not isinstance(oh, int) or not isinstance(ow, int) or oh < 1 or ow < 1:
        raise TypeRelError(f"output_size must be positive integers, got {output_size!r}")
    return oh, ow


def adaptive_pool2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    n, c, h, w = _canonical(data, attrs.layout, "NCHW", "data")
    if h == 0 or w == 0:
        raise TypeRelError(f"cannot pool an empty input {data}")
    oh, ow = adaptive_output_size(attrs.output_size, h, w)
    return TensorType(
        to_layout((n, c, oh, ow), "NCHW", attrs.out_layout or attrs.layout), data.dtype
    )


# -- normalisation, dropout, reshaping ------------------------------------------------------------


def batch_norm_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"data must be a floating-point tensor, got {data}")
    axis = normalize_axis(attrs.axis, data.ndim, "batch_norm axis")
    c = data.shape[axis]
    for i, name in enumerate(("gamma", "beta", "moving_mean", "moving_var"), start=1):
        _check_vector(tensor_arg(arg_types, i, name), c, data.dtype, f"{name} (axis {axis})")
    vec = TensorType((c,), data.dtype)
    return TupleType([data, vec, vec])


def layer_norm_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"data must be a floating-point tensor, got {data}")
    axis = normalize_axis(attrs.axis, data.ndim, "layer_norm axis")
    c = data.shape[axis]
    for i, name in enumerate(("gamma", "beta"), start=1):
        _check_vector(tensor_arg(arg_types, i, name), c, data.dtype, f"{name} (axis {axis})")
    return data


def dropout_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if not 0.0 <= attrs.rate <= 1.0:
        raise TypeRelError(f"dropout rate must be in [0, 1], got {attrs.rate}")
    return TupleType([data, data])


def batch_flatten_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.ndim < 1:
        raise TypeRelError(f"batch_flatten needs at least a batch dimension, got {data}")
    return TensorType((data.shape[0], math.prod(data.shape[1:])), data.dtype)


def pad_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    value = tensor_arg(arg_types, 1, "pad_value")
    if value.shape != ():
        raise TypeRelError(f"pad_value must be a scalar, got {value}")
    width = attrs.pad_width
    if width is None or len(width) != data.ndim:
        raise TypeRelError(
            f"pad_width must have one (before, after) pair per axis of {data}, got {width!r}"
        )
    if attrs.pad_mode not in ("constant", "edge", "reflect"):
        raise TypeRelError(
            f"pad_mode must be 'constant', 'edge' or 'reflect', got {attrs.pad_mode!r}"
        )
    shape = []
    for axis, (dim, pw) in enumerate(zip(data.shape, width, strict=True)):
        if len(pw) != 2 or any(not isinstance(p, int) or p < 0 for p in pw):
            raise TypeRelError(f"pad_width[{axis}] must be two non-negative integers, got {pw!r}")
        if attrs.pad_mode == "reflect" and static(dim) and max(pw) >= dim:
            raise TypeRelError(
                f"reflect padding {pw} on axis {axis} must be smaller than its size {dim}"
            )
        if attrs.pad_mode == "edge" and max(pw) > 0 and dim == 0:
            raise TypeRelError(f"cannot edge-pad the empty axis {axis}")
        shape.append(dim + pw[0] + pw[1])
    return TensorType(shape, data.dtype)
