"""``SimplifyInference``: rewrite training-style operators into inference primitives.

As TVM's pass of the same name:

- ``nn.batch_norm(x, gamma, beta, mean, var)[0]`` becomes
  ``x * scale + shift`` with ``scale = gamma / sqrt(var + eps)`` and
  ``shift = beta - mean * scale`` (both expanded to broadcast along ``axis``),
  so that ``FoldConstant`` turns them into two constants when the parameters
  are bound;
- ``nn.dropout(x)[0]`` becomes ``x``;
- ``nn.layer_norm(x, gamma, beta)`` becomes ``(x - mean) / sqrt(var + eps) * gamma + beta``
  with the mean and variance taken along ``axis``.

The other outputs of ``batch_norm`` and ``dropout`` are left as they are (and
disappear when nothing uses them). Functions handed to a backend are skipped.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(1, 4))
>>> mod = SimplifyInference()(IRModule.from_expr(relay.Function([x], relay.nn.dropout(x))))
>>> mod["main"].body is mod["main"].params[0]
True
"""

from __future__ import annotations

from relaykit.ir.expr import Call, Expr, Function, TupleGetItem, checked_type_or_none, const
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType
from relaykit.op import add, divide, expand_dims, mean, multiply, negative, sqrt, subtract

from .fold_constant import rewrite_outside_opaque
from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["SimplifyInference", "simplify_inference"]


def _tensor_type(e: Expr) -> TensorType | None:
    t = checked_type_or_none(e)
    return t if isinstance(t, TensorType) else None


def _expand_to_axis(bias: Expr, ndim: int, axis: int) -> Expr:
    """TVM's ``ExpandBiasToMatchAxis`` for one axis: trailing unit axes after ``axis``."""
    pad = ndim - axis - 1
    return expand_dims(bias, axis=1, num_newaxis=pad) if pad > 0 else bias


def _batch_norm(call: Call, old: Call) -> Expr | None:
    ty = _tensor_type(old.args[0])
    if ty is None:
        return None
    data, gamma, beta, moving_mean, moving_var = call.args
    attrs = call.attrs
    ndim = ty.ndim
    axis = attrs.axis % ndim if ndim else 0
    eps = const(attrs.epsilon, ty.dtype)
    scale: Expr = divide(const(1.0, ty.dtype), sqrt(add(moving_var, eps)))
    if attrs.scale:
        scale = multiply(scale, gamma)
    shift: Expr = multiply(negative(moving_mean), scale)
    if attrs.center:
        shift = add(shift, beta)
    scale = _expand_to_axis(scale, ndim, axis)
    shift = _expand_to_axis(shift, ndim, axis)
    return add(multiply(data, scale), shift)


def _layer_norm(call: Call, old: Call) -> Expr | None:
    ty = _tensor_type(old.args[0])
    if ty is None:
        return None
    data, gamma, beta = call.args
    attrs = call.attrs
    ndim = ty.ndim
    axis = attrs.axis % ndim
    mu = mean(data, axis=[axis], keepdims=True)
    centered = subtract(data, mu)
    var = mean(multiply(centered, centered), axis=[axis], keepdims=True)
    out = divide(centered, sqrt(add(var, const(attrs.epsilon, ty.dtype))))
    if attrs.scale:
        out = multiply(out, _expand_to_axis(gamma, ndim, axis))
    if attrs.center:
        out = add(out, _expand_to_axis(beta, ndim, axis))
    return out


def _op_name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def simplify_inference(expr: Expr) -> Expr:
    """``expr`` with batch_norm, dropout and layer_norm rewritten (types must be inferred;
    they are, if missing)."""
    if not expr.has_checked_type:
        infer_type(expr)

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is TupleGetItem and new.index == 0:
            inner, old_inner = new.tuple_value, old.tuple_value  # type: ignore[attr-defined]
            name = _op_name(inner)
            if name == "nn.dropout":
                return inner.args[0]  # type: ignore[attr-defined]
            if name == "nn.batch_norm":
                return _batch_norm(inner, old_inner)  # type: ignore[arg-type]
        elif _op_name(new) == "nn.layer_norm":
            return _layer_norm(new, old)  # type: ignore[arg-type]
        return None

    return rewrite_outside_opaque(expr, post)  # composites keep their operators


class SimplifyInference(FunctionPass):
    """``relay.transform.SimplifyInference()`` (opt_level 0)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="SimplifyInference")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = simplify_inference(fn)
        return out if isinstance(out, Function) else fn
