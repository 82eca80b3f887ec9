"""Dense layers with mostly-zero weights to ``nn.sparse_dense`` (TVM's ``DenseToSparse``
and ``relay.data_dep_optimization.bsr_dense.convert``).

An ``nn.dense`` whose weight is a parameter given in ``params`` (or a constant) with at
least ``sparsity_threshold`` of it zero, and whose ``(units, K)`` weight divides into
``blocksize`` blocks, becomes ``nn.sparse_dense`` over the weight as a BSR matrix: three
new parameters ``<name>.data``, ``<name>.indices``, ``<name>.indptr`` (three constants
for a constant weight).

>>> import numpy as np
>>> from relaykit import relay
>>> x, w = relay.var("x", shape=(2, 4)), relay.var("w", shape=(8, 4))
>>> wd = np.zeros((8, 4), "float32"); wd[:4, 1] = 1.0
>>> fn = relay.Function([x, w], relay.nn.dense(x, w))
>>> new, params = dense_to_sparse(fn, {"w": wd}, (4, 1), 0.5)
>>> new.body.op.name, sorted(params)
('nn.sparse_dense', ['w.data', 'w.indices', 'w.indptr'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from relaykit.ir.expr import Call, Expr, Function
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType
from relaykit.op.nn.sparse import sparse_dense

from .conv2d_to_sparse import _finish, _Sparsifier
from .infer_type import infer_type

__all__ = ["dense_to_sparse"]


class _DenseSparsifier(_Sparsifier):
    def rewrite(self, new: Expr, old: Expr) -> Expr | None:
        if not (isinstance(old, Call) and isinstance(old.op, Op) and old.op.name == "nn.dense"):
            return None
        out = old.checked_type
        dtype = old.attrs.out_dtype
        if not isinstance(out, TensorType) or (dtype and dtype != out.dtype):
            return None
        if len(old.args[0].checked_type.shape) != 2:  # type: ignore[attr-defined]
            return None
        sparse = self.bsr_of(old.args[1])
        if sparse is None:
            return None
        assert isinstance(new, Call)
        return sparse_dense(new.args[0], sparse)


def dense_to_sparse(
    fn: Function,
    params: Mapping[str, Any] | None,
    blocksize: Sequence[int] = (16, 1),
    sparsity_threshold: float = 0.85,
) -> tuple[Function, dict[str, Any]]:
    """``fn`` with its sparse enough dense layers as ``nn.sparse_dense`` (module docs),
    and ``params`` with each converted weight replaced by its three BSR arrays."""
    bs_r, bs_c = (int(b) for b in blocksize)
    work = _DenseSparsifier(dict(params or {}), (bs_r, bs_c), sparsity_threshold, "dense", 0)
    infer_type(fn)
    return _finish(fn, rewrite_post_order(fn.body, work.rewrite), work)
