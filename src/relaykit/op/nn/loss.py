"""``nn.nll_loss``: the negative log-likelihood loss (TVM's ``relay.nn.nll_loss``).

For predictions ``(N, C, d1, ..., dk)`` (log-probabilities), integer targets
``(N, d1, ..., dk)`` and class weights ``(C,)``, each element's loss is
``-predictions[n, t, ...] * weights[t]`` with ``t = targets[n, ...]``, or 0 where
``t == ignore_index``. ``reduction`` is ``"mean"`` (the sum divided by the sum of
the weights used), ``"sum"`` or ``"none"`` (the per-element losses).

>>> from relaykit import relay
>>> p = relay.var("p", shape=(4, 3))
>>> t = relay.var("t", shape=(4,), dtype="int32")
>>> nll_loss(p, t, relay.var("w", shape=(3,))).attrs.reduction
'mean'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.errors import ArgumentError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._numeric import as_out
from relaykit.op._relations import differ, is_int, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["nll_loss"]

_REDUCTIONS = ("mean", "sum", "none")


def _nll_loss_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    pred = tensor_arg(arg_types, 0, "predictions")
    target = tensor_arg(arg_types, 1, "targets")
    weights = tensor_arg(arg_types, 2, "weights")
    if pred.ndim < 1 or target.ndim != pred.ndim - 1:
        raise TypeRelError(
            f"nll_loss: targets must have one dimension fewer than predictions "
            f"(N, C, d1, ...), got {pred} and {target}"
        )
    if not is_int(target.dtype):
        raise TypeRelError(f"nll_loss: targets must be integer class ids, got {target}")
    expected = (pred.shape[0], *pred.shape[2:]) if pred.ndim > 1 else ()
    if any(differ(a, b) for a, b in zip(target.shape, expected, strict=False)):
        raise TypeRelError(f"nll_loss: targets {target} do not fit predictions {pred}")
    c = pred.shape[1] if pred.ndim > 1 else pred.shape[0]
    if weights.ndim != 1 or differ(weights.shape[0], c) or weights.dtype != pred.dtype:
        raise TypeRelError(f"nll_loss: weights must be a ({c},) {pred.dtype} vector, got {weights}")
    if attrs.reduction == "none":
        return TensorType(target.shape, pred.dtype)
    return TensorType((), pred.dtype)


def _nll_loss_kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    pred, target, weights = ins
    keep = target != attrs.ignore_index
    t = np.where(keep, target, 0).astype(np.int64)
    picked = np.take_along_axis(pred.astype(np.float64), np.expand_dims(t, 1), axis=1)
    w = np.where(keep, weights.astype(np.float64)[t], 0.0)
    losses = -np.squeeze(picked, axis=1) * w
    if attrs.reduction == "none":
        return as_out(losses, pred.dtype)
    total = losses.sum()
    if attrs.reduction == "mean":
        total = total / w.sum()
    return as_out(total, pred.dtype)


define_op(
    "nn.nll_loss",
    num_inputs=3,
    attrs={"reduction": "mean", "ignore_index": -100},
    attrs_type_key="relay.attrs.NLLLossAttrs",
    type_rel=_nll_loss_rel,
    compute=_nll_loss_kernel,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    doc="Negative log-likelihood loss with class weights.",
)


def nll_loss(
    predictions: Expr,
    targets: Expr,
    weights: Expr,
    reduction: str = "mean",
    ignore_index: int = -100,
) -> Call:
    """The weighted negative log-likelihood of ``targets`` under ``predictions``
    (see the module docstring)."""
    if reduction not in _REDUCTIONS:
        raise ArgumentError(f"nll_loss: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    return make_call(
        "nn.nll_loss",
        [predictions, targets, weights],
        reduction=reduction,
        ignore_index=int(ignore_index),
    )
