"""Neural-network operators (``relay.nn.*``), with TVM's signatures and defaults.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 3, 8, 8))
>>> w = relay.var("w", shape=(16, 3, 3, 3))
>>> y = conv2d(x, w, padding=1, channels=16, kernel_size=3)
>>> y.attrs.padding, y.attrs.kernel_size
((1, 1, 1, 1), (3, 3))
>>> batch_norm(y, *[relay.var(n, shape=(16,)) for n in "abcd"])[0].index
0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.errors import AttrError
from relaykit.ir.expr import Call, Expr, TupleGetItem, TupleWrapper, const
from relaykit.ir.types import check_dtype
from relaykit.op._relations import static_value
from relaykit.op.define import make_call

from . import _ops, _solvers  # noqa: F401 - register the nn.* operators, their type solvers
from ._argmax_pool import max_pool2d_with_argmax
from ._conv_nd import conv1d, conv1d_transpose, conv3d, conv3d_transpose
from ._deformable import deformable_conv2d
from ._extra_ops import avg_pool3d, lrn, max_pool3d
from ._gelu import gelu
from ._matmul import matmul
from ._space import batch_to_space_nd, depth_to_space, space_to_batch_nd, space_to_depth

__all__ = [
    "conv2d",
    "conv2d_transpose",
    "conv1d",
    "conv1d_transpose",
    "conv3d",
    "conv3d_transpose",
    "dense",
    "matmul",
    "batch_matmul",
    "bias_add",
    "relu",
    "leaky_relu",
    "prelu",
    "softmax",
    "log_softmax",
    "max_pool2d",
    "avg_pool2d",
    "global_avg_pool2d",
    "global_max_pool2d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "batch_norm",
    "layer_norm",
    "dropout",
    "dropout_raw",
    "batch_flatten",
    "pad",
    "get_pad_tuple2d",
    "lrn",
    "max_pool3d",
    "max_pool2d_with_argmax",
    "avg_pool3d",
    "batch_to_space_nd",
    "deformable_conv2d",
    "depth_to_space",
    "space_to_batch_nd",
    "space_to_depth",
    "gelu",
]


def get_pad_tuple2d(padding: Any) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from an int, a 2-tuple (h, w) or a 4-tuple, as TVM.

    >>> get_pad_tuple2d(1), get_pad_tuple2d((1, 2)), get_pad_tuple2d((1, 2, 3, 4))
    ((1, 1, 1, 1), (1, 2, 1, 2), (1, 2, 3, 4))
    """
    if isinstance(padding, (int, np.integer)):
        pad_h = pad_w = int(padding) * 2
    else:
        vals = tuple(int(p) for p in padding)
        if len(vals) == 4:
            return vals[0], vals[1], vals[2], vals[3]
        if len(vals) != 2:
            raise AttrError(f"padding must have 1, 2 or 4 values, got {padding!r}")
        pad_h, pad_w = vals[0] * 2, vals[1] * 2
    top, left = (pad_h + 1) // 2, (pad_w + 1) // 2
    return top, left, pad_h - top, pad_w - left


