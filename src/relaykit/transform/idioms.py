"""The idioms: chains of small operators that mean one operator, recognised here once.

Exporters and hand-written modules spell some operators as chains. This module is the
one table of those chains; everything that looks for them asks it:

============ ================================================================ =================
idiom        chain (any association of the products, either operand order)   operator
============ ================================================================ =================
gelu         ``0.5 * x * (1 + erf(x / sqrt 2))`` (or ``x * (1 / sqrt 2)``)    ``nn.gelu``
gelu_tanh    ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))``      (none: backends)
layer_norm   ``(x - mean) / sqrt(var + eps) [* gamma] [+ beta]``              ``nn.layer_norm``
============ ================================================================ =================

Who asks: the ONNX importer (the chains torch writes at opsets without ``Gelu`` and
``LayerNormalization`` become the operators at import), the host build's passes
``FuseGelu`` and ``FuseLayerNorm`` (:mod:`.gelu`, :mod:`.layer_norm`: modules built by
hand), and the backends' pattern tables and code generators (dnnl's composite checks,
its lowering of a ``dnnl.layer_norm`` composite, its TVM-compatible rewrites).

A match is exact: constants are checked to ``rtol`` (by default float32 rounding), the
operand that recurs is the same expression, axes and parameter shapes fit.

>>> import math
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 8))
>>> cdf = relay.erf(x / relay.const(math.sqrt(2.0))) + relay.const(1.0)
>>> match_gelu(relay.const(0.5) * (x * cdf)) is x
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from relaykit.ir.expr import Call, Constant, Expr, checked_type_or_none, const
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType
from relaykit.op.nn import layer_norm

__all__ = [
    "IDIOMS",
    "RTOL",
    "FLOAT_DTYPES",
    "LayerNormMatch",
    "layer_norm_call",
    "match_gelu",
    "match_gelu_tanh",
    "match_layer_norm",
]

#: The idioms, by name, and the operator each one is (None: no single operator).
IDIOMS: dict[str, str | None] = {
    "gelu": "nn.gelu",
    "gelu_tanh": None,
    "layer_norm": "nn.layer_norm",
}

#: The default relative tolerance of a constant: float32 rounding.
RTOL = 2e-7
#: The dtypes the host's one-operator forms are exact for.
FLOAT_DTYPES = frozenset({"float32", "float64"})

_SQRT2 = math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def _name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _is(e: Expr, value: float, rtol: float, rank: int) -> bool:
    """Whether ``e`` is a one-element constant equal to ``value`` to ``rtol``, of rank at
    most ``rank`` (0: a scalar, which broadcasts nothing)."""
    if type(e) is not Constant:
        return False
    data = e.data.numpy()
    if data.size != 1 or data.ndim > rank:
        return False
    return abs(float(data.reshape(())) - value) <= rtol * abs(value)


def _pair(e: Expr, name: str) -> list[tuple[Expr, Expr]]:
    """``(a, b)`` and ``(b, a)`` of ``e = name(a, b)``, else nothing."""
    if _name(e) != name or len(e.args) != 2:  # type: ignore[attr-defined]
        return []
    a, b = e.args  # type: ignore[attr-defined]
    return [(a, b), (b, a)]


def _triples(root: Expr) -> list[tuple[Expr, Expr, Expr]]:
    """The three factors of ``root``, a product of a product and a factor, in every order
    that can be ``(x, cdf, half)``."""
    out = []
    for left, right in _pair(root, "multiply"):
        for a, b in _pair(left, "multiply"):
            out += [(a, b, right), (a, right, b), (b, a, right), (b, right, a)]
            out += [(right, a, b), (right, b, a)]
    return out


def _half_x_cdf(root: Expr, cdf_input: object, rtol: float, rank: int) -> Expr | None:
    """``x`` when ``root = 0.5 * x * cdf`` with ``cdf_input(cdf) is x``."""
    for x, cdf, half in _triples(root):
        if _is(half, 0.5, rtol, rank) and cdf_input(cdf) is x:  # type: ignore[operator]
            return x
    return None


# -- gelu ------------------------------------------------------------------------------------


def _erf_cdf_input(cdf: Expr, rtol: float, rank: int) -> Expr | None:
    """``x`` of ``cdf = erf(x / sqrt 2) + 1`` (or ``x * (1 / sqrt 2)``, ``1 + erf``)."""
    for e, one in _pair(cdf, "add"):
        if _name(e) != "erf" or not _is(one, 1.0, rtol, rank):
            continue
        inner = e.args[0]  # type: ignore[attr-defined]
        if _name(inner) == "divide" and _is(inner.args[1], _SQRT2, rtol, rank):
            return inner.args[0]
        for x, c in _pair(inner, "multiply"):
            if _is(c, 1.0 / _SQRT2, rtol, rank):
                return x
    return None


def match_gelu(root: Expr, *, rtol: float = RTOL, rank: int = 0) -> Expr | None:
    """``x`` when ``root`` computes ``0.5 x (1 + erf(x / sqrt 2))``, else None; constants
    of rank at most ``rank``, equal to ``rtol``."""
    return _half_x_cdf(root, lambda cdf: _erf_cdf_input(cdf, rtol, rank), rtol, rank)


def _cube_of(e: Expr, rtol: float, rank: int) -> Expr | None:
    """``x`` of ``e = x ** 3`` or ``(x * x) * x`` (either operand order)."""
    if _name(e) == "power" and _is(e.args[1], 3.0, rtol, rank):  # type: ignore[attr-defined]
        return e.args[0]  # type: ignore[attr-defined]
    for square, x in _pair(e, "multiply"):
        if _name(square) == "multiply" and square.args[0] is x and square.args[1] is x:  # type: ignore[attr-defined]
            return x
    return None


def _tanh_cdf_input(cdf: Expr, rtol: float, rank: int) -> Expr | None:
    """``x`` of ``cdf = 1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))``."""
    for t, one in _pair(cdf, "add"):
        if _name(t) != "tanh" or not _is(one, 1.0, rtol, rank):
            continue
        for inner, c in _pair(t.args[0], "multiply"):  # type: ignore[attr-defined]
            if not _is(c, _SQRT_2_PI, rtol, rank):
                continue
            for x, term in _pair(inner, "add"):
                for cube, k in _pair(term, "multiply"):
                    if _is(k, 0.044715, rtol, rank) and _cube_of(cube, rtol, rank) is x:
                        return x
    return None


def match_gelu_tanh(root: Expr, *, rtol: float = RTOL, rank: int = 0) -> Expr | None:
    """``x`` when ``root`` computes GELU's tanh approximation
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``, else None."""
    return _half_x_cdf(root, lambda cdf: _tanh_cdf_input(cdf, rtol, rank), rtol, rank)


# -- layer_norm ------------------------------------------------------------------------------


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


def _variance_of(var: Expr, d: Expr, x: Expr, mu: Expr, ndim: int) -> int | None:
    """The axis of ``var``, the biased variance of ``d = x - mu`` along one axis
    (``mean(d * d)``, ``mean(power(d, 2))`` or ``variance(x, mu)``), else None."""
    if _name(var) == "variance":
        a = var.attrs  # type: ignore[attr-defined]
        args = var.args  # type: ignore[attr-defined]
        if a.unbiased or a.exclude or not a.keepdims or args[0] is not x or args[1] is not mu:
            return None
        axes = a.axis
        if not axes or len(axes) != 1 or not -ndim <= int(axes[0]) < ndim:
            return None
        return int(axes[0]) % ndim
    axis = _mean_axis(var, ndim)
    if axis is None:
        return None
    square = var.args[0]  # type: ignore[attr-defined]
    prod = _operands(square, "multiply")
    power = _operands(square, "power")
    if prod is not None and prod[0] is d and prod[1] is d:
        return axis
    if power is not None and power[0] is d and _scalar(power[1]) == 2.0:
        return axis
    return None


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
    if epsilon is None or sub is None:
        return None
    x, mu = sub
    axis = _mean_axis(mu, ndim)
    if axis is None or mu.args[0] is not x:  # type: ignore[attr-defined]
        return None
    if _variance_of(var, d, x, mu, ndim) != axis:
        return None
    return d, x, axis, epsilon


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


def match_layer_norm(
    root: Expr, ty: TensorType, *, dtypes: frozenset[str] = FLOAT_DTYPES
) -> LayerNormMatch | None:
    """The layer normalisation ``root`` (of type ``ty``, a tensor of one of ``dtypes``)
    computes over one axis, or None. ``gamma`` / ``beta`` of the match are constants
    along that axis (made vectors) or, for the last axis, tensors of its length.

    >>> from relaykit import relay
    >>> x = relay.var("x", shape=(3, 4))
    >>> d = x - relay.mean(x, axis=[1], keepdims=True)
    >>> v = relay.mean(relay.power(d, relay.const(2.0)), axis=[1], keepdims=True)
    >>> y = d / relay.sqrt(v + relay.const(1e-6)) * relay.const(np.ones(4, "float32"))
    >>> match_layer_norm(y, TensorType((3, 4), "float32")).axis
    1
    """
    if ty.dtype not in dtypes or not ty.shape or not all(isinstance(d, int) for d in ty.shape):
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


def layer_norm_call(m: LayerNormMatch, ty: TensorType) -> Expr:
    """The ``nn.layer_norm`` call of match ``m`` (of a value of type ``ty``): unit gamma and
    zero beta, with ``scale`` / ``center`` off, where the chain has none."""
    size = int(ty.shape[m.axis])
    gamma = const(np.ones(size, ty.dtype)) if m.gamma is None else m.gamma
    beta = const(np.zeros(size, ty.dtype)) if m.beta is None else m.beta
    return layer_norm(
        m.data,
        gamma,
        beta,
        axis=m.axis,
        epsilon=m.epsilon,
        center=m.beta is not None,
        scale=m.gamma is not None,
    )
