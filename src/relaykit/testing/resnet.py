"""ResNet (pre-activation, "v2"), as TVM's ``relay.testing.resnet``.

The network normalises its input (``bn_data``, no scale), then has a stem
``conv0`` (3x3 for inputs of height <= 32; else 7x7 stride 2 followed by
``bn0``, relu and a 3x3 max pool), stages of residual units named
``stage<i>_unit<j>`` (``_bn1``, ``_conv1``, ...; the first unit of each stage
has a 1x1 projection shortcut ``_sc``), and ``bn1 -> relu -> global_avg_pool2d
-> batch_flatten -> fc1 -> softmax``. 18 and 34 layers use basic units, 50
and more bottleneck units.

>>> net = get_net(1, 10, num_layers=18, image_shape=(3, 32, 32))
>>> [p.name_hint for p in net.params][4:7]
['bn_data_moving_var', 'conv0_weight', 'stage1_unit1_bn1_gamma']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Expr, Function
from relaykit.ir.module import IRModule
from relaykit.op import add, nn
from relaykit.runtime.ndarray import NDArray

from . import layers
from .init import create_workload
from .layers import _var

__all__ = ["residual_unit", "resnet", "get_net", "get_workload"]


def residual_unit(
    data: Expr,
    num_filter: int,
    stride: tuple[int, int],
    dim_match: bool,
    name: str,
    bottle_neck: bool = True,
    data_layout: str = "NCHW",
    kernel_layout: str = "IOHW",
) -> Expr:
    """One pre-activation residual unit; ``dim_match=False`` adds the ``<name>_sc`` projection."""
    bn_axis = data_layout.index("C")
    bn1 = layers.batch_norm_infer(data=data, epsilon=2e-5, axis=bn_axis, name=name + "_bn1")
    act1 = nn.relu(bn1)
    if bottle_neck:
        conv1 = layers.conv2d(
            data=act1,
            channels=int(num_filter * 0.25),
            kernel_size=(1, 1),
            strides=stride,
            padding=(0, 0),
            name=name + "_conv1",
            data_layout=data_layout,
            kernel_layout=kernel_layout,
        )
        bn2 = layers.batch_norm_infer(data=conv1, epsilon=2e-5, axis=bn_axis, name=name + "_bn2")
        act2 = nn.relu(bn2)
        conv2 = layers.conv2d(
            data=act2,
            channels=int(num_filter * 0.25),
            kernel_size=(3, 3),
            strides=(1, 1),
            padding=(1, 1),
            name=name + "_conv2",
            data_layout=data_layout,
            kernel_layout=kernel_layout,
        )
        bn3 = layers.batch_norm_infer(data=conv2, epsilon=2e-5, axis=bn_axis, name=name + "_bn3")
        act3 = nn.relu(bn3)
        body = layers.conv2d(
            data=act3,
            channels=num_filter,
            kernel_size=(1, 1),
            strides=(1, 1),
            padding=(0, 0),
            name=name + "_conv3",
            data_layout=data_layout,
            kernel_layout=kernel_layout,
        )
    else:
        conv1 = layers.conv2d(
            data=act1,
            channels=num_filter,
            kernel_size=(3, 3),
            strides=stride,
            padding=(1, 1),
            name=name + "_conv1",
            data_layout=data_layout,
            kernel_layout=kernel_layout,
        )
        bn2 = layers.batch_norm_infer(data=conv1, epsilon=2e-5, axis=bn_axis, name=name + "_bn2")
        act2 = nn.relu(bn2)
        body = layers.conv2d(
            data=act2,
            channels=num_filter,
            kernel_size=(3, 3),
            strides=(1, 1),
            padding=(1, 1),
            name=name + "_conv2",
            data_layout=data_layout,
            kernel_layout=kernel_layout,
        )
    if dim_match:
        shortcut = data
    else:
        shortcut = layers.conv2d(
            data=act1,
            channels=num_filter,
            kernel_size=(1, 1),
            strides=stride,
            name=name + "_sc",
            data_layout=data_layout,
            kernel_layout=kernel_layout,
        )
    return add(body, shortcut)


def resnet(
    units: Sequence[int],
    num_stages: int,
    filter_list: Sequence[int],
    num_classes: int,
    data_shape: Sequence[int],
    bottle_neck: bool = True,
    layout: str = "NCHW",
    dtype: str = "float32",
) -> Function:
    """The ResNet function for the given units per stage and channels per stage."""
    if layout not in ("NCHW", "NHWC"):
        raise IRError(f"resnet supports layouts NCHW and NHWC, not {layout!r}")
    if len(units) != num_stages or len(filter_list) != num_stages + 1:
        raise IRError(
            f"resnet needs {num_stages} unit counts and {num_stages + 1} filter sizes, got "
            f"{list(units)} and {list(filter_list)}"
        )
    data_layout = layout
    kernel_layout = "OIHW" if layout == "NCHW" else "HWIO"
    bn_axis = data_layout.index("C")
    height = data_shape[data_layout.index("H")]

    data: Expr = _var("data", data_shape, dtype)
    data = layers.batch_norm_infer(
        data=data, epsilon=2e-5, axis=bn_axis, scale=False, name="bn_data"
    )
    if height <= 32:  # such as cifar10
        body = layers.conv2d(
            data=data,
            channels=filter_list[0],
            kernel_size=(3, 3),
            strides=(1, 1),
            padding=(1, 1),
            name="conv0",
            data_layout=data_layout,
            kernel_layout=kernel_layout,
        )
    else:  # often expected to be 224 such as imagenet
        body = layers.conv2d(
            data=data,
            channels=filter_list[0],
            kernel_size=(7, 7),
            strides=(2, 2),
            padding=(3, 3),
            name="conv0",
            data_layout=data_layout,
            kernel_layout=kernel_layout,
        )
        body = layers.batch_norm_infer(data=body, epsilon=2e-5, axis=bn_axis, name="bn0")
        body = nn.relu(body)
        body = nn.max_pool2d(
            body, pool_size=(3, 3), strides=(2, 2), padding=(1, 1), layout=data_layout
        )

    for i in range(num_stages):
        step = 1 if i == 0 else 2
        body = residual_unit(
            body,
            filter_list[i + 1],
            (step, step),
            False,
            name=f"stage{i + 1}_unit1",
            bottle_neck=bottle_neck,
            data_layout=data_layout,
            kernel_layout=kernel_layout,
        )
        for j in range(units[i] - 1):
            body = residual_unit(
                body,
                filter_list[i + 1],
                (1, 1),
                True,
                name=f"stage{i + 1}_unit{j + 2}",
                bottle_neck=bottle_neck,
                data_layout=data_layout,
                kernel_layout=kernel_layout,
            )
    bn1 = layers.batch_norm_infer(data=body, epsilon=2e-5, axis=bn_axis, name="bn1")
    relu1 = nn.relu(bn1)
    pool1 = nn.global_avg_pool2d(relu1, layout=data_layout)
    flat = nn.batch_flatten(pool1)
    fc1 = layers.dense_add_bias(data=flat, units=num_classes, name="fc1")
    net = nn.softmax(fc1)
    return Function(free_vars(net), net)


_IMAGENET_UNITS = {
    18: [2, 2, 2, 2],
    34: [3, 4, 6, 3],
    50: [3, 4, 6, 3],
    101: [3, 4, 23, 3],
    152: [3, 8, 36, 3],
    200: [3, 24, 36, 3],
    269: [3, 30, 48, 8],
}


def get_net(
    batch_size: int,
    num_classes: int,
    num_layers: int = 50,
    image_shape: Sequence[int] = (3, 224, 224),
    layout: str = "NCHW",
    dtype: str = "float32",
    **kwargs: Any,
) -> Function:
    """The ResNet of ``num_layers`` for ``image_shape`` (CIFAR-style when height <= 28)."""
    image_shape = tuple(image_shape)
    height = image_shape[0] if layout == "NHWC" else image_shape[1]
    data_shape = (batch_size, *image_shape)
    if height <= 28:
        num_stages = 3
        if (num_layers - 2) % 9 == 0 and num_layers >= 164:
            per_unit = [(num_layers - 2) // 9]
            filter_list = [16, 64, 128, 256]
            bottle_neck = True
        elif (num_layers - 2) % 6 == 0 and num_layers < 164:
            per_unit = [(num_layers - 2) // 6]
            filter_list = [16, 16, 32, 64]
            bottle_neck = False
        else:
            raise IRError(
                f"no resnet with {num_layers} layers for {height}-pixel inputs: use 6n+2 "
                "(below 164) or 9n+2 (164 and above)"
            )
        units = per_unit * num_stages
    else:
        if num_layers not in _IMAGENET_UNITS:
            raise IRError(
                f"no resnet with {num_layers} layers; choices are "
                f"{', '.join(map(str, _IMAGENET_UNITS))}"
            )
        if num_layers >= 50:
            filter_list = [64, 256, 512, 1024, 2048]
            bottle_neck = True
        else:
            filter_list = [64, 64, 128, 256, 512]
            bottle_neck = False
        num_stages = 4
        units = _IMAGENET_UNITS[num_layers]
    return resnet(
        units=units,
        num_stages=num_stages,
        filter_list=filter_list,
        num_classes=num_classes,
        data_shape=data_shape,
        bottle_neck=bottle_neck,
        layout=layout,
        dtype=dtype,
    )


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    num_layers: int = 18,
    image_shape: Sequence[int] = (3, 224, 224),
    layout: str = "NCHW",
    dtype: str = "float32",
    **kwargs: Any,
) -> tuple[IRModule, dict[str, NDArray]]:
    """The ResNet module and its generated parameters (see :func:`create_workload`)."""
    net = get_net(
        batch_size=batch_size,
        num_classes=num_classes,
        num_layers=num_layers,
        image_shape=image_shape,
        dtype=dtype,
        layout=layout,
        **kwargs,
    )
    return create_workload(net)
