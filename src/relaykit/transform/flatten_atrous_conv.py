"""``FlattenAtrousConv``: ``space_to_batch_nd -> conv2d -> batch_to_space_nd`` becomes
one dilated ``conv2d``.

TensorFlow (and models converted from it) writes an atrous (dilated) convolution as a
convolution of the data cut into ``block_shape`` interleaved sub-images. When the
convolution between the two reshuffles has no padding, unit strides and no dilation,
and the data layout is ``NHWC``, the chain computes the convolution of the original data
dilated by ``block_shape``, padded by the ``space_to_batch_nd`` paddings less the
``batch_to_space_nd`` crops. ``nn.conv2d`` and ``qnn.conv2d`` are both rewritten; any
other chain is left alone. One post-order rewrite (opt_level 0, as TVM's pass).

>>> import numpy as np
>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(1, 5, 5, 4))
>>> w = relay.const(np.ones((3, 3, 4, 1), "float32"))
>>> s2b = relay.nn.space_to_batch_nd(x, block_shape=[2, 2], paddings=[[2, 3], [2, 3]])
>>> conv = relay.nn.conv2d(s2b, w, groups=4, channels=4, kernel_size=[3, 3],
...                        data_layout="NHWC", kernel_layout="HWOI")
>>> b2s = relay.nn.batch_to_space_nd(conv, block_shape=[2, 2], crops=[[0, 1], [0, 1]])
>>> out = FlattenAtrousConv()(IRModule.from_expr(b2s))["main"].body
>>> out.op.name, out.attrs.dilation, out.attrs.padding
('nn.conv2d', [2, 2], [2, 2, 2, 2])
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.expr import Call, Expr, Function
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op

from .pass_infra import FunctionPass, PassContext

__all__ = ["FlattenAtrousConv", "flatten_atrous_conv"]

_CONVS = ("nn.conv2d", "qnn.conv2d")


def _op_call(e: Expr, names: tuple[str, ...]) -> Call | None:
    if type(e) is Call and type(e.op) is Op and e.op.name in names:
        return e
    return None


def _ints(values: Any) -> list[int]:
    return [int(v) for v in values]


def _dilated_padding(s2b: Call, b2s: Call) -> tuple[int, int, int, int] | None:
    """``(top, left, bottom, right)``: the paddings less the crops, when the two
    reshuffles use one 2-D block shape and every padding covers its crop."""
    block = _ints(s2b.attrs.block_shape)
    if len(block) != 2 or block != _ints(b2s.attrs.block_shape):
        return None
    pads = [_ints(p) for p in s2b.attrs.paddings]
    crops = [_ints(c) for c in b2s.attrs.crops]
    if len(pads) != 2 or len(crops) != 2:
        return None
    if float(s2b.attrs.pad_value) != 0.0:
        return None
    top, bottom = pads[0][0] - crops[0][0], pads[0][1] - crops[0][1]
    left, right = pads[1][0] - crops[1][0], pads[1][1] - crops[1][1]
    if min(top, bottom, left, right) < 0:
        return None
    return top, left, bottom, right


def _plain_conv(conv: Call) -> bool:
    a = conv.attrs
    return (
        a.data_layout == "NHWC"
        and all(int(p) == 0 for p in a.padding)
        and all(int(s) == 1 for s in a.strides)
        and all(int(d) == 1 for d in a.dilation)
    )


def flatten_atrous_conv(expr: Expr) -> Expr:
    """``expr`` with each ``space_to_batch_nd -> conv2d -> batch_to_space_nd`` chain made
    one dilated convolution."""

    def post(new: Expr, old: Expr) -> Expr | None:
        b2s = _op_call(new, ("nn.batch_to_space_nd",))
        conv = _op_call(b2s.args[0], _CONVS) if b2s is not None else None
        s2b = _op_call(conv.args[0], ("nn.space_to_batch_nd",)) if conv is not None else None
        if b2s is None or conv is None or s2b is None or not _plain_conv(conv):
            return None
        padding = _dilated_padding(s2b, b2s)
        if padding is None:
            return None
        attrs = conv.attrs.with_updates(
            padding=padding, dilation=tuple(_ints(s2b.attrs.block_shape))
        )
        return Call(conv.op, [s2b.args[0], *conv.args[1:]], attrs, span=conv.span)

    return rewrite_post_order(expr, post)


class FlattenAtrousConv(FunctionPass):
    """``relay.transform.FlattenAtrousConv()`` (opt_level 0)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="FlattenAtrousConv")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = flatten_atrous_conv(fn)
        return out if isinstance(out, Function) else fn
