"""``nn.sparse_conv2d``: a convolution whose weight is a block-sparse (BSR) matrix.

TVM's ``relay.nn.sparse_conv2d(data, (weight_data, weight_indices, weight_indptr),
layout, kernel_size)``. The weight is the ``(out_channels, K)`` matrix in BSR form
(``scipy.sparse.bsr_matrix((data, indices, indptr))``: blocks of ``bs_r x bs_c``);
with ``kernel_size`` 1, ``K`` is the input channels, with 3 it is ``9 x`` those and the
convolution pads by 1 on every side (stride 1: the output keeps the input's size).
``K`` is ordered as the dense weight flattens: ``(in_channel, kh, kw)`` for ``NCHW``
(an ``OIHW`` weight's rows) and ``(kh, kw, in_channel)`` for ``NHWC`` (an ``HWIO``
weight's columns).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 4, 5, 5))
>>> d = relay.var("d", shape=(2, 2, 1))
>>> i = relay.var("i", shape=(2,), dtype="int32")
>>> p = relay.var("p", shape=(3,), dtype="int32")
>>> sparse_conv2d(x, (d, i, p), layout="NCHW").attrs.layout
'NCHW'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from relaykit.errors import ArgumentError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._numeric import as_out
from relaykit.op._relations import is_int, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

from .geometry import windows

__all__ = ["sparse_conv2d"]


def _geometry(data: Any, layout: str) -> tuple[int, int, int, int]:
    """(N, C, H, W) of ``data``'s shape in ``layout``."""
    n, a, b, c = data
    return (n, a, b, c) if layout == "NCHW" else (n, c, a, b)


def _sparse_conv2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    wdata = tensor_arg(arg_types, 1, "weight_data")
    windices = tensor_arg(arg_types, 2, "weight_indices")
    windptr = tensor_arg(arg_types, 3, "weight_indptr")
    if data.ndim != 4 or attrs.layout not in ("NCHW", "NHWC"):
        raise TypeRelError(
            f"sparse_conv2d takes 4-D NCHW or NHWC data, got {data} ({attrs.layout})"
        )
    if wdata.ndim != 3 or windices.ndim != 1 or windptr.ndim != 1:
        raise TypeRelError(
            "sparse_conv2d's weight is BSR: data (blocks, bs_r, bs_c), indices (blocks,), "
            f"indptr (block_rows + 1,); got {wdata}, {windices}, {windptr}"
        )
    if not (is_int(windices.dtype) and is_int(windptr.dtype)) or wdata.dtype != data.dtype:
        raise TypeRelError(
            f"sparse_conv2d: weight indices must be integers and its data {data.dtype}, "
            f"got {wdata}, {windices}, {windptr}"
        )
    n, _, h, w = _geometry(data.shape, attrs.layout)
    out_c = (windptr.shape[0] - 1) * wdata.shape[1]
    shape = (n, out_c, h, w) if attrs.layout == "NCHW" else (n, h, w, out_c)
    return TensorType(shape, data.dtype)


def _sparse_conv2d_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, wdata, windices, windptr = ins
    k = int(attrs.kernel_size)
    layout = attrs.layout
    x = data if layout == "NCHW" else data.transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    bs_r = wdata.shape[1]
    rows = (len(windptr) - 1) * bs_r
    matrix = sp.bsr_matrix((wdata, windices, windptr), shape=(rows, c * k * k)).toarray()
    pad = (k - 1) // 2
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = windows(xp, k, k, (1, 1), (1, 1), (h, w))  # N, C, H, W, KH, KW
    if layout == "NCHW":
        cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n, h, w, c * k * k)
    else:
        cols = win.transpose(0, 2, 3, 4, 5, 1).reshape(n, h, w, k * k * c)
    out = cols @ matrix.astype(np.float64).T  # N, H, W, OC
    if layout == "NCHW":
        out = out.transpose(0, 3, 1, 2)
    return as_out(out, data.dtype)


define_op(
    "nn.sparse_conv2d",
    num_inputs=4,
    attrs={"layout": "NHWC", "kernel_size": 1},
    attrs_type_key="relay.attrs.SparseConv2DAttrs",
    type_rel=_sparse_conv2d_rel,
    compute=_sparse_conv2d_kernel,
    pattern=OpPattern.OPAQUE,
    doc="2-D convolution (1x1, or 3x3 padded by 1) with a block-sparse weight matrix.",
)


def sparse_conv2d(
    dense_data: Expr, sparse_weight: Any, layout: str = "NHWC", kernel_size: int = 1
) -> Call:
    """``dense_data`` convolved with the BSR weight ``sparse_weight = (data, indices,
    indptr)`` (see the module docstring); ``kernel_size`` is 1 or 3."""
    if layout not in ("NCHW", "NHWC"):
        raise ArgumentError(f"sparse_conv2d: layout must be NCHW or NHWC, got {layout!r}")
    if int(kernel_size) not in (1, 3):
        raise ArgumentError(f"sparse_conv2d: kernel_size must be 1 or 3, got {kernel_size!r}")
    wdata, windices, windptr = sparse_weight
    return make_call(
        "nn.sparse_conv2d",
        [dense_data, wdata, windices, windptr],
        layout=layout,
        kernel_size=int(kernel_size),
    )
