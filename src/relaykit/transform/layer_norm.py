"""``FuseLayerNorm``: the mean / variance chains of a layer normalisation as one
``nn.layer_norm``.

``SimplifyInference`` writes ``nn.layer_norm`` as ``(x - mean) / sqrt(var + eps) * gamma +
beta``, and exporters emit the same chain (ONNX before opset 17: ReduceMean, Sub, Pow 2,
ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta). Run as written these are nine or ten
passes over the data; the host runs ``nn.layer_norm`` in one kernel (see
:mod:`relaykit.backends.host.nn`), and more accurately: the chain's mean is rounded before
it is subtracted. This pass finds, for one axis ``a``:

- ``mean(x, axis=[a], keepdims=True)`` subtracted from ``x`` (``d``; both uses of ``d``
  the same expression),
- the variance ``mean(d * d)``, ``mean(power(d, 2))`` or ``variance(x, mean)`` over the
  same axis,
- ``d / sqrt(var + eps)`` or ``d * rsqrt(var + eps)`` with a scalar constant ``eps``,
- then optionally ``* gamma`` and ``+ beta`` (either operand order), where gamma and
  beta are constants along ``a`` (size 1 or the axis' length, unit elsewhere) or
  tensors of the axis' length when ``a`` is the last axis,

and replaces it with ``nn.layer_norm(x, gamma, beta, axis=a, epsilon=eps)`` (``scale`` /
``center`` off when there is no gamma / beta). Float32 and float64 only. Functions for
backends and composite functions are left as they are.

:func:`match_layer_norm` is the matcher alone, the shared one of :mod:`.idioms` (the
ONNX importer, the backends' pattern checks and code generators use it too).

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2, 8))
>>> m = relay.mean(x, axis=[-1], keepdims=True)
>>> d = x - m
>>> v = relay.mean(d * d, axis=[-1], keepdims=True)
>>> y = d / relay.sqrt(v + relay.const(1e-5))
>>> body = FuseLayerNorm()(IRModule.from_expr(relay.Function([x], y)))["main"].body
>>> body.op.name, body.args[0] is x, body.attrs.scale, body.attrs.center
('nn.layer_norm', True, False, False)
"""

from __future__ import annotations

from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, Type

from .fold_constant import rewrite_outside_opaque
from .idioms import LayerNormMatch, layer_norm_call, match_layer_norm
from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["FuseLayerNorm", "LayerNormMatch", "fuse_layer_norm", "match_layer_norm"]


def _match_at(node: Expr, ty: Type | None) -> LayerNormMatch | None:
    """The match rooted at ``node`` of type ``ty``, else None."""
    if not (type(node) is Call and type(node.op) is Op):
        return None
    if node.op.name not in ("add", "multiply", "divide") or not isinstance(ty, TensorType):
        return None
    return match_layer_norm(node, ty)


def fuse_layer_norm(expr: Expr) -> Expr:
    """``expr`` with every matched chain replaced by ``nn.layer_norm`` (types are inferred,
    if missing)."""
    if not expr.has_checked_type:
        infer_type(expr)
    # Calls a longer chain takes in (the normalised value under ``* gamma + beta``) are
    # not rewritten on their own: the longest match wins.
    taken: set[Expr] = set()
    for node in post_order(expr):
        m = _match_at(node, checked_type_or_none(node))
        if m is not None:
            taken.update(m.inner)

    def post(new: Expr, old: Expr) -> Expr | None:
        ty = checked_type_or_none(old)
        if old in taken or not isinstance(ty, TensorType):
            return None
        m = _match_at(new, ty)
        return None if m is None else layer_norm_call(m, ty)

    return rewrite_outside_opaque(expr, post)


class FuseLayerNorm(FunctionPass):
    """Rewrite layer normalisation chains into ``nn.layer_norm`` (opt_level 1): see the
    module docs."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=1, name="FuseLayerNorm")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = fuse_layer_norm(fn)
        return out if isinstance(out, Function) else fn
