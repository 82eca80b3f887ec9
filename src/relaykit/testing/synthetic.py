"""A small synthetic network, as TVM's ``relay.testing.synthetic``: two rounds of a dense
branch (over the last axis, reshaped back) added to a conv2d + softmax branch, with a
bias and an inference batch norm between them. Input ``data`` of shape
``(batch, channels, height, width)``, default ``(1, 3, 24, 12)``; parameters
``dense_weight``, ``conv_weight``, ``bias``, ``batch_norm_*``, ``dense2_weight``,
``conv2_weight``, all set by TVM's ``Constant`` initializer (``1 / size``).

>>> mod, params = get_workload()
>>> str(mod["main"].ret_type)
'Tensor[(1, 3, 24, 12), float32]'
>>> sorted(params)[:3]
['batch_norm_beta', 'batch_norm_gamma', 'batch_norm_moving_mean']
"""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Expr, Function
from relaykit.ir.module import IRModule
from relaykit.op import nn
from relaykit.op.shape_like import reshape_like
from relaykit.op.tensor import add
from relaykit.op.transform import reshape
from relaykit.runtime.ndarray import NDArray

from .init import Constant, create_workload
from .layers import _var, batch_norm_infer

__all__ = ["get_net", "get_workload"]


def _round(x: Expr, data: Expr, shape: Sequence[int], wtype: str, dense: str, conv: str) -> Expr:
    """``dense branch + conv branch`` of ``x``: relu(dense) over the last axis, reshaped
    like ``data``, plus softmax(conv2d 3x3, padding 1)."""
    width, channels = shape[3], shape[1]
    flat = reshape(x, [-1, width])
    branch = nn.relu(nn.dense(flat, _var(dense, (width, width), wtype)))
    conv_out = nn.conv2d(x, _var(conv, (channels, channels, 3, 3), wtype), padding=1, kernel_size=3)
    return add(reshape_like(branch, data), nn.softmax(conv_out))


def get_net(
    input_shape: Sequence[int] = (1, 3, 24, 12), dtype: str = "float32", wtype: str | None = None
) -> Function:
    """The synthetic network as a function of ``data`` and its weights (``wtype``, default
    ``dtype``)."""
    wtype = wtype or dtype
    shape = tuple(int(d) for d in input_shape)
    data = _var("data", shape, dtype)
    first = _round(data, data, shape, wtype, "dense_weight", "conv_weight")
    biased = nn.bias_add(first, _var("bias", (shape[1],), wtype))
    normed = batch_norm_infer(biased, name="batch_norm")
    out = _round(normed, data, shape, wtype, "dense2_weight", "conv2_weight")
    return Function(free_vars(out), out)


def get_workload(
    input_shape: Sequence[int] = (1, 3, 24, 12), dtype: str = "float32", wtype: str | None = None
) -> tuple[IRModule, dict[str, NDArray]]:
    """``(mod, params)`` of :func:`get_net`, the weights filled by ``Constant()``."""
    return create_workload(get_net(input_shape, dtype, wtype), initializer=Constant())
