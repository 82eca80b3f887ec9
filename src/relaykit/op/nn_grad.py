"""Gradients of the convolution, pooling and matmul operators (``FPrimalGradient``), used
by ``relay.transform.gradient`` beside :mod:`relaykit.op.tensor_grad`.

``nn.conv2d``'s data gradient is a transposed convolution of the output gradient with
the same weight (``output_padding`` restores the rows and columns a stride skipped), its
weight gradient ``nn.conv2d_backward_weight``; the pools' gradients are
``nn.max_pool2d_grad`` / ``nn.avg_pool2d_grad``; ``nn.global_avg_pool2d`` spreads the
gradient evenly over each plane.

>>> from relaykit.ir import get_op
>>> get_op("nn.conv2d").get_attr("FPrimalGradient") is not None
True
"""

from __future__ import annotations

from relaykit.errors import UnsupportedFeatureError
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType

from .nn import conv2d_transpose
from .nn.geometry import pad4, pair
from .nn.grad_ops import avg_pool2d_grad, conv2d_backward_weight, max_pool2d_grad
from .nn.linear import matmul
from .shape_like import broadcast_to_like
from .tensor import divide
from .tensor_grad import GRADIENTS, _grad, _scalar
from .transform import transpose

__all__ = ["GRADIENTS"]


def _ttype(e: Expr) -> TensorType:
    t = e.checked_type
    assert isinstance(t, TensorType)
    return t


@_grad("nn.max_pool2d")
def _max_pool2d_grad(call: Call, g: Expr) -> list[Expr]:
    a = call.attrs
    args = (a.pool_size, a.strides, a.padding, a.layout, a.out_layout, a.ceil_mode)
    return [max_pool2d_grad(g, call.args[0], *args, a.dilation)]


@_grad("nn.avg_pool2d")
def _avg_pool2d_grad(call: Call, g: Expr) -> list[Expr]:
    a = call.attrs
    args = (a.pool_size, a.strides, a.padding, a.layout, a.out_layout, a.ceil_mode)
    return [avg_pool2d_grad(g, call.args[0], *args, a.count_include_pad, a.dilation)]


@_grad("nn.global_avg_pool2d")
def _global_avg_pool2d_grad(call: Call, g: Expr) -> list[Expr]:
    x = call.args[0]
    layout = call.attrs.layout
    shape = _ttype(x).shape
    size = int(shape[layout.index("H")]) * int(shape[layout.index("W")])
    return [divide(broadcast_to_like(g, x), _scalar(float(size), x))]


@_grad("nn.conv2d")
def _conv2d_grad(call: Call, g: Expr) -> list[Expr]:
    a = call.attrs
    if (a.data_layout, a.kernel_layout, a.out_layout or a.data_layout) != ("NCHW", "OIHW", "NCHW"):
        raise UnsupportedFeatureError(
            f"gradient of nn.conv2d: only NCHW data with an OIHW kernel has a gradient, got "
            f"{a.data_layout}/{a.kernel_layout}; convert the layout first (ConvertLayout)"
        )
    x, w = call.args
    _, c, h, wd = (int(d) for d in _ttype(x).shape)
    _, _, kh, kw = (int(d) for d in _ttype(w).shape)
    _, _, oh, ow = (int(d) for d in _ttype(call).shape)
    sh, sw = pair(a.strides)
    dh, dw = pair(a.dilation)
    pt, pl, pb, pr = pad4(a.padding)
    # rows of the input the forward pass never read (stride remainder) get output_padding
    back_h = (oh - 1) * sh - pt - pb + (kh - 1) * dh + 1
    back_w = (ow - 1) * sw - pl - pr + (kw - 1) * dw + 1
    extra = (h - back_h, wd - back_w)
    if min(extra) < 0 or extra[0] >= max(sh, dh) or extra[1] >= max(sw, dw):
        raise UnsupportedFeatureError(
            f"gradient of nn.conv2d: cannot map the {oh}x{ow} output back onto the {h}x{wd} input"
        )
    dx = conv2d_transpose(
        g, w, strides=(sh, sw), padding=(pt, pl, pb, pr), dilation=(dh, dw), groups=a.groups,
        channels=c, kernel_size=(kh, kw), output_padding=extra, out_dtype=_ttype(x).dtype,
    )  # fmt: skip
    dwt = conv2d_backward_weight(
        g, x, strides=(sh, sw), padding=(pt, pl, pb, pr), dilation=(dh, dw), groups=a.groups,
        channels=int(_ttype(w).shape[0]), kernel_size=(kh, kw), out_dtype=_ttype(w).dtype,
    )  # fmt: skip
    return [dx, dwt]


@_grad("nn.matmul")
def _matmul_grad(call: Call, g: Expr) -> list[Expr]:
    a, b = call.args
    ta, tb = bool(call.attrs.transpose_a), bool(call.attrs.transpose_b)
    # out = A @ B with A = a^T if ta else a, B = b^T if tb else b
    da = matmul(g, b, transpose_b=not tb)  # g @ B^T
    db = matmul(a, g, transpose_a=not ta)  # A^T @ g
    return [transpose(da, [1, 0]) if ta else da, transpose(db, [1, 0]) if tb else db]
