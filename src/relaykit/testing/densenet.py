"""DenseNet 121/161/169/201, as TVM's ``relay.testing.densenet``.

The stem is a 7x7 stride-2 convolution (``conv1``), batch norm (``batch1``),
``relu`` and a 3x3 stride-2 max pool. Each dense block chains ``num_layers``
bottleneck layers (``batch_1_<b>_<l>`` -> relu -> 1x1 ``conv2d_1_<b>_<l>`` ->
``batch_2_<b>_<l>`` -> relu -> 3x3 ``conv2d_2_<b>_<l>``) and concatenates their
outputs; transitions (``batch_t_<b>`` -> relu -> 1x1 ``conv_t_<b>`` -> 2x2 average
pool) halve the features between blocks. The head is ``batch2`` -> relu -> 7x7
average pool -> ``batch_flatten`` -> ``dense``.

As in TVM's workload, each layer of a block reads the previous layer's output
(not the running concatenation).

>>> net = get_net(121, 10, 1, (3, 224, 224), "float32")
>>> [p.name_hint for p in net.params][:3]
['data', 'conv1_weight', 'batch1_gamma']
"""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.errors import IRError
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Expr, Function
from relaykit.ir.module import IRModule
from relaykit.op import nn
from relaykit.op.transform import concatenate
from relaykit.runtime.ndarray import NDArray

from . import layers
from .init import create_workload
from .layers import _var

__all__ = ["SPECS", "get_net", "get_workload"]

#: densenet size -> (initial features, growth rate, layers per block)
SPECS: dict[int, tuple[int, int, tuple[int, ...]]] = {
    121: (64, 32, (6, 12, 24, 16)),
    161: (96, 48, (6, 12, 36, 24)),
    169: (64, 32, (6, 12, 32, 32)),
    201: (64, 32, (6, 12, 48, 32)),
}


def _bn_relu(data: Expr, name: str) -> Expr:
    return nn.relu(layers.batch_norm_infer(data, name=name))


def dense_layer(data: Expr, growth_rate: int, bn_size: int, index: str) -> Expr:
    """One bottleneck layer: bn-relu-1x1 conv, bn-relu-3x3 conv."""
    x = _bn_relu(data, f"batch_1_{index}")
    x = layers.conv2d(
        x, channels=bn_size * growth_rate, kernel_size=(1, 1), name=f"conv2d_1_{index}"
    )
    x = _bn_relu(x, f"batch_2_{index}")
    return layers.conv2d(
        x, channels=growth_rate, kernel_size=(3, 3), padding=(1, 1), name=f"conv2d_2_{index}"
    )


def dense_block(data: Expr, num_layers: int, bn_size: int, growth_rate: int, index: int) -> Expr:
    """``num_layers`` chained bottleneck layers, their outputs concatenated on channels."""
    outputs = []
    x = data
    for i in range(num_layers):
        x = dense_layer(x, growth_rate, bn_size, f"{index}_{i}")
        outputs.append(x)
    return concatenate(outputs, axis=1)


def transition(data: Expr, num_output_features: int, index: int) -> Expr:
    """bn-relu-1x1 conv to ``num_output_features``, then a 2x2 stride-2 average pool."""
    x = _bn_relu(data, f"batch_t_{index}")
    x = layers.conv2d(x, channels=num_output_features, kernel_size=(1, 1), name=f"conv_t_{index}")
    return nn.avg_pool2d(x, pool_size=(2, 2), strides=(2, 2))


def get_net(
    densenet_size: int,
    classes: int,
    batch_size: int,
    image_shape: Sequence[int],
    dtype: str,
    bn_size: int = 4,
) -> Function:
    """The DenseNet of ``densenet_size`` layers as a function of ``data`` and its parameters."""
    if densenet_size not in SPECS:
        raise IRError(f"invalid densenet_size {densenet_size}; choices are {sorted(SPECS)}")
    init_features, growth_rate, block_config = SPECS[densenet_size]
    data = _var("data", (batch_size, *image_shape), dtype)
    x = layers.conv2d(
        data,
        channels=init_features,
        kernel_size=(7, 7),
        strides=(2, 2),
        padding=(3, 3),
        name="conv1",
    )
    x = _bn_relu(x, "batch1")
    x = nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    features = init_features
    for i, num_layers in enumerate(block_config):
        x = dense_block(x, num_layers, bn_size, growth_rate, i)
        features += num_layers * growth_rate
        if i != len(block_config) - 1:
            features //= 2
            x = transition(x, features, i)
    x = _bn_relu(x, "batch2")
    x = nn.batch_flatten(nn.avg_pool2d(x, pool_size=(7, 7)))
    out = layers.dense_add_bias(x, units=classes, name="dense")
    return Function(free_vars(out), out)


def get_workload(
    densenet_size: int = 121,
    classes: int = 1000,
    batch_size: int = 4,
    image_shape: Sequence[int] = (3, 224, 224),
    dtype: str = "float32",
) -> tuple[IRModule, dict[str, NDArray]]:
    """The DenseNet module and its generated parameters (see :func:`create_workload`)."""
    net = get_net(densenet_size, classes, batch_size, tuple(image_shape), dtype)
    return create_workload(net)
