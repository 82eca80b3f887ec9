"""The DCGAN generator (Radford et al.), as TVM's ``relay.testing.dcgan``.

A random code of length ``random_len`` goes through ``dense`` (``dense_weight``,
``4*4*ngf*8`` units), ``relu`` and a reshape to ``(ngf*8, 4, 4)``; three
``deconv -> batch_norm(scale=False) -> relu`` stages (prefixes ``g2``, ``g3``,
``g4``) double the spatial size and halve the channels, a last transposed
convolution ``g5_deconv`` produces ``oshape`` and ``tanh`` squashes it.

>>> net = get_net(1, 100, (3, 64, 64), ngf=8)
>>> [p.name_hint for p in net.params][:3]
['data', 'dense_weight', 'g2_deconv_weight']
"""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Expr, Function
from relaykit.ir.module import IRModule
from relaykit.op import nn
from relaykit.op.tensor import tanh
from relaykit.op.transform import reshape
from relaykit.runtime.ndarray import NDArray

from . import layers
from .init import create_workload
from .layers import _var

__all__ = ["deconv2d", "deconv2d_bn_relu", "get_net", "get_workload"]


def deconv2d(
    data: Expr,
    ishape: Sequence[int],
    oshape: Sequence[int],
    kshape: Sequence[int],
    layout: str = "NCHW",
    name: str = "",
    stride: Sequence[int] = (2, 2),
) -> Expr:
    """A transposed convolution from ``ishape`` to ``oshape`` (channels first, no batch).

    Padding is ``(k - 1) // 2`` per side and the output padding makes the result
    exactly ``oshape``'s spatial size.
    """
    target = oshape[-2:]
    pad_y, pad_x = (kshape[0] - 1) // 2, (kshape[1] - 1) // 2
    adj_y = (target[0] + 2 * pad_y - kshape[0]) % stride[0]
    adj_x = (target[1] + 2 * pad_x - kshape[1]) % stride[1]
    kernel_layout = "IOHW" if layout == "NCHW" else "HWOI"
    return layers.conv2d_transpose(
        data,
        kernel_size=tuple(kshape),
        strides=tuple(stride),
        channels=int(oshape[0]),
        padding=(pad_y, pad_x),
        output_padding=(adj_y, adj_x),
        data_layout=layout,
        kernel_layout=kernel_layout,
        name=name,
    )


def deconv2d_bn_relu(data: Expr, prefix: str, layout: str = "NCHW", **kwargs: object) -> Expr:
    """``deconv2d -> batch_norm(scale=False) -> relu`` with names ``<prefix>_deconv`` and
    ``<prefix>_batch_norm``."""
    eps = 1e-5 + 1e-12
    net = deconv2d(data, name=f"{prefix}_deconv", layout=layout, **kwargs)  # type: ignore[arg-type]
    net = layers.batch_norm_infer(
        net, epsilon=eps, scale=False, axis=layout.index("C"), name=f"{prefix}_batch_norm"
    )
    return nn.relu(net)


def get_net(
    batch_size: int,
    random_len: int = 100,
    oshape: Sequence[int] = (3, 64, 64),
    ngf: int = 128,
    code: Expr | None = None,
    dtype: str = "float32",
) -> Function:
    """The DCGAN generator as a function of the code ``data`` and its parameters."""
    if code is None:
        code = _var("data", (batch_size, random_len), dtype)
    weight = _var("dense_weight", (4 * 4 * ngf * 8, random_len), dtype)
    x: Expr = nn.relu(nn.dense(code, weight, units=4 * 4 * ngf * 8))
    x = reshape(x, newshape=(-1, ngf * 8, 4, 4))
    shapes = [(ngf * 8, 4, 4), (ngf * 4, 8, 8), (ngf * 2, 16, 16), (ngf, 32, 32)]
    for i in range(3):
        x = deconv2d_bn_relu(
            x, ishape=shapes[i], oshape=shapes[i + 1], kshape=(4, 4), prefix=f"g{i + 2}"
        )
    x = deconv2d(x, ishape=shapes[3], oshape=tuple(oshape[-3:]), kshape=(4, 4), name="g5_deconv")
    out = tanh(x)
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int,
    oshape: Sequence[int] = (3, 64, 64),
    ngf: int = 128,
    random_len: int = 100,
    dtype: str = "float32",
) -> tuple[IRModule, dict[str, NDArray]]:
    """The DCGAN generator module and its generated parameters (see :func:`create_workload`)."""
    net = get_net(batch_size, random_len, tuple(oshape), ngf, dtype=dtype)
    return create_workload(net)
