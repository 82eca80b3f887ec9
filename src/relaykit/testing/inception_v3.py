"""Inception V3, as TVM's ``relay.testing.inception_v3``.

Every convolution is a ``conv_bn_relu`` unit: ``conv2d`` (weight
``<name><suffix>_conv1_weight``), ``batch_norm`` with ``epsilon=2e-5`` and no
learned scale (parameters ``<name><suffix>_bn_*``), then ``relu``. The stem is
five such units and two 3x3 max pools; then come three ``mixed`` A blocks, one B
block (``mixed_3``), four C blocks (``mixed_4`` .. ``mixed_7``), one D block
(``mixed_8``) and two E blocks (``mixed_9``, ``mixed_10``); an 8x8 average pool,
``batch_flatten``, ``dense`` (``fc1_weight``) + ``bias_add`` (``fc2_bias``, the
name TVM's workload uses) and ``softmax`` close the network. The input is
``(3, 299, 299)`` by default.

>>> net = get_net(1, 10, (3, 299, 299), "float32")
>>> [p.name_hint for p in net.params][:3]
['data', 'conv_conv1_weight', 'conv_bn_gamma']
"""

from __future__ import annotations

from collections.abc import Sequence

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

Pair = tuple[int, int]


def conv_bn_relu(
    data: Expr,
    channels: int,
    kernel: Pair = (1, 1),
    stride: Pair = (1, 1),
    pad: Pair = (0, 0),
    name: str = "",
    suffix: str = "",
) -> Expr:
    """``conv2d -> batch_norm(scale=False, epsilon=2e-5) -> relu``."""
    conv = layers.conv2d(
        data=data,
        channels=int(channels),
        kernel_size=kernel,
        strides=stride,
        padding=pad,
        name=f"{name}{suffix}_conv1",
    )
    bn = layers.batch_norm_infer(data=conv, epsilon=2e-5, scale=False, name=f"{name}{suffix}_bn")
    return nn.relu(bn)


def pool(data: Expr, kernel: Pair, stride: Pair, pad: Pair, pool_type: str) -> Expr:
    """A max pool, or an average pool that counts the padding."""
    if pool_type == "max":
        return nn.max_pool2d(data, pool_size=kernel, strides=stride, padding=pad)
    return nn.avg_pool2d(
        data, pool_size=kernel, strides=stride, padding=pad, count_include_pad=True
    )


def _cat(parts: Sequence[Expr]) -> Expr:
    return concatenate(list(parts), axis=1)


def block_a(data: Expr, c: Sequence[int], pool_type: str, proj: int, name: str) -> Expr:
    """1x1 | 1x1->5x5 | 1x1->3x3->3x3 | pool->1x1.

    ``c`` = (1x1, 3x3 reduce, 3x3, 3x3, 5x5 reduce, 5x5) channels.
    """
    n1, n3r, n31, n32, n5r, n5 = c
    t1 = conv_bn_relu(data, n1, name=f"{name}_conv")
    t5 = conv_bn_relu(data, n5r, name=f"{name}_tower", suffix="_conv")
    t5 = conv_bn_relu(t5, n5, (5, 5), pad=(2, 2), name=f"{name}_tower", suffix="_conv_1")
    t3 = conv_bn_relu(data, n3r, name=f"{name}_tower_1", suffix="_conv")
    t3 = conv_bn_relu(t3, n31, (3, 3), pad=(1, 1), name=f"{name}_tower_1", suffix="_conv_1")
    t3 = conv_bn_relu(t3, n32, (3, 3), pad=(1, 1), name=f"{name}_tower_1", suffix="_conv_2")
    p = pool(data, (3, 3), (1, 1), (1, 1), pool_type)
    cp = conv_bn_relu(p, proj, name=f"{name}_tower_2", suffix="_conv")
    return _cat([t1, t5, t3, cp])


def block_b(data: Expr, c: Sequence[int], name: str) -> Expr:
    """Grid reduction: stride-2 3x3 | 1x1->3x3->stride-2 3x3 | stride-2 max pool."""
    n3, nd_r, nd1, nd2 = c
    t3 = conv_bn_relu(data, n3, (3, 3), (2, 2), name=f"{name}_conv")
    td = conv_bn_relu(data, nd_r, name=f"{name}_tower", suffix="_conv")
    td = conv_bn_relu(td, nd1, (3, 3), pad=(1, 1), name=f"{name}_tower", suffix="_conv_1")
    td = conv_bn_relu(td, nd2, (3, 3), (2, 2), name=f"{name}_tower", suffix="_conv_2")
    p = pool(data, (3, 3), (2, 2), (0, 0), "max")
    return _cat([t3, td, p])


def block_c(data: Expr, c: Sequence[int], pool_type: str, proj: int, name: str) -> Expr:
    """Factorised 7x7: 1x1 | 1x7->7x1 | 7x1->1x7->7x1->1x7 | pool->1x1."""
    n1, d7r, d71, d72, q7r, q71, q72, q73, q74 = c
    row, col = ((1, 7), (0, 3)), ((7, 1), (3, 0))
    t1 = conv_bn_relu(data, n1, name=f"{name}_conv")
    td = conv_bn_relu(data, d7r, name=f"{name}_tower", suffix="_conv")
    td = conv_bn_relu(td, d71, row[0], pad=row[1], name=f"{name}_tower", suffix="_conv_1")
    td = conv_bn_relu(td, d72, col[0], pad=col[1], name=f"{name}_tower", suffix="_conv_2")
    tq = conv_bn_relu(data, q7r, name=f"{name}_tower_1", suffix="_conv")
    steps = zip((q71, q72, q73, q74), (col, row, col, row), strict=True)
    for i, (n, shape) in enumerate(steps, start=1):
        tq = conv_bn_relu(
            tq, n, shape[0], pad=shape[1], name=f"{name}_tower_1", suffix=f"_conv_{i}"
        )
    p = pool(data, (3, 3), (1, 1), (1, 1), pool_type)
    cp = conv_bn_relu(p, proj, name=f"{name}_tower_2", suffix="_conv")
    return _cat([t1, td, tq, cp])


