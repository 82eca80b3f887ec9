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
- ``dnnl.gelu_erf`` and ``dnnl.gelu_tanh``: ``nn.gelu`` (what the frontends emit)
  and GELU written out (``0.5 * x * (1 + erf(x / sqrt(2)))`` and the tanh
  approximation, any association of the products), one oneDNN eltwise (a post-op
  of the matmul or dense layer before it).

The GELU and layer-norm checks are the shared recognisers of
:mod:`relaykit.transform.idioms` (as the host's ``FuseGelu`` and ``FuseLayerNorm``
and the ONNX importer use); the patterns here only say which calls a composite
takes in.

Bias is ``nn.bias_add`` or ``add`` of a constant. Every entry has a check
that runs the operator rules (:mod:`.rules`) on the matched calls, so a
composite is formed only where oneDNN can run it. The GELU and layer-norm
composites reach the codegen as they are: it lowers each by its name to one node
(:data:`~relaykit.backends.dnnl.compile.lower.COMPOSITES`; a layer norm's epsilon,
gamma and beta read from the body by the shared recogniser). The convolution, dense
and shuffle composites are lowered operator by operator and their fusions made by
:mod:`relaykit.backends.dnnl.compile.fuse`, dnnl's one place for fusion decisions,
which sees the whole region (a batch norm after a composite folded into its weights,
the residual sum, post-ops across composite borders).

>>> [name for name, *_ in pattern_table()][:3]
['dnnl.conv2d_bias_sum_relu', 'dnnl.conv2d_bias_sum', 'dnnl.conv2d_bias_relu']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from relaykit.backends.dnnl.compile.lower import op_name
from relaykit.byoc import Decline, decline
from relaykit.dataflow_pattern import DFPattern, is_constant, is_op, wildcard
from relaykit.ir.expr import Call, Expr
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType
from relaykit.transform.idioms import match_gelu, match_gelu_tanh, match_layer_norm

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


def _float32_tensor(expr: Expr) -> TensorType | None:
    ty = expr.checked_type
    if isinstance(ty, TensorType) and ty.dtype == "float32" and 1 <= len(ty.shape) <= 6:
        return ty
    return None


#: Relative tolerance of the GELU constants (exporters round them differently).
_GELU_RTOL = 1e-4
_FLOAT32 = frozenset({"float32"})


def _check_gelu(match: Callable[..., Expr | None]) -> Callable[[Expr], bool | Decline]:
    """The check of a GELU composite: ``nn.gelu``, or the chain the shared recogniser
    ``match`` (:mod:`relaykit.transform.idioms`) takes, on a float32 tensor."""

    def check(root: Expr) -> bool | Decline:
        ty = _float32_tensor(root)
        if ty is None:
            return decline("GELU of other than a float32 tensor of rank 1 to 6")
        if op_name(cast(Call, root)) == "nn.gelu":
            return True
        if match(root, rtol=_GELU_RTOL, rank=len(ty.shape)) is None:
            return decline("not GELU: its constants or operands differ")
        return True

    return check


def _check_layer_norm(root: Expr) -> bool | Decline:
    """The shared recogniser (:func:`relaykit.transform.idioms.match_layer_norm`) takes the
    chain (the pattern's gamma and beta are constants), over the last axis, on a float32
    tensor."""
    ty = _float32_tensor(root)
    if ty is None:
        return decline("layer norm of other than a float32 tensor of rank 1 to 6")
    m = match_layer_norm(root, ty, dtypes=_FLOAT32)
    if m is None:
        return decline("not a layer norm: the means, the square or epsilon differ")
    if m.axis != len(ty.shape) - 1:
        return decline("a mean over other than the last axis: not a layer norm")
    return True


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
    return [(name, pat, _check_layer_norm) for name, pat in patterns]


def _gelu(
    name: str, cdf_of: Callable[[DFPattern], DFPattern], match: Callable[..., Expr | None]
) -> tuple[str, DFPattern, Callable[[Expr], Any]]:
    """0.5 * x * cdf(x), in any association of the two products (and ``nn.gelu`` for the
    erf form: what the frontends emit)."""
    x = wildcard()
    cdf = cdf_of(x)
    mul = is_op("multiply")
    pattern = (
        mul(mul(x, cdf), is_constant())
        | mul(mul(x, is_constant()), cdf)
        | mul(x, mul(cdf, is_constant()))
    )
    if match is match_gelu:
        pattern = is_op("nn.gelu")(wildcard()) | pattern
    return name, pattern, _check_gelu(match)


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
    table.append(_gelu("dnnl.gelu_erf", _erf_cdf, match_gelu))
    table.append(_gelu("dnnl.gelu_tanh", _tanh_cdf, match_gelu_tanh))
    return table
