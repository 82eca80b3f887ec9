"""The pattern table of target ``dnnl`` (composite functions for ``MergeComposite``).

The composites oneDNN runs as one primitive, named as in TVM's
``relay.op.contrib.dnnl`` (longest patterns first):

- ``dnnl.conv2d_bias_sum_relu``, ``dnnl.conv2d_bias_sum``: a convolution with
  bias accumulating into a residual (oneDNN's ``sum`` post-op), then ReLU;
- ``dnnl.conv2d_bias_<act>``, ``dnnl.conv2d_<act>``, ``dnnl.conv2d_bias`` for
  ``<act>`` in relu, tanh, sigmoid, clip; the same for ``dnnl.dense_*``;
- ``dnnl.channel_shuffle``: reshape → transpose(0, 2, 1, 3, 4) → reshape
  (ShuffleNet), one oneDNN shuffle primitive;
- ``dnnl.layer_norm`` (``_scale``, ``_shift`` variants): the mean / variance
  chain exporters emit for a layer normalisation over the last axis
  (``mean``, ``subtract``, ``mean`` of the square — ``multiply`` or ``power`` 2 —,
  ``add`` epsilon, ``sqrt`` and ``divide`` or ``rsqrt`` and ``multiply``, then
  optionally ``multiply`` by gamma and ``add`` beta), one oneDNN layer
  normalisation;
- ``dnnl.gelu_erf`` and ``dnnl.gelu_tanh``: GELU as exporters write it
  (``0.5 * x * (1 + erf(x / sqrt(2)))`` and the tanh approximation, any
  association of the products), one oneDNN eltwise (a post-op of the matmul or
  dense layer before it).

Bias is ``nn.bias_add`` or ``add`` of a constant. Every entry has a check
that runs the operator rules (:mod:`.rules`) on the matched calls, so a
composite is formed only where oneDNN can run it. The codegen does not depend
on these names: it re-fuses the whole region (:mod:`.compile.fuse`), so composites
are for TVM-compatible partitioning and for ``explain``.

>>> [name for name, *_ in pattern_table()][:3]
['dnnl.conv2d_bias_sum_relu', 'dnnl.conv2d_bias_sum', 'dnnl.conv2d_bias_relu']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from relaykit.backends.dnnl.compile.lower import op_name
from relaykit.byoc import Decline, decline
from relaykit.dataflow_pattern import DFPattern, is_constant, is_op, match_explain, wildcard
from relaykit.ir.expr import Call, Constant, Expr
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType

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


def _inside(pattern: DFPattern, data: DFPattern, root: Expr) -> list[Call]:
    """The calls of the match of ``pattern`` at ``root``, without the data it reads (what
    the wildcard ``data`` matched) and what computes it."""
    result = match_explain(pattern, root)
    stop = {id(e) for e in result.node_map.get(data, [])}
    calls: list[Call] = []
    seen: set[int] = set()
    frontier: list[Expr] = [root]
    while frontier:
        node = frontier.pop()
        if id(node) in seen or id(node) in stop or type(node) is not Call:
            continue
        seen.add(id(node))
        calls.append(node)
        frontier.extend(node.args)
    return calls


def _scalar_constants(calls: list[Call]) -> list[float]:
    """The scalar constants ``calls`` read."""
    return [
        float(a.data.numpy().reshape(()))
        for call in calls
        for a in call.args
        if type(a) is Constant and a.data.numpy().size == 1
    ]


def _has_values(values: list[float], wanted: list[tuple[float, ...]]) -> bool:
    """``values`` are, one for one, each close to one of the alternatives in ``wanted``."""
    rest = list(values)
    for alternatives in wanted:
        hit = next(
            (v for v in rest if any(abs(v - w) <= 1e-4 * abs(w) for w in alternatives)), None
        )
        if hit is None:
            return False
        rest.remove(hit)
    return not rest


def _float32_tensor(expr: Expr) -> TensorType | None:
    ty = expr.checked_type
    if isinstance(ty, TensorType) and ty.dtype == "float32" and 1 <= len(ty.shape) <= 6:
        return ty
    return None


_SQRT2 = 2.0**0.5
_GELU_ERF: list[tuple[float, ...]] = [(_SQRT2, 1 / _SQRT2), (1.0,), (0.5,)]
_GELU_TANH: list[tuple[float, ...]] = [
    (0.044715,),
    ((2 / 3.141592653589793) ** 0.5,),
    (1.0,),
    (0.5,),
]


def _check_gelu(
    pattern: DFPattern, data: DFPattern, wanted: list[tuple[float, ...]]
) -> Callable[[Expr], bool | Decline]:
    def check(root: Expr) -> bool | Decline:
        if _float32_tensor(root) is None:
            return decline("GELU of other than a float32 tensor of rank 1 to 6")
        values = _scalar_constants(_inside(pattern, data, root))
        if _has_values(values, wanted) or _has_values(values, [(3.0,), *wanted]):
            return True
        return decline(f"not GELU: constants {values}")

    return check


def _check_layer_norm(pattern: DFPattern, data: DFPattern) -> Callable[[Expr], bool | Decline]:
    def check(root: Expr) -> bool | Decline:
        """Both means over the last axis only, keeping it; scalar epsilon; gamma and beta
        vectors along the last axis; a float32 result."""
        ty = _float32_tensor(root)
        if ty is None:
            return decline("layer norm of other than a float32 tensor of rank 1 to 6")
        ndim, c = len(ty.shape), int(ty.shape[-1])
        for node in _inside(pattern, data, root):
            name = op_name(node)
            if name == "mean":
                axes = [int(a) % ndim for a in (node.attrs.axis or ())]
                if axes != [ndim - 1] or not node.attrs.keepdims or node.attrs.exclude:
                    return decline("a mean over other than the last axis: not a layer norm")
            if name == "power" and not _has_values(_scalar_constants([node]), [(2.0,)]):
                return decline("a power other than the square: not a layer norm")
            for a in node.args:
                if type(a) is Constant:
                    shape = tuple(int(d) for d in a.data.shape)
                    if int(np.prod(shape)) not in (1, c) or any(d != 1 for d in shape[:-1]):
                        return decline(f"a constant of shape {shape}: not along the last axis")
        return True

    return check


def _layer_norm_patterns() -> list[tuple[str, DFPattern, Callable[[Expr], Any]]]:
    x = wildcard()
    mean = is_op("mean")(x)
    diff = is_op("subtract")(x, mean)
    var = is_op("mean")(is_op("multiply")(diff, diff)) | is_op("mean")(
        is_op("power")(diff, is_constant())
    )
    var_eps = is_op("add")(var, is_constant())
    norm = is_op("divide")(diff, is_op("sqrt")(var_eps)) | is_op("multiply")(
        diff, is_op("rsqrt")(var_eps)
    )
    scaled = is_op("multiply")(norm, is_constant())
    patterns = [
        ("dnnl.layer_norm", is_op("add")(scaled, is_constant())),
        ("dnnl.layer_norm_scale", scaled),
        ("dnnl.layer_norm_shift", is_op("add")(norm, is_constant())),
        ("dnnl.layer_norm_plain", norm),
    ]
    return [(name, pat, _check_layer_norm(pat, x)) for name, pat in patterns]


def _gelu(
    name: str, cdf_of: Callable[[DFPattern], DFPattern], wanted: list[tuple[float, ...]]
) -> tuple[str, DFPattern, Callable[[Expr], Any]]:
    """0.5 * x * cdf(x), in any association of the two products."""
    x = wildcard()
    cdf = cdf_of(x)
    mul = is_op("multiply")
    pattern = (
        mul(mul(x, cdf), is_constant())
        | mul(mul(x, is_constant()), cdf)
        | mul(x, mul(cdf, is_constant()))
    )
    return name, pattern, _check_gelu(pattern, x, wanted)


def _erf_cdf(x: DFPattern) -> DFPattern:
    inner = is_op("divide")(x, is_constant()) | is_op("multiply")(x, is_constant())
    return is_op("add")(is_op("erf")(inner), is_constant())


def _tanh_cdf(x: DFPattern) -> DFPattern:
    cube = is_op("power")(x, is_constant()) | is_op("multiply")(is_op("multiply")(x, x), x)
    inner = is_op("multiply")(
        is_op("add")(x, is_op("multiply")(cube, is_constant())), is_constant()
    )
    return is_op("add")(is_op("tanh")(inner), is_constant())


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
    table.extend(_layer_norm_patterns())
    table.append(_gelu("dnnl.gelu_erf", _erf_cdf, _GELU_ERF))
    table.append(_gelu("dnnl.gelu_tanh", _tanh_cdf, _GELU_TANH))
    return table
