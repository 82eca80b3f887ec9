"""``tvm.relay.data_dep_optimization.bsr_conv2d``: convolutions with sparse weights to
``nn.sparse_conv2d`` (:mod:`relaykit.transform.conv2d_to_sparse`).

``convert(func, params, blocksize, sparsity_threshold, layout="NHWC")`` converts the 1x1
convolutions whose weights are parameters in ``params``; ``convert2(func, params,
blocksize, sparsity_threshold, layout, kernel_size)`` those of ``kernel_size`` (1 or 3)
whose weights are constants (``bind_params_by_name`` them first) or in ``params``. Both
return ``(new_func, new_params)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from relaykit.ir.expr import Function
from relaykit.transform.conv2d_to_sparse import conv2d_to_sparse

__all__ = ["convert", "convert2"]


def convert(
    func: Function,
    params: Mapping[str, Any],
    blocksize: Sequence[int] = (16, 1),
    sparsity_threshold: float = 0.85,
    layout: str = "NHWC",
) -> tuple[Function, dict[str, Any]]:
    """TVM's ``bsr_conv2d.convert``: 1x1 convolutions over weights in ``params``."""
    return conv2d_to_sparse(func, params, blocksize, sparsity_threshold, layout, 1)


def convert2(
    func: Function,
    params: Mapping[str, Any],
    blocksize: Sequence[int],
    sparsity_threshold: float,
    layout: str,
    kernel_size: int,
) -> tuple[Function, dict[str, Any]]:
    """TVM's ``bsr_conv2d.convert2``: ``kernel_size`` convolutions over constant weights
    (or weights in ``params``)."""
    return conv2d_to_sparse(func, params, blocksize, sparsity_threshold, layout, kernel_size)
