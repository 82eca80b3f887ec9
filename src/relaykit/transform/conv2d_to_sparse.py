"""Convolutions with mostly-zero weights to ``nn.sparse_conv2d`` (TVM's ``Conv2dToSparse``
passes and ``relay.data_dep_optimization.bsr_conv2d.convert`` / ``convert2``).

An ``nn.conv2d`` is converted when its weight is known (a parameter given in ``params``,
or a constant), at least ``sparsity_threshold`` of the weight is zero, and the
convolution is one ``nn.sparse_conv2d`` computes: ``layout`` data (``NCHW`` with an
``OIHW`` weight, or ``NHWC`` with ``HWIO``), one group, stride and dilation 1, a
``kernel_size`` x ``kernel_size`` kernel (1 without padding, or 3 padded by 1 on every
side), and the weight's matrix divisible into ``blocksize`` blocks. The weight becomes a
BSR matrix (``scipy.sparse.bsr_matrix``): three new parameters ``<name>.data``,
``<name>.indices``, ``<name>.indptr`` when it was a parameter, three constants when it
was a constant.

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 4, 6, 6))
>>> w = relay.var("w", shape=(8, 4, 1, 1))
>>> fn = relay.Function([x, w], relay.nn.conv2d(x, w, kernel_size=1, channels=8))
>>> wd = np.zeros((8, 4, 1, 1), "float32"); wd[::4, 1] = 1.0
>>> new, params = conv2d_to_sparse(fn, {"w": wd}, (4, 1), 0.5, "NCHW")
>>> new.body.op.name, sorted(params)
('nn.sparse_conv2d', ['w.data', 'w.indices', 'w.indptr'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from relaykit.errors import ArgumentError
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Call, Constant, Expr, Function, Var
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType
from relaykit.op.nn.geometry import pad4, pair
from relaykit.op.nn.sparse import sparse_conv2d

from .infer_type import infer_type

__all__ = ["conv2d_to_sparse"]

_KERNEL_LAYOUT = {"NCHW": "OIHW", "NHWC": "HWIO"}


def _as_array(value: Any) -> np.ndarray:
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def _fits(call: Call, layout: str, kernel_size: int) -> bool:
    a = call.attrs
    if a.data_layout != layout or a.kernel_layout != _KERNEL_LAYOUT[layout]:
        return False
    if a.out_layout not in ("", layout) or a.groups != 1:
        return False
    if pair(a.strides) != (1, 1) or pair(a.dilation) != (1, 1):
        return False
    pad = (kernel_size - 1) // 2
    if pad4(a.padding) != (pad, pad, pad, pad):
        return False
    out = call.checked_type
    return isinstance(out, TensorType) and (not a.out_dtype or a.out_dtype == out.dtype)


def _matrix(weight: np.ndarray, layout: str, kernel_size: int) -> np.ndarray | None:
    """The weight as the (out_channels, K) matrix ``nn.sparse_conv2d`` takes, or None
    when its kernel is not ``kernel_size`` square."""
    if layout == "dense":
        return weight if weight.ndim == 2 else None
    if weight.ndim != 4:
        return None
    if layout == "NCHW":
        _, _, kh, kw = weight.shape
        return weight.reshape(weight.shape[0], -1) if kh == kw == kernel_size else None
    kh, kw, _, o = weight.shape
    return weight.reshape(-1, o).T if kh == kw == kernel_size else None


def _bsr_parts(
    m: np.ndarray | None, blocksize: tuple[int, int], threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``m`` as BSR (data, int32 indices, int32 indptr) when it divides into blocks and at
    least ``threshold`` of it is zero, else None."""
    if m is None or m.shape[0] % blocksize[0] or m.shape[1] % blocksize[1]:
        return None
    if 1.0 - np.count_nonzero(m) / m.size < threshold:
        return None
    bsr = sp.bsr_matrix(m, blocksize=blocksize)
    return bsr.data, bsr.indices.astype("int32"), bsr.indptr.astype("int32")


