"""The Deep Q-Network of Mnih et al. (2015), as TVM's ``relay.testing.dqn``.

Three convolutions (8x8 stride 4, 4x4 stride 2, 3x3 stride 1; weights
``conv<i>_weight``, biases ``conv<i>_bias``) each followed by ``bias_add`` and
``relu``, then ``batch_flatten``, ``dense1`` (512 units) + ``relu`` and ``dense2``
with one output per action. The input is ``(4, 84, 84)`` (four stacked frames).

>>> net = get_net(1, 18, (4, 84, 84), "float32")
>>> [p.name_hint for p in net.params][:3]
['data', 'conv1_weight', 'conv1_bias']
"""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Expr, Function
from relaykit.ir.module import IRModule
from relaykit.op import nn
from relaykit.runtime.ndarray import NDArray

from . import layers
from .init import create_workload
from .layers import _var

__all__ = ["get_net", "get_workload"]

#: (kernel, stride, channels) of the three convolutions
CONVS = (((8, 8), (4, 4), 32), ((4, 4), (2, 2), 64), ((3, 3), (1, 1), 64))


def get_net(
    batch_size: int,
    num_actions: int = 18,
    image_shape: Sequence[int] = (4, 84, 84),
    dtype: str = "float32",
    layout: str = "NCHW",
) -> Function:
    """The DQN as a function of ``data`` and its parameters (``layout`` NCHW or NHWC)."""
    data = _var("data", (batch_size, *image_shape), dtype)
    channel_axis = layout.index("C")
    x: Expr = data
    for i, (kernel, stride, channels) in enumerate(CONVS, start=1):
        x = layers.conv2d(
            x,
            kernel_size=kernel,
            strides=stride,
            padding=(0, 0),
            channels=channels,
            name=f"conv{i}",
            data_layout=layout,
            kernel_layout=layers.conv_kernel_layout(layout),
        )
        x = nn.bias_add(x, _var(f"conv{i}_bias", (channels,), dtype), axis=channel_axis)
        x = nn.relu(x)
    flat = nn.batch_flatten(x)
    dense1 = nn.relu(layers.dense_add_bias(flat, units=512, name="dense1"))
    out = layers.dense_add_bias(dense1, units=num_actions, name="dense2")
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int = 1,
    num_actions: int = 18,
    image_shape: Sequence[int] = (4, 84, 84),
    dtype: str = "float32",
    layout: str = "NCHW",
) -> tuple[IRModule, dict[str, NDArray]]:
    """The DQN module and its generated parameters (see :func:`create_workload`)."""
    net = get_net(batch_size, num_actions, tuple(image_shape), dtype, layout)
    return create_workload(net)
