"""MobileNet v1, as TVM's ``relay.testing.mobilenet``.

``conv_block_1`` (3x3 stride-2 convolution, batch norm, relu), thirteen
``separable_conv_block_<i>`` (3x3 depthwise convolution with weight
``separable_conv_block_<i>_weight``, then ``_bn1``, relu, a 1x1 pointwise
convolution ``_conv2``, ``_bn2``, relu), then ``global_avg_pool2d ->
batch_flatten -> dense (fc_weight) -> bias_add (fc_bias) -> softmax``.

>>> net = mobile_net(num_classes=10, data_shape=(1, 3, 32, 32))
>>> [p.name_hint for p in net.params][:3]
['data', 'conv_block_1_conv_weight', 'conv_block_1_bn_gamma']
"""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.errors import IRError
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Expr, Function
from relaykit.ir.module import IRModule
from relaykit.op import nn
from relaykit.runtime.ndarray import NDArray

from . import layers
from .init import create_workload
from .layers import _tensor_type, _var

__all__ = ["conv_block", "separable_conv_block", "mobile_net", "get_workload"]


def conv_block(
    data: Expr,
    name: str,
    channels: int,
    kernel_size: tuple[int, int] = (3, 3),
    strides: tuple[int, int] = (1, 1),
    padding: tuple[int, int] = (1, 1),
    epsilon: float = 1e-5,
    layout: str = "NCHW",
) -> Expr:
    """``conv2d -> batch_norm -> relu`` with parameters ``<name>_conv_weight``, ``<name>_bn_*``.

    The batch norm normalises the channel axis of ``layout``. (TVM's version
    always uses axis 1, which for ``NHWC`` normalises over the height: a bug.
    Both agree for ``NCHW``.)
    """
    conv = layers.conv2d(
        data=data,
        channels=channels,
        kernel_size=kernel_size,
        strides=strides,
        padding=padding,
        data_layout=layout,
        kernel_layout=layers.conv_kernel_layout(layout),
        name=name + "_conv",
    )
    bn = layers.batch_norm_infer(
        data=conv, epsilon=epsilon, axis=layout.index("C"), name=name + "_bn"
    )
    return nn.relu(bn)


def separable_conv_block(
    data: Expr,
    name: str,
    depthwise_channels: int,
    pointwise_channels: int,
    kernel_size: tuple[int, int] = (3, 3),
    downsample: bool = False,
    padding: tuple[int, int] = (1, 1),
    epsilon: float = 1e-5,
    layout: str = "NCHW",
    dtype: str = "float32",
) -> Expr:
    """A depthwise 3x3 then a pointwise 1x1 convolution, each with batch norm and relu."""
    strides = (2, 2) if downsample else (1, 1)
    kernel_size = (int(kernel_size[0]), int(kernel_size[1]))
    if layout == "NCHW":
        wshape = (depthwise_channels, 1, *kernel_size)
    elif layout == "NHWC":
        wshape = (*kernel_size, depthwise_channels, 1)
    else:
        raise IRError(f"invalid layout {layout!r} for mobilenet; use NCHW or NHWC")
    bn_axis = layout.index("C")
    weight = _var(name + "_weight", wshape, dtype)
    conv1 = layers.conv2d(
        data=data,
        weight=weight,
        channels=depthwise_channels,
        groups=depthwise_channels,
        kernel_size=kernel_size,
        strides=strides,
        padding=padding,
        data_layout=layout,
        kernel_layout=layers.conv_kernel_layout(layout, True),
        name=name + "_depthwise_conv1",
    )
    bn1 = layers.batch_norm_infer(data=conv1, epsilon=epsilon, axis=bn_axis, name=name + "_bn1")
    act1 = nn.relu(bn1)
    conv2 = layers.conv2d(
        data=act1,
        channels=pointwise_channels,
        kernel_size=(1, 1),
        strides=(1, 1),
        padding=(0, 0),
        data_layout=layout,
        kernel_layout=layers.conv_kernel_layout(layout),
        name=name + "_conv2",
    )
    bn2 = layers.batch_norm_infer(data=conv2, epsilon=epsilon, axis=bn_axis, name=name + "_bn2")
    return nn.relu(bn2)


def mobile_net(
    num_classes: int = 1000,
    data_shape: Sequence[int] = (1, 3, 224, 224),
    dtype: str = "float32",
    alpha: float = 1.0,
    is_shallow: bool = False,
    layout: str = "NCHW",
) -> Function:
    """The MobileNet function; ``alpha`` scales every channel count."""

    def ch(n: int) -> int:
        return int(n * alpha)

    data = _var("data", tuple(data_shape), dtype)
    body = conv_block(data, "conv_block_1", ch(32), strides=(2, 2), layout=layout)
    # (depthwise channels, pointwise channels, downsample) of each separable block
    blocks = [
        (32, 64, False),
        (64, 128, True),
        (128, 128, False),
        (128, 256, True),
        (256, 256, False),
        (256, 512, True),
    ]
    if is_shallow:
        blocks += [(512, 1024, True), (1024, 1024, True)]
    else:
        blocks += [(512, 512, False)] * 5 + [(512, 1024, True), (1024, 1024, False)]
    for i, (dw, pw, down) in enumerate(blocks, start=1):
        body = separable_conv_block(
            body,
            f"separable_conv_block_{i}",
            ch(dw),
            ch(pw),
            downsample=down,
            layout=layout,
            dtype=dtype,
        )
    pool = nn.global_avg_pool2d(body, layout=layout)
    flatten = nn.batch_flatten(pool)
    in_features = _tensor_type(flatten, "mobilenet").shape[-1]
    weight = _var("fc_weight", (num_classes, in_features), dtype)
    bias = _var("fc_bias", (num_classes,), dtype)
    fc = nn.dense(flatten, weight, units=num_classes)
    fc = nn.bias_add(fc, bias)
    softmax = nn.softmax(fc)
    return Function(free_vars(softmax), softmax)


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    image_shape: Sequence[int] = (3, 224, 224),
    dtype: str = "float32",
    layout: str = "NCHW",
) -> tuple[IRModule, dict[str, NDArray]]:
    """The MobileNet module and its generated parameters (see :func:`create_workload`)."""
    data_shape = (batch_size, *image_shape)
    net = mobile_net(
        num_classes=num_classes,
        data_shape=data_shape,
        dtype=dtype,
        alpha=1.0,
        is_shallow=False,
        layout=layout,
    )
    return create_workload(net)