class _Sparsifier:
    """The weights converted so far (by parameter name) and the parameters."""

    def __init__(
        self, params: dict[str, Any], blocksize: tuple[int, int], threshold: float,
        layout: str, kernel_size: int,
    ) -> None:  # fmt: skip
        self.params = params
        self.blocksize, self.threshold = blocksize, threshold
        self.layout, self.kernel_size = layout, kernel_size
        self.converted: dict[str, tuple[Expr, Expr, Expr]] = {}

    def weight_array(self, weight: Expr) -> tuple[str, np.ndarray] | None:
        if isinstance(weight, Var) and weight.name_hint in self.params:
            return weight.name_hint, _as_array(self.params[weight.name_hint])
        if isinstance(weight, Constant):
            return "", weight.data.numpy()
        return None

    def bsr_of(self, weight: Expr) -> tuple[Expr, Expr, Expr] | None:
        found = self.weight_array(weight)
        if found is None:
            return None
        name, arr = found
        if name in self.converted:
            return self.converted[name]
        m = _matrix(arr, self.layout, self.kernel_size)
        parts = _bsr_parts(m, self.blocksize, self.threshold)
        if parts is None:
            return None
        if not name:
            c = [Constant(np.ascontiguousarray(p)) for p in parts]
            return c[0], c[1], c[2]
        vs = [
            Var(f"{name}.{suffix}", TensorType(p.shape, str(p.dtype)))
            for suffix, p in zip(("data", "indices", "indptr"), parts, strict=True)
        ]
        for v, p in zip(vs, parts, strict=True):
            self.params[v.name_hint] = np.ascontiguousarray(p)
        self.converted[name] = (vs[0], vs[1], vs[2])
        return self.converted[name]

    def rewrite(self, new: Expr, old: Expr) -> Expr | None:
        if not (isinstance(old, Call) and isinstance(old.op, Op) and old.op.name == "nn.conv2d"):
            return None
        if not _fits(old, self.layout, self.kernel_size):
            return None
        sparse = self.bsr_of(old.args[1])
        if sparse is None:
            return None
        assert isinstance(new, Call)
        return sparse_conv2d(new.args[0], sparse, self.layout, self.kernel_size)


def conv2d_to_sparse(
    fn: Function,
    params: Mapping[str, Any] | None,
    blocksize: Sequence[int],
    sparsity_threshold: float,
    layout: str = "NHWC",
    kernel_size: int = 1,
) -> tuple[Function, dict[str, Any]]:
    """``fn`` with its sparse enough convolutions as ``nn.sparse_conv2d`` (module docs),
    and the parameters: ``params`` with each converted weight replaced by its three BSR
    arrays. Weights are looked up in ``params`` by parameter name, or are constants."""
    if layout not in _KERNEL_LAYOUT:
        raise ArgumentError(f"conv2d_to_sparse: layout must be NCHW or NHWC, got {layout!r}")
    if kernel_size not in (1, 3):
        raise ArgumentError(f"conv2d_to_sparse: kernel_size must be 1 or 3, got {kernel_size!r}")
    bs_r, bs_c = (int(b) for b in blocksize)
    work = _Sparsifier(dict(params or {}), (bs_r, bs_c), sparsity_threshold, layout, kernel_size)
    infer_type(fn)
    return _finish(fn, rewrite_post_order(fn.body, work.rewrite), work)


def _finish(fn: Function, body: Expr, work: _Sparsifier) -> tuple[Function, dict[str, Any]]:
    """``fn`` over the rewritten ``body``: converted weights that are no longer used leave
    the parameters (and ``work.params``), their BSR arrays join them."""
    if body is fn.body:
        return fn, work.params
    used = free_vars(body)
    gone = {p.name_hint for p in fn.params if p.name_hint in work.converted and p not in used}
    for name in gone:
        work.params.pop(name, None)
    kept = [p for p in fn.params if p.name_hint not in gone]
    extra = [v for v in used if v not in kept]
    out = Function([*kept, *extra], body, None, fn.type_params, fn.attrs, fn.span)
    return out, work.params
