"""A small synthetic network, as TVM's ``relay.testing.synthetic``: two rounds of
``dense``/``conv2d`` branches (``relu``, ``softmax``) joined by ``add``, with a
``bias_add`` and an inference batch norm between them; parameters are constants
(``Constant`` initializer), as TVM's.

>>> mod, params = get_workload()
>>> [p.name_hint for p in mod["main"].params][:3]
['data', 'dense_weight', 'conv_weight']
>>> params["conv_weight"].shape
(3, 3, 3, 3)
"""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Expr, Function
from relaykit.ir.module import IRModule
from relaykit.op import add, nn, reshape, reshape_like
from relaykit.runtime.ndarray import NDArray

from .init import Constant, create_workload
from .layers import _var, batch_norm_infer

__all__ = ["get_net", "get_workload"]


def _round(data: Expr, shape: Sequence[int], wtype: str, dense_name: str, conv_name: str) -> Expr:
    dense_shape = [-1, shape[3]]
    dense = nn.relu(
        nn.dense(reshape(data, dense_shape), _var(dense_name, (shape[3], shape[3]), wtype))
    )
    conv_shape = (shape[1], shape[1], 3, 3)
    conv = nn.softmax(
        nn.conv2d(data, _var(conv_name, conv_shape, wtype), padding=(1, 1), kernel_size=(3, 3))
    )
    return add(reshape_like(dense, data), conv)


def get_net(
    input_shape: Sequence[int] = (1, 3, 24, 12), dtype: str = "float32", wtype: str | None = None
) -> Function:
    """The network as a function of ``data`` and its parameters."""
    wtype = wtype or dtype
    shape = tuple(int(d) for d in input_shape)
    data = _var("data", shape, dtype)
    added = _round(data, shape, wtype, "dense_weight", "conv_weight")
    biased = batch_norm_infer(
        nn.bias_add(added, _var("bias", (shape[1],), wtype)), name="batch_norm"
    )
    out = _round(biased, shape, wtype, "dense2_weight", "conv2_weight")
    return Function(free_vars(out), out)


def get_workload(
    input_shape: Sequence[int] = (1, 3, 24, 12), dtype: str = "float32", wtype: str | None = None
) -> tuple[IRModule, dict[str, NDArray]]:
    """``(mod, params)`` of :func:`get_net`, parameters set by ``Constant()``."""
    return create_workload(get_net(input_shape, dtype, wtype), initializer=Constant())
