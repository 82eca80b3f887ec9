"""``tvm.relay.data_dep_optimization.bsr_dense``: dense layers with sparse weights to
``nn.sparse_dense`` (:mod:`relaykit.transform.dense_to_sparse`).

``convert(func, params, blocksize, sparsity_threshold)`` returns ``(new_func, new_params)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from relaykit.ir.expr import Function
from relaykit.transform.dense_to_sparse import dense_to_sparse

__all__ = ["convert"]


def convert(
    func: Function,
    params: Mapping[str, Any],
    blocksize: Sequence[int] = (16, 1),
    sparsity_threshold: float = 0.85,
) -> tuple[Function, dict[str, Any]]:
    """TVM's ``bsr_dense.convert``: dense layers over weights in ``params``."""
    return dense_to_sparse(func, params, blocksize, sparsity_threshold)