def block_d(data: Expr, c: Sequence[int], pool_type: str, name: str) -> Expr:
    """Grid reduction: 1x1->stride-2 3x3 | 1x1->1x7->7x1->stride-2 3x3 | stride-2 pool."""
    n3r, n3, d7r, d71, d72, d73 = c
    t3 = conv_bn_relu(data, n3r, name=f"{name}_tower", suffix="_conv")
    t3 = conv_bn_relu(t3, n3, (3, 3), (2, 2), name=f"{name}_tower", suffix="_conv_1")
    td = conv_bn_relu(data, d7r, name=f"{name}_tower_1", suffix="_conv")
    td = conv_bn_relu(td, d71, (1, 7), pad=(0, 3), name=f"{name}_tower_1", suffix="_conv_1")
    td = conv_bn_relu(td, d72, (7, 1), pad=(3, 0), name=f"{name}_tower_1", suffix="_conv_2")
    td = conv_bn_relu(td, d73, (3, 3), (2, 2), name=f"{name}_tower_1", suffix="_conv_3")
    p = pool(data, (3, 3), (2, 2), (0, 0), pool_type)
    return _cat([t3, td, p])


def block_e(data: Expr, c: Sequence[int], pool_type: str, proj: int, name: str) -> Expr:
    """Expanded filter bank: 1x1 | 1x1->(1x3, 3x1) | 1x1->3x3->(1x3, 3x1) | pool->1x1."""
    n1, d3r, d31, d32, q3r, q3, q31, q32 = c
    t1 = conv_bn_relu(data, n1, name=f"{name}_conv")
    td = conv_bn_relu(data, d3r, name=f"{name}_tower", suffix="_conv")
    td_a = conv_bn_relu(td, d31, (1, 3), pad=(0, 1), name=f"{name}_tower", suffix="_mixed_conv")
    td_b = conv_bn_relu(td, d32, (3, 1), pad=(1, 0), name=f"{name}_tower", suffix="_mixed_conv_1")
    tq = conv_bn_relu(data, q3r, name=f"{name}_tower_1", suffix="_conv")
    tq = conv_bn_relu(tq, q3, (3, 3), pad=(1, 1), name=f"{name}_tower_1", suffix="_conv_1")
    tq_a = conv_bn_relu(tq, q31, (1, 3), pad=(0, 1), name=f"{name}_tower_1", suffix="_mixed_conv")
    tq_b = conv_bn_relu(tq, q32, (3, 1), pad=(1, 0), name=f"{name}_tower_1", suffix="_mixed_conv_1")
    p = pool(data, (3, 3), (1, 1), (1, 1), pool_type)
    cp = conv_bn_relu(p, proj, name=f"{name}_tower_2", suffix="_conv")
    return _cat([t1, td_a, td_b, tq_a, tq_b, cp])


def get_net(batch_size: int, num_classes: int, image_shape: Sequence[int], dtype: str) -> Function:
    """The Inception V3 network as a function of ``data`` and its parameters."""
    data = _var("data", (batch_size, *image_shape), dtype)
    x = conv_bn_relu(data, 32, (3, 3), (2, 2), name="conv")
    x = conv_bn_relu(x, 32, (3, 3), name="conv_1")
    x = conv_bn_relu(x, 64, (3, 3), pad=(1, 1), name="conv_2")
    x = pool(x, (3, 3), (2, 2), (0, 0), "max")
    x = conv_bn_relu(x, 80, name="conv_3")
    x = conv_bn_relu(x, 192, (3, 3), name="conv_4")
    x = pool(x, (3, 3), (2, 2), (0, 0), "max")
    x = block_a(x, (64, 64, 96, 96, 48, 64), "avg", 32, "mixed")
    x = block_a(x, (64, 64, 96, 96, 48, 64), "avg", 64, "mixed_1")
    x = block_a(x, (64, 64, 96, 96, 48, 64), "avg", 64, "mixed_2")
    x = block_b(x, (384, 64, 96, 96), "mixed_3")
    for i, width in zip(range(4, 8), (128, 160, 160, 192), strict=True):
        spec = (192, width, width, 192, width, width, width, width, 192)
        x = block_c(x, spec, "avg", 192, f"mixed_{i}")
    x = block_d(x, (192, 320, 192, 192, 192, 192), "max", "mixed_8")
    x = block_e(x, (320, 384, 384, 384, 448, 384, 384, 384), "avg", 192, "mixed_9")
    x = block_e(x, (320, 384, 384, 384, 448, 384, 384, 384), "max", 192, "mixed_10")
    x = pool(x, (8, 8), (1, 1), (0, 0), "avg")
    flat = nn.batch_flatten(x)
    features = _tensor_type(flat, "inception_v3").shape[-1]
    fc = nn.dense(flat, _var("fc1_weight", (num_classes, features), dtype), units=num_classes)
    fc = nn.bias_add(fc, _var("fc2_bias", (num_classes,), dtype), axis=-1)
    out = nn.softmax(fc)
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    image_shape: Sequence[int] = (3, 299, 299),
    dtype: str = "float32",
) -> tuple[IRModule, dict[str, NDArray]]:
    """The Inception V3 module and its generated parameters (see :func:`create_workload`)."""
    net = get_net(batch_size, num_classes, tuple(image_shape), dtype)
    return create_workload(net)
