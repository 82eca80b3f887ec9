"""A multilayer perceptron, as TVM's ``relay.testing.mlp``.

``batch_flatten -> (dense -> bias_add -> relu) x 2 -> dense -> bias_add -> softmax``
with 128 and 64 hidden units, parameters ``fc1_weight, fc1_bias, ... fc3_bias``.

>>> mod, params = get_workload(batch_size=1)
>>> [p.name_hint for p in mod["main"].params][:3]
['data', 'fc1_weight', 'fc1_bias']
>>> params["fc1_weight"].shape
(128, 784)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Function
from relaykit.ir.module import IRModule
from relaykit.op import nn
from relaykit.runtime.ndarray import NDArray

from .init import create_workload
from .layers import _var

__all__ = ["get_net", "get_workload"]


def get_net(
    batch_size: int,
    num_classes: int = 10,
    image_shape: Sequence[int] = (1, 28, 28),
    dtype: str = "float32",
) -> Function:
    """The MLP as a function of ``data`` and its parameters."""
    data_shape = (batch_size, *image_shape)
    in_features = int(np.prod(image_shape))
    data = _var("data", data_shape, dtype)
    out = nn.batch_flatten(data)
    hidden = [(128, in_features), (64, 128), (num_classes, 64)]
    for i, (units, fan_in) in enumerate(hidden, start=1):
        weight = _var(f"fc{i}_weight", (units, fan_in), dtype)
        bias = _var(f"fc{i}_bias", (units,), dtype)
        out = nn.dense(out, weight, units=units)
        out = nn.bias_add(out, bias, axis=-1)
        if i < len(hidden):
            out = nn.relu(out)
    out = nn.softmax(out)
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int = 1,
    num_classes: int = 10,
    image_shape: Sequence[int] = (1, 28, 28),
    dtype: str = "float32",
) -> tuple[IRModule, dict[str, NDArray]]:
    """The MLP module and its generated parameters (see :func:`create_workload`)."""
    return create_workload(get_net(batch_size, num_classes, tuple(image_shape), dtype))