def _pair(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    return tuple(int(v) for v in value)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _dtype(value: Any) -> str:
    return check_dtype(value) if value else ""


def conv2d(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """2-D convolution; ``padding`` is normalised to (top, left, bottom, right).

    Grouped and depthwise convolutions set ``groups``; the weight then has
    ``in_channels // groups`` input channels (``OIHW``).
    """
    return make_call(
        "nn.conv2d",
        [data, weight],
        strides=_pair(strides),
        padding=get_pad_tuple2d(padding),
        dilation=_pair(dilation),
        groups=int(groups),
        channels=_opt_int(channels),
        kernel_size=_pair(kernel_size),
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_layout=out_layout,
        out_dtype=_dtype(out_dtype),
    )


def conv2d_transpose(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "IOHW",
    out_layout: str = "",
    output_padding: Any = (0, 0),
    out_dtype: str = "",
) -> Call:
    """2-D transposed convolution; the weight is ``IOHW`` = (in, out // groups, kh, kw)."""
    return make_call(
        "nn.conv2d_transpose",
        [data, weight],
        channels=_opt_int(channels),
        kernel_size=_pair(kernel_size),
        strides=_pair(strides),
        output_padding=_pair(output_padding),
        padding=get_pad_tuple2d(padding),
        dilation=_pair(dilation),
        groups=int(groups),
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_layout=out_layout,
        out_dtype=_dtype(out_dtype),
    )


def dense(data: Expr, weight: Expr, units: int | None = None, out_dtype: str = "") -> Call:
    """``data @ weight.T``: weight has shape (units, in_features).

    >>> from relaykit import relay
    >>> dense(relay.var("x", shape=(1, 4)), relay.var("w", shape=(8, 4)), units=8).attrs.units
    8
    """
    return make_call("nn.dense", [data, weight], units=_opt_int(units), out_dtype=_dtype(out_dtype))


def batch_matmul(
    tensor_a: Expr,
    tensor_b: Expr,
    out_dtype: str = "",
    transpose_a: bool = False,
    transpose_b: bool = True,
) -> Call:
    """Batched ``a @ b``; by default (as TVM) ``b`` is given transposed: (batch, N, K)."""
    return make_call(
        "nn.batch_matmul",
        [tensor_a, tensor_b],
        out_dtype=_dtype(out_dtype),
        transpose_a=bool(transpose_a),
        transpose_b=bool(transpose_b),
    )


def bias_add(data: Expr, bias: Expr, axis: int = 1) -> Call:
    """Add the 1-D ``bias`` along ``axis`` of ``data``."""
    return make_call("nn.bias_add", [data, bias], axis=int(axis))


def relu(data: Expr) -> Call:
    """``max(data, 0)``."""
    return make_call("nn.relu", [data])


def leaky_relu(data: Expr, alpha: float = 0.01) -> Call:
    """``data`` where positive, else ``alpha * data``."""
    return make_call("nn.leaky_relu", [data], alpha=float(alpha))


def prelu(data: Expr, alpha: Expr, axis: int = 1) -> Call:
    """Leaky ReLU with a slope per channel: ``alpha`` has shape (data.shape[axis],)."""
    return make_call("nn.prelu", [data, alpha], axis=int(axis))


def softmax(data: Expr, axis: int = -1) -> Call:
    """``exp(x) / sum(exp(x))`` along ``axis``."""
    return make_call("nn.softmax", [data], axis=int(axis))


def log_softmax(data: Expr, axis: int = -1) -> Call:
    """``log(softmax(x))`` along ``axis``, computed stably."""
    return make_call("nn.log_softmax", [data], axis=int(axis))


def _pool_args(pool_size: Any, strides: Any, dilation: Any, padding: Any) -> dict[str, Any]:
    return {
        "pool_size": _pair(pool_size),
        "strides": _pair(strides),
        "dilation": _pair(dilation),
        "padding": get_pad_tuple2d(padding),
    }


def max_pool2d(
    data: Expr,
    pool_size: Any = (1, 1),
    strides: Any = (1, 1),
    dilation: Any = (1, 1),
    padding: Any = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
) -> Call:
    """2-D max pooling (padding never wins the max).

    >>> from relaykit import relay
    >>> max_pool2d(relay.var("x", shape=(1, 1, 4, 4)), 2, 2).attrs.pool_size
    (2, 2)
    """
    return make_call(
        "nn.max_pool2d",
        [data],
        **_pool_args(pool_size, strides, dilation, padding),
        layout=layout,
        out_layout=out_layout,
        ceil_mode=bool(ceil_mode),
    )


def avg_pool2d(
    data: Expr,
    pool_size: Any = (1, 1),
    strides: Any = (1, 1),
    dilation: Any = (1, 1),
    padding: Any = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> Call:
    """2-D average pooling; ``count_include_pad`` counts padding in the divisor."""
    return make_call(
        "nn.avg_pool2d",
        [data],
        **_pool_args(pool_size, strides, dilation, padding),
        layout=layout,
        out_layout=out_layout,
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
    )


def global_avg_pool2d(data: Expr, layout: str = "NCHW", out_layout: str = "") -> Call:
    """Mean over the whole spatial plane: (N, C, H, W) -> (N, C, 1, 1)."""
    return make_call("nn.global_avg_pool2d", [data], layout=layout, out_layout=out_layout)


def global_max_pool2d(data: Expr, layout: str = "NCHW", out_layout: str = "") -> Call:
    """Maximum over the whole spatial plane: (N, C, H, W) -> (N, C, 1, 1)."""
    return make_call("nn.global_max_pool2d", [data], layout=layout, out_layout=out_layout)


def _output_size(output_size: Any) -> tuple[Any, ...]:
    if output_size is None:
        return ()
    if isinstance(output_size, (int, np.integer)):
        return (int(output_size), int(output_size))
    return tuple(None if s is None else int(s) for s in output_size)


def adaptive_avg_pool2d(
    data: Expr, output_size: Any = None, layout: str = "NCHW", out_layout: str = ""
) -> Call:
    """Average pooling to a fixed (oh, ow) output, with PyTorch's window bounds."""
    return make_call(
        "nn.adaptive_avg_pool2d",
        [data],
        output_size=_output_size(output_size),
        layout=layout,
        out_layout=out_layout,
    )


def adaptive_max_pool2d(
    data: Expr, output_size: Any = None, layout: str = "NCHW", out_layout: str = ""
) -> Call:
    """Max pooling to a fixed (oh, ow) output."""
    return make_call(
        "nn.adaptive_max_pool2d",
        [data],
        output_size=_output_size(output_size),
        layout=layout,
        out_layout=out_layout,
    )


def batch_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    moving_mean: Expr,
    moving_var: Expr,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> TupleWrapper:
    """Batch normalisation (inference form): a 3-tuple (out, moving_mean, moving_var).

    Use ``batch_norm(...)[0]`` for the normalised tensor.
    """
    call = make_call(
        "nn.batch_norm",
        [data, gamma, beta, moving_mean, moving_var],
        axis=int(axis),
        epsilon=float(epsilon),
        center=bool(center),
        scale=bool(scale),
    )
    return TupleWrapper(call, 3)


def layer_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    axis: int = -1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """Layer normalisation along ``axis``; ``gamma``/``beta`` have that axis' size."""
    return make_call(
        "nn.layer_norm",
        [data, gamma, beta],
        axis=int(axis),
        epsilon=float(epsilon),
        center=bool(center),
        scale=bool(scale),
    )


def dropout_raw(data: Expr, rate: float = 0.5) -> Call:
    """The ``nn.dropout`` call itself: a 2-tuple (out, mask)."""
    return make_call("nn.dropout", [data], rate=float(rate))


def dropout(data: Expr, rate: float = 0.5) -> TupleGetItem:
    """Dropout: ``dropout_raw(data, rate)[0]``, as TVM (the identity at inference)."""
    return TupleWrapper(dropout_raw(data, rate), 2)[0]


def batch_flatten(data: Expr) -> Call:
    """Flatten all axes but the first: (N, ...) -> (N, prod(...))."""
    return make_call("nn.batch_flatten", [data])


def pad(data: Expr, pad_width: Any, pad_value: Any = 0, pad_mode: str = "constant") -> Call:
    """Pad each axis by ``pad_width[axis] = (before, after)``.

    ``pad_value`` is a scalar expression (a number becomes a constant), used
    when ``pad_mode="constant"``; ``"edge"`` and ``"reflect"`` ignore it.

    >>> from relaykit import relay
    >>> pad(relay.var("x", shape=(2, 2)), ((1, 1), (0, 2))).attrs.pad_width
    ((1, 1), (0, 2))
    """
    if not isinstance(pad_value, Expr):
        pad_value = const(pad_value)
    pad_width = static_value(pad_width)
    if isinstance(pad_width, Expr):  # run-time widths: dyn.nn.pad
        return make_call("dyn.nn.pad", [data, pad_width, pad_value], pad_mode=pad_mode)
    width = tuple(tuple(int(p) for p in pw) for pw in pad_width)
    return make_call("nn.pad", [data, pad_value], pad_width=width, pad_mode=pad_mode)
