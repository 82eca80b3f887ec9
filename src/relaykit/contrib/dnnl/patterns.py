"""The pattern table of target ``dnnl`` (composite functions for ``MergeComposite``).

The composites oneDNN runs as one primitive, named as in TVM's
``relay.op.contrib.dnnl`` (longest patterns first):

- ``dnnl.conv2d_bias_sum_relu``, ``dnnl.conv2d_bias_sum``: a convolution with
  bias accumulating into a residual (oneDNN's ``sum`` post-op), then ReLU;
- ``dnnl.conv2d_bias_<act>``, ``dnnl.conv2d_<act>``, ``dnnl.conv2d_bias`` for
  ``<act>`` in relu, tanh, sigmoid, clip; the same for ``dnnl.dense_*``;
- ``dnnl.channel_shuffle``: reshape → transpose(0, 2, 1, 3, 4) → reshape
  (ShuffleNet), one oneDNN shuffle primitive.

Bias is ``nn.bias_add`` or ``add`` of a constant. Every entry has a check
that runs the operator rules (:mod:`.rules`) on the matched calls, so a
composite is formed only where oneDNN can run it. The codegen does not depend
on these names: it re-fuses the whole region (:mod:`.fuse`), so composites
are for TVM-compatible partitioning and for ``explain``.

>>> [name for name, *_ in pattern_table()][:3]
['dnnl.conv2d_bias_sum_relu', 'dnnl.conv2d_bias_sum', 'dnnl.conv2d_bias_relu']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from relaykit.byoc import Decline
from relaykit.dataflow_pattern import DFPattern, is_constant, is_op, wildcard
from relaykit.ir.expr import Call, Expr
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType

from .lower import op_name
from .rules import check_call

__all__ = ["pattern_table", "ACTIVATIONS"]

#: Activations fused into convolution and dense composites (pattern name -> op).
ACTIVATIONS: dict[str, str] = {
    "relu": "nn.relu",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "clip": "clip",
}

_ANCHORS = frozenset({"nn.conv2d", "nn.dense"})
_MAX_DEPTH = 4


def _anchor(op_name: str) -> DFPattern:
    return is_op(op_name)(wildcard(), is_constant())


def _with_bias(anchor: DFPattern) -> DFPattern:
    return is_op("nn.bias_add")(anchor, is_constant()) | is_op("add")(anchor, is_constant())


def _pattern_calls(root: Expr) -> list[Call]:
    """The operator calls within a few levels of ``root`` (a composite's match is shallow)."""
    calls: list[Call] = []
    frontier: list[tuple[Expr, int]] = [(root, 0)]
    while frontier:
        node, depth = frontier.pop()
        if type(node) is not Call or type(node.op) is not Op:
            continue
        calls.append(node)
        if depth + 1 < _MAX_DEPTH and op_name(node) not in _ANCHORS:
            frontier.extend((a, depth + 1) for a in node.args)
    return calls


def _check(root: Expr) -> bool | Decline:
    """Accept a match when the dnnl rules accept its convolution / dense calls and root."""
    for call in _pattern_calls(root):
        if op_name(call) in _ANCHORS or call is root:
            verdict = check_call(call)
            if not verdict:
                return verdict
    return True


def _check_shuffle(root: Expr) -> bool:
    """reshape(N,C,H,W -> N,G,C/G,H,W) -> transpose -> reshape(back to N,C,H,W)."""
    if type(root) is not Call or type(root.args[0]) is not Call:
        return False
    transpose = root.args[0]
    first = transpose.args[0]
    if type(first) is not Call:
        return False
    types = [first.args[0].checked_type, first.checked_type, root.checked_type]
    if not all(isinstance(t, TensorType) for t in types):
        return False
    src, mid, out = (tuple(cast(TensorType, t).shape) for t in types)
    axes = transpose.attrs.axes
    return (
        len(src) == 4
        and src == out
        and len(mid) == 5
        and (mid[0], mid[1] * mid[2], mid[3], mid[4]) == src
        and axes is not None
        and [int(a) for a in axes] == [0, 2, 1, 3, 4]
        and cast(TensorType, types[0]).dtype == "float32"
    )


def pattern_table() -> list[tuple[str, DFPattern, Callable[[Expr], Any]]]:
    """The dnnl pattern table, longest patterns first."""
    table: list[tuple[str, DFPattern, Callable[[Expr], Any]]] = []
    conv_bias = _with_bias(_anchor("nn.conv2d"))
    conv_sum = is_op("add")(conv_bias, wildcard())
    table.append(("dnnl.conv2d_bias_sum_relu", is_op("nn.relu")(conv_sum), _check))
    table.append(("dnnl.conv2d_bias_sum", conv_sum, _check))
    for anchor, kind in (("nn.conv2d", "conv2d"), ("nn.dense", "dense")):
        plain = _anchor(anchor)
        bias = _with_bias(_anchor(anchor))
        for act, act_op in ACTIVATIONS.items():
            table.append((f"dnnl.{kind}_bias_{act}", is_op(act_op)(bias), _check))
        for act, act_op in ACTIVATIONS.items():
            table.append((f"dnnl.{kind}_{act}", is_op(act_op)(plain), _check))
        table.append((f"dnnl.{kind}_bias", bias, _check))
    shuffle = is_op("reshape")(is_op("transpose")(is_op("reshape")(wildcard())))
    table.append(("dnnl.channel_shuffle", shuffle, _check_shuffle))
    return table
