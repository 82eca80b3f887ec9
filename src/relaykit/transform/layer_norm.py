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
- the variance ``mean(d * d)`` or ``mean(power(d, 2))`` over the same axis,
- ``d / sqrt(var + eps)`` or ``d * rsqrt(var + eps)`` with a scalar constant ``eps``,
- then optionally ``* gamma`` and ``+ beta`` (either operand order), where gamma and
  beta are constants along ``a`` (size 1 or the axis' length, unit elsewhere) or
  tensors of the axis' length when ``a`` is the last axis,

and replaces it with ``nn.layer_norm(x, gamma, beta, axis=a, epsilon=eps)`` (``scale`` /
``center`` off when there is no gamma / beta). Float32 and float64 only. Functions for
backends and composite functions are left as they are.

:func:`match_layer_norm` is the matcher alone (what a backend's pattern check can reuse).

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

from dataclasses import dataclass

import numpy as np

from relaykit.ir.expr import Call, Constant, Expr, Function, checked_type_or_none, const
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, Type
from relaykit.op.nn import layer_norm

from .fold_constant import rewrite_outside_opaque
from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["FuseLayerNorm", "LayerNormMatch", "fuse_layer_norm", "match_layer_norm"]

_DTYPES = frozenset({"float32", "float64"})


@dataclass(frozen=True)
class LayerNormMatch:
    """A matched chain: ``nn.layer_norm(data, gamma, beta, axis, epsilon)``; ``gamma`` /
    ``beta`` are ``None`` when the chain has no scale / shift."""

    data: Expr
    gamma: Expr | None
    beta: Expr | None
    axis: int
    epsilon: float
    #: The chain's calls between the root and the normalised value (included), which a
    #: match at an outer call takes in.
    inner: tuple[Expr, ...] = ()


def _name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _scalar(e: Expr) -> float | None:
    if type(e) is not Constant:
        return None
    value = e.data.numpy()
    return float(value.reshape(-1)[0]) if value.size == 1 else None


def _mean_axis(e: Expr, ndim: int) -> int | None:
    """The one axis ``e`` (a ``mean`` keeping its dims) reduces, else None."""
    if _name(e) != "mean":
        return None
    attrs = e.attrs  # type: ignore[attr-defined]
    axes = attrs.axis
    if not axes or len(axes) != 1 or not attrs.keepdims or attrs.exclude:
        return None
    axis = int(axes[0])
    return axis % ndim if -ndim <= axis < ndim else None


def _operands(e: Expr, name: str) -> tuple[Expr, Expr] | None:
    if _name(e) != name or len(e.args) != 2:  # type: ignore[attr-defined]
        return None
    a, b = e.args  # type: ignore[attr-defined]
    return a, b


def _centred(norm: Expr, ndim: int) -> tuple[Expr, Expr, int, float] | None:
    """``(d, x, axis, eps)`` of ``norm = d / sqrt(var(d) + eps)`` (or ``d * rsqrt(...)``)."""
    div = _operands(norm, "divide")
    if div is not None and _name(div[1]) == "sqrt":
        d, root = div[0], div[1].args[0]  # type: ignore[attr-defined]
    else:
        mul = _operands(norm, "multiply")
        if mul is None:
            return None
        a, b = mul
        if _name(b) == "rsqrt":
            d, root = a, b.args[0]  # type: ignore[attr-defined]
        elif _name(a) == "rsqrt":
            d, root = b, a.args[0]  # type: ignore[attr-defined]
        else:
            return None
    plus = _operands(root, "add")
    if plus is None:
        return None
    var, eps = plus if _scalar(plus[1]) is not None else (plus[1], plus[0])
    epsilon = _scalar(eps)
    sub = _operands(d, "subtract")
    axis = _mean_axis(var, ndim)
    if epsilon is None or sub is None or axis is None:
        return None
    x, mu = sub
    if _mean_axis(mu, ndim) != axis or mu.args[0] is not x:  # type: ignore[attr-defined]
        return None
    square = var.args[0]  # type: ignore[attr-defined]
    prod = _operands(square, "multiply")
    power = _operands(square, "power")
    if prod is not None and prod[0] is d and prod[1] is d:
        return d, x, axis, epsilon
    if power is not None and power[0] is d and _scalar(power[1]) == 2.0:
        return d, x, axis, epsilon
    return None


def _along(e: Expr, ndim: int, axis: int, size: int) -> Expr | None:
    """``e`` as a vector of the axis' length, if it broadcasts along ``axis`` only."""
    if type(e) is Constant:
        value = e.data.numpy()
        shape = value.shape
        if len(shape) > ndim or value.size not in (1, size):
            return None
        lead = ndim - len(shape)
        if any(d != 1 for i, d in enumerate(shape) if i + lead != axis):
            return None
        return const(np.broadcast_to(value.reshape(-1), (size,)).copy())  # same dtype
    t = checked_type_or_none(e)
    if axis == ndim - 1 and isinstance(t, TensorType) and tuple(t.shape) == (size,):
        return e
    return None


def _peel(e: Expr, name: str) -> list[tuple[Expr, Expr]]:
    """``(inner, operand)`` for both operand orders of ``e = name(inner, operand)``."""
    ops = _operands(e, name)
    return [] if ops is None else [ops, (ops[1], ops[0])]


_Reading = tuple[Expr, Expr | None, Expr | None, tuple[Expr, ...]]


def _candidates(root: Expr) -> list[_Reading]:
    """``(normalised, gamma, beta, inner calls)`` readings of ``root``, the plain chain
    first."""
    out: list[_Reading] = [(root, None, None, ())]
    for inner, b in _peel(root, "add"):
        out.append((inner, None, b, (inner,)))
        out.extend((core, g, b, (inner, core)) for core, g in _peel(inner, "multiply"))
    out.extend((core, g, None, (core,)) for core, g in _peel(root, "multiply"))
    return out


def match_layer_norm(root: Expr, ty: TensorType) -> LayerNormMatch | None:
    """The layer normalisation ``root`` (of type ``ty``) computes, or None.

    >>> from relaykit import relay
    >>> x = relay.var("x", shape=(3, 4))
    >>> d = x - relay.mean(x, axis=[1], keepdims=True)
    >>> v = relay.mean(relay.power(d, relay.const(2.0)), axis=[1], keepdims=True)
    >>> y = d / relay.sqrt(v + relay.const(1e-6)) * relay.const(np.ones(4, "float32"))
    >>> match_layer_norm(y, TensorType((3, 4), "float32")).axis
    1
    """
    if ty.dtype not in _DTYPES or not ty.shape or not all(isinstance(d, int) for d in ty.shape):
        return None
    ndim = len(ty.shape)
    for core, g, b, inner in _candidates(root):
        found = _centred(core, ndim)
        if found is None:
            continue
        _, x, axis, epsilon = found
        size = int(ty.shape[axis])
        gamma = None if g is None else _along(g, ndim, axis, size)
        beta = None if b is None else _along(b, ndim, axis, size)
        if (g is None) == (gamma is None) and (b is None) == (beta is None):
            return LayerNormMatch(x, gamma, beta, axis, epsilon, inner)
    return None


def _match_at(node: Expr, ty: Type | None) -> LayerNormMatch | None:
    """The match rooted at ``node`` of type ``ty``, else None."""
    if _name(node) not in ("add", "multiply", "divide") or not isinstance(ty, TensorType):
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
        if m is None:
            return None
        if m is None:
            return None
        size = int(ty.shape[m.axis])
        ones = const(np.ones(size, ty.dtype))
        zeros = const(np.zeros(size, ty.dtype))
        gamma = ones if m.gamma is None else m.gamma
        beta = zeros if m.beta is None else m.beta
        return layer_norm(
            m.data,
            gamma,
            beta,
            axis=m.axis,
            epsilon=m.epsilon,
            center=m.beta is not None,
            scale=m.gamma is not None,
        )

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
