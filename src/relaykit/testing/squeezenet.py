"""SqueezeNet 1.0 and 1.1, as TVM's ``relay.testing.squeezenet``.

Each fire module ``fire<i>`` is a 1x1 squeeze convolution (``fire<i>_input``)
feeding a 1x1 (``fire<i>_left``) and a 3x3 (``fire<i>_right``) expand
convolution whose outputs are concatenated; every convolution is followed by
``bias_add`` (``<name>_conv_bias``) and ``relu``. Version 1.0 starts with a 7x7
convolution of 96 channels, 1.1 with a 3x3 one of 64; both end in ``dropout``,
a 1x1 ``conv_final``, global average pooling, ``batch_flatten`` and ``softmax``.

>>> net = get_net(1, (3, 64, 64), 10, "1.1", "float32")
>>> [p.name_hint for p in net.params][:3]
['data', 'conv1_weight', 'conv1_bias']
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
from .layers import _tensor_type, _var

__all__ = ["get_net", "get_workload"]

#: (squeeze, expand 1x1, expand 3x3) per fire module; None marks a 3x3 max pool
FIRES: dict[str, list[tuple[int, int, int] | None]] = {
    "1.0": [(16, 64, 64), (16, 64, 64), (32, 128, 128), None, (32, 128, 128), (48, 192, 192),
            (48, 192, 192), (64, 256, 256), None, (64, 256, 256)],
    "1.1": [(16, 64, 64), (16, 64, 64), None, (32, 128, 128), (32, 128, 128), None,
            (48, 192, 192), (48, 192, 192), (64, 256, 256), (64, 256, 256)],
}  # fmt: skip


def _conv_bias_relu(
    net: Expr, channels: int, kernel: int, padding: int, name: str, strides: int = 1
) -> Expr:
    net = layers.conv2d(
        net,
        channels=channels,
        kernel_size=(kernel, kernel),
        strides=(strides, strides),
        padding=(padding, padding),
        name=name,
    )
    net = nn.bias_add(net, _var(f"{name}_bias", (channels,), _tensor_type(net, "squeezenet").dtype))
    return nn.relu(net)


def fire(net: Expr, squeeze: int, expand1x1: int, expand3x3: int, prefix: str) -> Expr:
    """One fire module: squeeze, then the concatenated 1x1 and 3x3 expansions."""
    net = _conv_bias_relu(net, squeeze, 1, 0, f"{prefix}_input_conv")
    left = _conv_bias_relu(net, expand1x1, 1, 0, f"{prefix}_left_conv")
    right = _conv_bias_relu(net, expand3x3, 3, 1, f"{prefix}_right_conv")
    return concatenate([left, right], axis=1)


def get_net(
    batch_size: int, image_shape: Sequence[int], num_classes: int, version: str, dtype: str
) -> Function:
    """The SqueezeNet network of ``version`` ("1.0" or "1.1")."""
    if version not in FIRES:
        raise IRError(f"unknown SqueezeNet version {version!r}; choices are '1.0' and '1.1'")
    net: Expr = _var("data", (batch_size, *image_shape), dtype)
    if version == "1.0":
        net = _conv_bias_relu(net, 96, 7, 3, "conv1", strides=2)
    else:
        net = _conv_bias_relu(net, 64, 3, 1, "conv1", strides=2)
    net = nn.max_pool2d(net, pool_size=(3, 3), strides=(2, 2))
    index = 1
    for spec in FIRES[version]:
        if spec is None:
            net = nn.max_pool2d(net, pool_size=(3, 3), strides=(2, 2))
            continue
        net = fire(net, *spec, prefix=f"fire{index}")
        index += 1
    net = nn.dropout(net, rate=0.5)
    net = _conv_bias_relu(net, num_classes, 1, 0, "conv_final")
    net = nn.batch_flatten(nn.global_avg_pool2d(net))
    out = nn.softmax(net)
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    version: str = "1.0",
    image_shape: Sequence[int] = (3, 224, 224),
    dtype: str = "float32",
) -> tuple[IRModule, dict[str, NDArray]]:
    """The SqueezeNet module and its generated parameters (see :func:`create_workload`)."""
    net = get_net(batch_size, tuple(image_shape), num_classes, version, dtype)
    return create_workload(net)
