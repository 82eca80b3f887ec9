"""``nn.max_pool2d_with_argmax``: 2-D max pooling that also returns where each maximum
came from, as ONNX's ``MaxPool`` ``Indices`` output (and PyTorch's
``return_indices``) do.

The index of a maximum is its position in the flattened NCHW input (batch and
channel included): ``((n * C + c) * H + h) * W + w``, or with
``storage_order=1`` (column-major) ``(n * C + c) * H * W + w * H + h``. Padding
never wins; among equal values the first in row-major window order does.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 1, 4, 4))
>>> relay.nn.max_pool2d_with_argmax(x, pool_size=(2, 2), strides=(2, 2)).astuple().attrs.pool_size
(2, 2)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Expr, TupleWrapper
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op._numeric import lowest_value
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

from ._kernels import _pool_geometry, _windows
from ._relations import pool2d_rel

__all__ = ["max_pool2d_with_argmax"]


def _rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    if attrs.layout != "NCHW":
        raise TypeRelError(f"max_pool2d_with_argmax supports layout NCHW, got {attrs.layout}")
    if attrs.storage_order not in (0, 1):
        raise TypeRelError(f"storage_order must be 0 or 1, got {attrs.storage_order}")
    values = pool2d_rel(arg_types, attrs)
    assert isinstance(values, TensorType)
    return TupleType([values, TensorType(values.shape, "int64")])


def _kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, np.ndarray]:
    x = inputs[0]
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr), (eh, ew), (oh, ow) = _pool_geometry(
        x.shape, attrs
    )
    pad = ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew))
    xp = np.pad(x, pad, constant_values=lowest_value(x.dtype))
    # Positions in the padded array; padding is masked out so that it never wins.
    rows = np.arange(xp.shape[2]) - pt
    cols = np.arange(xp.shape[3]) - pl
    valid = ((rows >= 0) & (rows < h))[:, None] & ((cols >= 0) & (cols < w))[None, :]
    win = _windows(xp, kh, kw, (sh, sw), (dh, dw), (oh, ow)).reshape(n, c, oh, ow, kh * kw)
    ok = _windows(valid[None, None], kh, kw, (sh, sw), (dh, dw), (oh, ow))
    ok = ok.reshape(1, 1, oh, ow, kh * kw)
    best = np.argmax(np.where(ok, win.astype(np.float64), -np.inf), axis=-1)
    values = np.take_along_axis(win, best[..., None], axis=-1)[..., 0]
    ki, kj = np.divmod(best, kw)
    hh = np.arange(oh)[:, None] * sh + ki * dh - pt
    ww = np.arange(ow)[None, :] * sw + kj * dw - pl
    plane = (np.arange(n)[:, None, None, None] * c + np.arange(c)[None, :, None, None]) * (h * w)
    index = plane + ww * h + hh if attrs.storage_order else plane + hh * w + ww
    return values.astype(x.dtype), index.astype(np.int64)


define_op(
    "nn.max_pool2d_with_argmax",
    num_inputs=1,
    num_outputs=2,
    attrs={
        "pool_size": (1, 1),
        "strides": (1, 1),
        "dilation": (1, 1),
        "padding": (0, 0, 0, 0),
        "layout": "NCHW",
        "out_layout": "",
        "ceil_mode": False,
        "storage_order": 0,
    },
    attrs_type_key="relay.attrs.MaxPool2DAttrs",
    type_rel=_rel,
    compute=_kernel,
    pattern=OpPattern.OPAQUE,
    doc="2-D max pooling returning (values, flat indices of the maxima).",
)


def max_pool2d_with_argmax(
    data: Expr,
    pool_size: Sequence[int] = (1, 1),
    strides: Sequence[int] = (1, 1),
    dilation: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0, 0, 0),
    layout: str = "NCHW",
    ceil_mode: bool = False,
    storage_order: int = 0,
) -> TupleWrapper:
    """``(values, indices)`` of a 2-D max pooling of NCHW ``data``; ``indices`` (int64)
    are positions in the flattened input (see the module docstring)."""
    pad = tuple(padding)
    if len(pad) == 2:
        pad = pad * 2
    call = make_call(
        "nn.max_pool2d_with_argmax",
        [data],
        pool_size=tuple(pool_size),
        strides=tuple(strides),
        dilation=tuple(dilation),
        padding=pad,
        layout=layout,
        ceil_mode=bool(ceil_mode),
        storage_order=int(storage_order),
    )
    return TupleWrapper(call, 2)
