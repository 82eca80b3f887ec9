"""Operators with a block-sparse (BSR) weight: ``nn.sparse_dense`` and ``nn.sparse_conv2d``.

``nn.sparse_dense(data, (w_data, w_indices, w_indptr))`` is ``data @ W.T`` for the BSR
matrix ``W`` of shape ``(N, K)`` (``sparse_lhs=True``: ``W @ data.T``, the sparse matrix
on the left). ``nn.sparse_conv2d`` is TVM's ``relay.nn.sparse_conv2d(data, (weight_data,
weight_indices, weight_indptr), layout, kernel_size)``. The weight is the
``(out_channels, K)`` matrix in BSR form
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

__all__ = ["sparse_conv2d", "sparse_dense"]


def _bsr_args(arg_types: Sequence[Type], first: int) -> tuple[TensorType, TensorType, TensorType]:
    wdata = tensor_arg(arg_types, first, "weight_data")
    windices = tensor_arg(arg_types, first + 1, "weight_indices")
    windptr = tensor_arg(arg_types, first + 2, "weight_indptr")
    if wdata.ndim != 3 or windices.ndim != 1 or windptr.ndim != 1:
        raise TypeRelError(
            "a BSR weight is data (blocks, bs_r, bs_c), indices (blocks,), indptr "
            f"(block_rows + 1,); got {wdata}, {windices}, {windptr}"
        )
    if not (is_int(windices.dtype) and is_int(windptr.dtype)):
        raise TypeRelError(f"BSR indices and indptr must be integers, got {windices}, {windptr}")
    return wdata, windices, windptr


def _bsr_dense(
    wdata: np.ndarray, windices: np.ndarray, windptr: np.ndarray, cols: int
) -> np.ndarray:
    rows = (len(windptr) - 1) * wdata.shape[1]
    return sp.bsr_matrix((wdata, windices, windptr), shape=(rows, cols)).toarray()


# -- nn.sparse_dense -------------------------------------------------------------------------------


def _sparse_dense_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    wdata, _, windptr = _bsr_args(arg_types, 1)
    if data.ndim != 2 or wdata.dtype != data.dtype:
        raise TypeRelError(
            f"sparse_dense takes 2-D data of the weight's dtype, got {data}, {wdata}"
        )
    rows = (windptr.shape[0] - 1) * wdata.shape[1]
    shape = (rows, data.shape[0]) if attrs.sparse_lhs else (data.shape[0], rows)
    return TensorType(shape, data.dtype)


def _sparse_dense_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, wdata, windices, windptr = ins
    w = _bsr_dense(wdata, windices, windptr, data.shape[1]).astype(np.float64)
    x = data.astype(np.float64)
    return as_out(w @ x.T if attrs.sparse_lhs else x @ w.T, data.dtype)


define_op(
    "nn.sparse_dense",
    num_inputs=4,
    attrs={"sparse_lhs": False},
    attrs_type_key="relay.attrs.SparseDenseAttrs",
    type_rel=_sparse_dense_rel,
    compute=_sparse_dense_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="data @ W.T for a BSR weight W (sparse_lhs: W @ data.T).",
)


def sparse_dense(dense_mat: Expr, sparse_mat: Any, sparse_lhs: bool = False) -> Call:
    """``dense_mat @ W.T`` for the BSR matrix ``sparse_mat = (data, indices, indptr)``
    (``sparse_lhs``: ``W @ dense_mat.T``)."""
    wdata, windices, windptr = sparse_mat
    return make_call(
        "nn.sparse_dense", [dense_mat, wdata, windices, windptr], sparse_lhs=bool(sparse_lhs)
    )


# -- nn.sparse_conv2d ------------------------------------------------------------------------------


def _geometry(data: Any, layout: str) -> tuple[int, int, int, int]:
    """(N, C, H, W) of ``data``'s shape in ``layout``."""
    n, a, b, c = data
    return (n, a, b, c) if layout == "NCHW" else (n, c, a, b)


def _sparse_conv2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    wdata, _, windptr = _bsr_args(arg_types, 1)
    if data.ndim != 4 or attrs.layout not in ("NCHW", "NHWC"):
        raise TypeRelError(
            f"sparse_conv2d takes 4-D NCHW or NHWC data, got {data} ({attrs.layout})"
        )
    if wdata.dtype != data.dtype:
        raise TypeRelError(f"sparse_conv2d: the weight's data must be {data.dtype}, got {wdata}")
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
    matrix = _bsr_dense(wdata, windices, windptr, c * k * k)
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
