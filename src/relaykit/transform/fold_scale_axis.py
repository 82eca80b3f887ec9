"""``FoldScaleAxis``: fold a per-channel scale into the weights of the layer before it.

After ``SimplifyInference`` a batch norm is ``x * scale + shift`` with
constant per-channel ``scale`` and ``shift``. When ``x`` is a convolution (or
a dense layer), optionally followed by a per-channel bias, and nothing else
uses it, the multiplication moves into the constant weights::

    multiply(conv2d(x, W), s)          ->  conv2d(x, W * s[:, None, None, None])
    multiply(bias_add(conv2d(x, W), b), s)
                                       ->  bias_add(conv2d(x, W * s'), b * s)

and then, as TVM's ``FoldScaleAxis`` (a sequence ending in ``FoldConstant``) does,
evaluates what became constant, so the model runs one convolution where it ran a
convolution and a multiplication (TVM's backward folding).

>>> import numpy as np
>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(1, 2, 4, 4))
>>> w = relay.const(np.ones((3, 2, 1, 1), "float32"))
>>> s = relay.const(np.full((3, 1, 1), 2.0, "float32"))
>>> f = relay.Function([x], relay.multiply(relay.nn.conv2d(x, w), s))
>>> with relay.transform.PassContext(opt_level=3):
...     out = FoldScaleAxis()(IRModule.from_expr(f))["main"].body
>>> out.op.name, out.args[1].data.numpy()[:, 0, 0, 0].tolist()
('nn.conv2d', [2.0, 2.0, 2.0])
"""

from __future__ import annotations

import numpy as np

from relaykit import op
from relaykit.ir.expr import Call, Constant, Expr, Function, checked_type_or_none
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType

from ._uses import use_counts
from .fold_constant import fold_constant, max_fold_bytes, max_fold_macs
from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["FoldScaleAxis", "fold_scale_axis"]


def _name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _channel_scale(scale: Expr, out: TensorType, axis: int) -> np.ndarray | None:
    """The scale as a vector over ``axis`` of ``out``, if it varies along that axis only."""
    if type(scale) is not Constant:
        return None
    s = scale.data.numpy()
    if s.ndim > out.ndim or s.dtype.name != out.dtype:
        return None
    full = (1,) * (out.ndim - s.ndim) + s.shape
    if any(d != 1 for i, d in enumerate(full) if i != axis):
        return None
    if full[axis] not in (1, out.shape[axis]):
        return None
    return np.broadcast_to(s.reshape(-1), (out.shape[axis],)).astype(s.dtype)


def _scaled_bias(
    bias_call: Call, bias: Expr, vec: np.ndarray, out_t: TensorType, axis: int
) -> Expr | None:
    """The bias of ``bias_call`` (``nn.bias_add`` or ``add``) times ``vec``, if it can be."""
    if _name(bias_call) == "nn.bias_add":
        if bias_call.attrs.axis % out_t.ndim != axis:
            return None
        return op.multiply(bias, Constant(vec))
    if type(bias) is not Constant or _channel_scale(bias, out_t, axis) is None:
        return None
    b = bias.data.numpy()
    return Constant(b * vec.reshape((-1,) + (1,) * (out_t.ndim - axis - 1)))


def _scaled_layer(layer: Call, vec: np.ndarray) -> Expr | None:
    """``layer`` with its output channels multiplied by ``vec``, or None."""
    name = _name(layer)
    weight = layer.args[1]
    if name == "nn.conv2d":
        o_axis = layer.attrs.kernel_layout.index("O")
        shape = [1] * 4
        shape[o_axis] = vec.shape[0]
    elif name == "nn.dense":
        shape = [vec.shape[0], 1]
    else:
        return None
    new_w = op.multiply(weight, Constant(vec.reshape(shape)))
    return layer.with_fields(args=[layer.args[0], new_w])


def fold_scale_axis(expr: Expr, mod: IRModule | None = None) -> Expr:
    """``expr`` with per-channel scales folded into preceding conv2d / dense weights
    (globals it calls are typed in ``mod``)."""
    infer_type(expr, mod)
    uses = use_counts(expr)

    def channel_axis(layer: Call) -> int:
        if _name(layer) == "nn.conv2d":
            return (layer.attrs.out_layout or layer.attrs.data_layout).index("C")
        return 1

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is not Call or type(old) is not Call or _name(new) != "multiply":
            return None
        lhs, scale = new.args
        old_lhs = old.args[0]
        out_t = checked_type_or_none(old_lhs)
        if uses.get(old_lhs, 0) != 1 or not isinstance(out_t, TensorType):
            return None
        # multiply(layer, scale) or multiply(bias_add/add(layer, bias), scale)
        bias_call = lhs if type(lhs) is Call and _name(lhs) in ("nn.bias_add", "add") else None
        layer, bias = lhs, None
        if bias_call is not None:
            if type(old_lhs) is not Call or uses.get(old_lhs.args[0], 0) != 1:
                return None
            layer, bias = bias_call.args
        if type(layer) is not Call or _name(layer) not in ("nn.conv2d", "nn.dense"):
            return None
        axis = channel_axis(layer)
        vec = _channel_scale(scale, out_t, axis)
        if vec is None:
            return None
        new_bias = None
        if bias_call is not None and bias is not None:
            new_bias = _scaled_bias(bias_call, bias, vec, out_t, axis)
            if new_bias is None:
                return None
        scaled = _scaled_layer(layer, vec)
        if scaled is None:
            return None
        if bias_call is None or new_bias is None:
            return scaled
        return bias_call.with_fields(args=[scaled, new_bias])

    return rewrite_post_order(expr, post)


class FoldScaleAxis(FunctionPass):
    """``relay.transform.FoldScaleAxis()`` (opt_level 3): fold per-channel scales into
    convolution and dense weights, then fold the constants that made (as TVM's)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=3, name="FoldScaleAxis")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = fold_scale_axis(fn, mod)
        if out is fn or not isinstance(out, Function):
            return fn
        folded = fold_constant(out, mod, max_fold_bytes(ctx), max_fold_macs(ctx))
        return folded if isinstance(folded, Function) else out
