"""The helpers of TVM's ``relay.op.contrib.dnnl``, on top of relaykit's dnnl backend.

TVM scripts partition for oneDNN with these (``tvm.relay.op.contrib.dnnl`` is this
module's names plus :func:`~.partition.partition_for_dnnl` and
:func:`~.patterns.pattern_table`):

- graph rewrites run before partitioning: :func:`rewrite_layer_norm` (the
  mean/variance chain exporters emit becomes one ``nn.layer_norm``),
  :func:`rewrite_dense_bias_gelu_reshape_last` (``reshape`` moved after the bias
  and GELU of a dense layer, so dense + bias + GELU is one oneDNN primitive) and
  :func:`legalize_qnn_for_dnnl`;
- :func:`prune_dnnl_subgraphs`, run after partitioning: regions without a
  compute-heavy operator go back to the host;
- operator hooks for TVM's ``Legalize`` and ``AlterOpLayout`` passes
  (:func:`legalize_group_conv`, :func:`alter_conv`, :func:`alter_conv_transpose`)
  and the layout queries ``get_optimal_layout_for_conv*``.

Where relaykit's backend makes a TVM step unnecessary, the helper says so and
keeps the graph: relaykit's dnnl codegen takes grouped convolutions in Relay's
``OIHW`` layout and lets oneDNN choose blocked layouts inside each region, so the
layout hooks keep the operator as it is (``None``, the hooks' "no change") and the
layout queries answer the plain layouts relaykit's regions exchange. relaykit has no
QNN chains into oneDNN attributes itself, so :func:`legalize_qnn_for_dnnl` keeps the graph.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 8))
>>> mu = relay.mean(x, axis=-1, keepdims=True)
>>> d = x - mu
>>> var = relay.mean(d * d, axis=-1, keepdims=True)
>>> y = d / relay.sqrt(var + relay.const(1e-5))
>>> mod = rewrite_layer_norm(tvm.IRModule.from_expr(relay.Function([x], y)))
>>> mod["main"].body.op.name
'nn.layer_norm'
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from relaykit.backends.dnnl.compile.codegen import dnnl_codegen
from relaykit.backends.dnnl.compile.lower import op_name
from relaykit.dataflow_pattern import DFPatternCallback, is_constant, is_op, rewrite, wildcard
from relaykit.errors import IRError
from relaykit.ir.expr import Call, Constant, Expr, Function, GlobalVar, checked_type_or_none, const
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType
from relaykit.op import add, reshape
from relaykit.op.nn import layer_norm
from relaykit.transform.bind import bind
from relaykit.transform.idioms import match_layer_norm
from relaykit.transform.infer_type import InferType

__all__ = [
    "legalize_group_conv",
    "alter_conv",
    "alter_conv_transpose",
    "get_optimal_layout_for_conv",
    "get_optimal_layout_for_conv_transpose",
    "rewrite_layer_norm",
    "rewrite_dense_bias_gelu_reshape_last",
    "legalize_qnn_for_dnnl",
    "prune_dnnl_subgraphs",
    "COMPUTE_HEAVY_OPS",
    "RUNTIME_CREATE",
    "create_runtime_module",
]

#: TVM's global function creating a DNNL runtime module; registered (see
#: :mod:`.registration`) when oneDNN is installed, which is how TVM scripts ask whether
#: DNNL is available (``tvm.get_global_func("runtime.DNNLJSONRuntimeCreate", True)``).
RUNTIME_CREATE = "runtime.DNNLJSONRuntimeCreate"

#: Operators that make a dnnl region worth keeping (:func:`prune_dnnl_subgraphs`).
COMPUTE_HEAVY_OPS = frozenset(
    {
        "nn.conv1d",
        "nn.conv2d",
        "nn.conv3d",
        "nn.conv1d_transpose",
        "nn.conv2d_transpose",
        "nn.conv3d_transpose",
        "nn.dense",
        "nn.matmul",
        "nn.batch_matmul",
        "nn.layer_norm",
        "nn.batch_norm",
        "nn.max_pool2d",
        "nn.avg_pool2d",
        "nn.global_max_pool2d",
        "nn.global_avg_pool2d",
        "nn.max_pool3d",
        "nn.avg_pool3d",
        "nn.softmax",
    }
)


def _attr(attrs: Any, name: str) -> Any:
    try:
        return getattr(attrs, name)
    except AttributeError:
        raise IRError(
            f"this dnnl hook expects the attributes of a convolution (with {name!r}), got "
            f"{type(attrs).__name__}: register it for nn.conv*d operators only"
        ) from None


def legalize_group_conv(attrs: Any, inputs: Any, types: Any) -> Expr | None:
    """TVM's ``FTVMLegalize`` hook for grouped (transposed) convolutions.

    TVM's DNNL codegen needed grouped weights in a ``GOIHW`` layout; relaykit's takes
    them in Relay's ``OIHW`` and forms oneDNN's grouped weights itself, so every
    convolution is already legal: the hook returns ``None`` (keep the call).
    """
    _attr(attrs, "groups")
    return None


def alter_conv(attrs: Any, inputs: Any, tinfos: Any, out_type: Any) -> Expr | None:
    """TVM's ``FTVMAlterOpLayout`` hook for convolutions: ``None`` (keep the layout).

    relaykit's regions exchange plain (``NCHW``/``OIHW``) tensors and oneDNN picks
    blocked layouts inside each region, where reorders are planned once; rewriting the
    Relay graph into blocked layouts would only add host-side ``layout_transform``.
    """
    _attr(attrs, "data_layout")
    return None


def alter_conv_transpose(attrs: Any, inputs: Any, tinfos: Any, out_type: Any) -> Expr | None:
    """TVM's ``FTVMAlterOpLayout`` hook for transposed convolutions: ``None``, as
    :func:`alter_conv`."""
    _attr(attrs, "data_layout")
    return None


_PLAIN = {3: ("NCW", "OIW"), 4: ("NCHW", "OIHW"), 5: ("NCDHW", "OIDHW")}


def _plain_layouts(weight_shape: Any, groups: int, transpose: bool) -> str:
    rank = len(tuple(weight_shape))
    if rank not in _PLAIN:
        raise IRError(f"a convolution weight of rank {rank}: dnnl takes 1-D, 2-D and 3-D ones")
    data, weight = _PLAIN[rank]
    if transpose:
        weight = "IO" + weight[2:]
    if int(groups) > 1:
        weight = "G" + weight
    return f"{data},{weight},{data}"


def get_optimal_layout_for_conv(
    data_layout: str,
    kernel_layout: str,
    weight_shape: Any,
    out_shape: Any,
    paddings: Any,
    dilates: Any,
    strides: Any,
    groups: int,
    dtype: str,
) -> str:
    """The ``"data,weight,output"`` layouts a convolution should have in the Relay graph
    for oneDNN: the plain ones (see :func:`alter_conv`)."""
    return _plain_layouts(weight_shape, groups, transpose=False)


def get_optimal_layout_for_conv_transpose(
    data_layout: str,
    kernel_layout: str,
    weight_shape: Any,
    out_shape: Any,
    paddings: Any,
    output_paddings: Any,
    dilates: Any,
    strides: Any,
    groups: int,
    dtype: str,
) -> str:
    """As :func:`get_optimal_layout_for_conv`, for transposed convolutions."""
    return _plain_layouts(weight_shape, groups, transpose=True)


def create_runtime_module(symbol_name: str, func: Any, const_names: Any = ()) -> Any:
    """The dnnl runtime module running the Relay function ``func`` as ``symbol_name``
    (the global function :data:`RUNTIME_CREATE`).

    TVM's took the function as its JSON graph; relaykit's dnnl runtime is compiled from
    the Relay function itself, so that is what this takes. ``const_names`` is accepted
    for TVM's signature: the function's constants travel inside it.
    """
    if not isinstance(func, Function):
        raise IRError(
            f"{RUNTIME_CREATE} takes the Relay function to run, got {type(func).__name__} "
            "(relaykit's dnnl runtime is compiled from Relay, not from TVM's JSON graph)"
        )
    func = func.with_attr("global_symbol", str(symbol_name))
    return dnnl_codegen(InferType()(IRModule.from_expr(func))["main"])


def _tensor_type(e: Expr) -> TensorType | None:
    t = checked_type_or_none(e)
    return t if isinstance(t, TensorType) else None


def _vector_along_last(e: Expr, channels: int) -> Expr | None:
    """``e`` as a ``(channels,)`` vector (a constant of shape ``(1, ..., channels)`` is
    reshaped), or None when it does not lie along the last axis."""
    if type(e) is Constant:
        dims = tuple(e.data.shape)
    else:
        ty = _tensor_type(e)
        if ty is None:
            return None
        dims = tuple(ty.shape)
    shape = tuple(int(d) for d in dims)
    if shape == (channels,):
        return e
    if type(e) is Constant and shape and shape[-1] == channels and all(d == 1 for d in shape[:-1]):
        return const(e.data.numpy().reshape(channels))
    return None


class _LayerNormRewrite(DFPatternCallback):
    """``(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * gamma + beta`` over the last
    axis (``divide``/``sqrt`` or ``multiply``/``rsqrt``; the square as ``power`` 2 or a
    product; ``variance``) becomes ``nn.layer_norm(x, gamma, beta, axis=-1, epsilon=eps)``;
    the pattern finds the calls, the shared recogniser
    (:func:`relaykit.transform.idioms.match_layer_norm`) decides."""

    def __init__(self, scale: bool, shift: bool) -> None:
        super().__init__(require_type=True)
        self.x = wildcard()
        self.mu = is_op("mean")(self.x)
        self.diff = is_op("subtract")(self.x, self.mu)
        square = is_op("power")(self.diff, is_constant()) | is_op("multiply")(self.diff, self.diff)
        self.var = is_op("mean")(square) | is_op("variance")(self.x, self.mu)
        self.eps = is_constant()
        var_eps = is_op("add")(self.var, self.eps)
        norm = is_op("divide")(self.diff, is_op("sqrt")(var_eps)) | is_op("multiply")(
            self.diff, is_op("rsqrt")(var_eps)
        )
        self.gamma = wildcard() if scale else None
        self.beta = wildcard() if shift else None
        out = norm if self.gamma is None else is_op("multiply")(norm, self.gamma)
        self.pattern = out if self.beta is None else is_op("add")(out, self.beta)

    def callback(self, pre: Expr, post: Expr, node_map: Any) -> Expr:
        ty = _tensor_type(pre)
        m = None if ty is None else match_layer_norm(post, ty)
        if ty is None or m is None or m.axis != len(ty.shape) - 1:
            return post
        if (m.gamma is None) != (self.gamma is None) or (m.beta is None) != (self.beta is None):
            return post
        channels = int(ty.shape[-1])
        gamma = const(np.ones(channels, ty.dtype)) if m.gamma is None else m.gamma
        beta = const(np.zeros(channels, ty.dtype)) if m.beta is None else m.beta
        return layer_norm(m.data, gamma, beta, axis=-1, epsilon=m.epsilon)


def _rewrite_main(mod: IRModule, callbacks: list[DFPatternCallback]) -> IRModule:
    if not isinstance(mod, IRModule):
        raise IRError(f"this dnnl rewrite takes an IRModule, got {type(mod).__name__}")
    mod = InferType()(mod)
    main = mod["main"]
    body = rewrite(callbacks, main.body)
    if body is main.body:
        return mod
    out = mod.copy()
    out["main"] = main.with_fields(body=body)
    return InferType()(out)


def rewrite_layer_norm(mod: IRModule) -> IRModule:
    """``mod`` with layer normalisations written out as means and variances (as exporters
    write them) made ``nn.layer_norm`` calls, which oneDNN runs as one primitive."""
    # The longest form first: a scale and shift are folded into the layer norm.
    variants = [(True, True), (True, False), (False, True), (False, False)]
    return _rewrite_main(mod, [_LayerNormRewrite(scale, shift) for scale, shift in variants])


def _erf_gelu(x: Any) -> Any:
    """``x * (erf(x / c1) + c2) * c3``, the GELU TVM's DNNL rewrite recognises."""
    divided = is_op("divide")(x, is_constant())
    cdf = is_op("add")(is_op("erf")(divided), is_constant())
    return is_op("multiply")(is_op("multiply")(x, cdf), is_constant())


class _DenseReshapeBiasRewrite(DFPatternCallback):
    """``act(reshape(dense(x, w)) + b)`` becomes ``reshape(act(dense(x, w) + b))`` when the
    reshape keeps the last (units) axis and ``b`` runs along it; ``act`` is GELU (erf
    form written out, or ``nn.gelu``: what the frontends emit) or nothing."""

    def __init__(self, with_gelu: bool) -> None:
        super().__init__(require_type=True)
        self.x, self.w, self.b = wildcard(), wildcard(), wildcard()
        self.dense = is_op("nn.dense")(self.x, self.w)
        self.reshaped = is_op("reshape")(self.dense)
        self.biased = is_op("add")(self.reshaped, self.b)
        self.with_gelu = with_gelu
        self.pattern = (
            is_op("nn.gelu")(self.biased) | _erf_gelu(self.biased) if with_gelu else self.biased
        )

    def callback(self, pre: Expr, post: Expr, node_map: Any) -> Expr:
        dense = node_map[self.dense][0]
        reshaped = node_map[self.reshaped][0]
        dty, rty = _tensor_type(dense), _tensor_type(reshaped)
        if dty is None or rty is None or not rty.shape:
            return post
        units = int(dty.shape[-1])
        if int(rty.shape[-1]) != units:
            return post
        bias = _vector_along_last(node_map[self.b][0], units)
        if bias is None:
            return post
        out: Expr = add(dense, bias)
        if self.with_gelu and op_name(cast(Call, post)) == "nn.gelu":
            out = Call(cast(Call, post).op, [out], cast(Call, post).attrs)
        elif self.with_gelu:
            # Rebuild the GELU around the new input, with the matched constants.
            mul_outer = cast(Call, post)
            mul_inner = cast(Call, mul_outer.args[0])
            cdf = cast(Call, mul_inner.args[1])
            erf = cast(Call, cdf.args[0])
            div = cast(Call, erf.args[0])
            divided = Call(div.op, [out, div.args[1]], div.attrs)
            new_cdf = Call(cdf.op, [Call(erf.op, [divided], erf.attrs), cdf.args[1]], cdf.attrs)
            new_inner = Call(mul_inner.op, [out, new_cdf], mul_inner.attrs)
            out = Call(mul_outer.op, [new_inner, mul_outer.args[1]], mul_outer.attrs)
        return reshape(out, [int(d) for d in rty.shape])


def rewrite_dense_bias_gelu_reshape_last(mod: IRModule) -> IRModule:
    """``mod`` with the ``reshape`` between a dense layer and its bias (and GELU) moved
    after them, so oneDNN runs dense + bias (+ GELU) as one primitive."""
    return _rewrite_main(mod, [_DenseReshapeBiasRewrite(True), _DenseReshapeBiasRewrite(False)])


def legalize_qnn_for_dnnl(mod: IRModule) -> IRModule:
    """TVM rewrote ``qnn.conv2d`` / ``qnn.dense`` chains here into integer layers with
    float post-ops (the input zero point folded into the bias) for its codegen to map
    onto oneDNN attributes. relaykit's dnnl codegen folds the QNN chains itself
    (:mod:`relaykit.backends.dnnl.compile.int8`), so ``mod`` is returned as it is."""
    if not isinstance(mod, IRModule):
        raise IRError(f"legalize_qnn_for_dnnl takes an IRModule, got {type(mod).__name__}")
    return mod


def _region_ops(fn: Function) -> set[str]:
    """The operators a region computes, those inside its composite functions included."""
    names: set[str] = set()
    stack: list[Expr] = [fn.body]
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if type(e) is Call:
            if type(e.op) is Op:
                names.add(e.op.name)
            elif isinstance(e.op, Function):
                stack.append(e.op.body)
            stack.extend(e.args)
        elif isinstance(e, Function):
            stack.append(e.body)
        else:
            stack.extend(getattr(e, "fields", ()))
            for name in ("tuple_value", "value", "body", "cond", "true_branch", "false_branch"):
                child = getattr(e, name, None)
                if isinstance(child, Expr):
                    stack.append(child)
    return names


def _inline_composites(expr: Expr) -> Expr:
    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is Call and isinstance(new.op, Function) and "Composite" in new.op.attrs:
            fn = new.op
            return bind(fn.body, dict(zip(fn.params, new.args, strict=True)))
        return None

    return rewrite_post_order(expr, post)


def prune_dnnl_subgraphs(mod: IRModule) -> IRModule:
    """``mod`` with every dnnl region that computes none of :data:`COMPUTE_HEAVY_OPS`
    returned to the host: its calls are replaced by its operators (composites
    unwrapped) and the region function is removed. As TVM's, a module of at most two
    functions (``main`` and one region) is returned as it is."""
    if not isinstance(mod, IRModule):
        raise IRError(f"prune_dnnl_subgraphs takes an IRModule, got {type(mod).__name__}")
    if len(mod.get_global_vars()) <= 2:
        return mod  # as TVM's: a module with a single region keeps it
    pruned: dict[str, Function] = {}
    for gv, fn in mod.items():
        if fn.attrs.get("Compiler") == "dnnl" and not (_region_ops(fn) & COMPUTE_HEAVY_OPS):
            pruned[gv.name_hint] = fn
    if not pruned:
        return mod

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is Call and type(new.op) is GlobalVar and new.op.name_hint in pruned:
            fn = pruned[new.op.name_hint]
            body = bind(fn.body, dict(zip(fn.params, new.args, strict=True)))
            return _inline_composites(body)
        return None

    out = mod.copy()
    for name in pruned:
        out.remove(name)
    for gv, fn in mod.items():
        if gv.name_hint not in pruned:
            body = rewrite_post_order(fn.body, post)
            if body is not fn.body:
                out[gv] = fn.with_fields(body=body)
    return InferType()(out)
