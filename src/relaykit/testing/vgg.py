"""VGG 11/13/16/19, with or without batch norm, as TVM's ``relay.testing.vgg``.

Each convolution is ``conv2d(3x3, pad 1) -> bias_add [-> batch_norm] -> relu``
with parameters ``conv<i>_<j>_weight``, ``conv<i>_<j>_bias`` (and
``bn<i>_<j>_*``); each stage ends in a 2x2 max pool. The classifier is
``batch_flatten -> fc6 -> relu -> dropout -> fc7 -> relu -> dropout -> fc8``
and the network ends in ``softmax``.

>>> net = get_net(1, (3, 32, 32), 10, "float32", num_layers=11)
>>> [p.name_hint for p in net.params][:4]
['data', 'conv1_1_weight', 'conv1_1_bias', 'conv2_1_weight']
"""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.errors import IRError
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Expr, Function
from relaykit.ir.module import IRModule
from relaykit.op import nn
from relaykit.runtime.ndarray import NDArray

from . import layers as wrapper
from .init import create_workload
from .layers import _tensor_type, _var

__all__ = ["get_feature", "get_classifier", "get_net", "get_workload", "VGG_SPEC"]

#: convolutions per stage and channels per stage, by number of layers
VGG_SPEC: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {
    11: ((1, 1, 2, 2, 2), (64, 128, 256, 512, 512)),
    13: ((2, 2, 2, 2, 2), (64, 128, 256, 512, 512)),
    16: ((2, 2, 3, 3, 3), (64, 128, 256, 512, 512)),
    19: ((2, 2, 4, 4, 4), (64, 128, 256, 512, 512)),
}


def get_feature(
    internal_layer: Expr, layers: Sequence[int], filters: Sequence[int], batch_norm: bool = False
) -> Expr:
    """The VGG feature body: stacks of 3x3 convolutions, each stage ending in a max pool."""
    dtype = _tensor_type(internal_layer, "vgg").dtype
    for i, num in enumerate(layers):
        for j in range(num):
            internal_layer = wrapper.conv2d(
                data=internal_layer,
                kernel_size=(3, 3),
                padding=(1, 1),
                channels=filters[i],
                name=f"conv{i + 1}_{j + 1}",
            )
            bias = _var(f"conv{i + 1}_{j + 1}_bias", (filters[i],), dtype)
            internal_layer = nn.bias_add(internal_layer, bias)
            if batch_norm:
                internal_layer = wrapper.batch_norm_infer(
                    data=internal_layer, name=f"bn{i + 1}_{j + 1}"
                )
            internal_layer = nn.relu(internal_layer)
        internal_layer = nn.max_pool2d(internal_layer, pool_size=(2, 2), strides=(2, 2))
    return internal_layer


def get_classifier(input_data: Expr, num_classes: int) -> Expr:
    """The VGG classifier: three dense layers, the first two with relu and dropout."""
    flatten = nn.batch_flatten(input_data)
    fc6 = wrapper.dense_add_bias(data=flatten, units=4096, name="fc6")
    relu6 = nn.relu(fc6)
    drop6 = nn.dropout(relu6, rate=0.5)
    fc7 = wrapper.dense_add_bias(data=drop6, units=4096, name="fc7")
    relu7 = nn.relu(fc7)
    drop7 = nn.dropout(relu7, rate=0.5)
    return wrapper.dense_add_bias(data=drop7, units=num_classes, name="fc8")


def get_net(
    batch_size: int,
    image_shape: Sequence[int],
    num_classes: int,
    dtype: str,
    num_layers: int = 11,
    batch_norm: bool = False,
) -> Function:
    """The VGG network as a function of ``data`` and its parameters."""
    if num_layers not in VGG_SPEC:
        raise IRError(f"invalid num_layers {num_layers} for VGG; choices are 11, 13, 16, 19")
    layers, filters = VGG_SPEC[num_layers]
    data = _var("data", (batch_size, *image_shape), dtype)
    feature = get_feature(data, layers, filters, batch_norm)
    classifier = get_classifier(feature, num_classes)
    symbol = nn.softmax(classifier)
    return Function(free_vars(symbol), symbol)


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    image_shape: Sequence[int] = (3, 224, 224),
    dtype: str = "float32",
    num_layers: int = 11,
    batch_norm: bool = False,
) -> tuple[IRModule, dict[str, NDArray]]:
    """The VGG module and its generated parameters (see :func:`create_workload`).

    At the default 224x224 input, VGG's ``fc6_weight`` alone holds 102M floats;
    use a small ``image_shape`` such as ``(3, 32, 32)`` for quick experiments.
    """
    net = get_net(batch_size, tuple(image_shape), num_classes, dtype, num_layers, batch_norm)
    return create_workload(net)
