"""Symbolic tensor dimensions: ``Any`` (unknown until run time) and size expressions.

A tensor dimension is an ``int``, :class:`Any` (unknown until run time, printed ``?``) or a
symbolic integer expression over named size variables (``te.var("n")``). Expressions are
kept in one normal form -- a polynomial with integer coefficients over atoms (variables and
opaque ``floordiv``/``floormod`` terms) -- so ``n + n == 2 * n`` and ``(2 * n) // 2 == n``
compare equal by structure. ``Any`` absorbs arithmetic (``Any() + 1`` is ``Any()``).

TVM spells these ``tvm.tir.Var``, ``tvm.tir.SizeVar``, ``tvm.tir.Any`` and
``tvm.tir.PrimExpr``; :mod:`relaykit.tir` re-exports them under those names.

>>> n = Var("n")
>>> n + n == 2 * n, floordiv(2 * n, 2) == n, str(Any() + 1)
(True, True, '?')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any as _Typing

import numpy as np

from relaykit.errors import SymbolicDimError

__all__ = [
    "Any",
    "Dim",
    "PrimExpr",
    "SizeVar",
    "SymExpr",
    "Var",
    "add",
    "evaluate",
    "floordiv",
    "floormod",
    "indexdiv",
    "indexmod",
    "is_size",
    "is_static",
    "mul",
    "vars_of",
]

Dim = _Typing  # int | PrimExpr (kept loose: relations do arithmetic on dims)


class PrimExpr:
    """A symbolic integer (TVM's ``tir.PrimExpr``) usable as a tensor dimension.

    Arithmetic with ints and other expressions simplifies to the normal form; ``==`` is
    structural equality and returns a bool; ``<`` and friends answer when the difference
    is a constant and raise :class:`~relaykit.errors.SymbolicDimError` otherwise.
    """

    __slots__ = ()
    dtype = "int32"

    def key(self) -> tuple[_Typing, ...]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PrimExpr):
            return self.key() == other.key()
        return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.key())

    def __add__(self, o: _Typing) -> _Typing:
        return add(self, o)

    def __radd__(self, o: _Typing) -> _Typing:
        return add(o, self)

    def __sub__(self, o: _Typing) -> _Typing:
        return add(self, mul(o, -1))

    def __rsub__(self, o: _Typing) -> _Typing:
        return add(o, mul(self, -1))

    def __mul__(self, o: _Typing) -> _Typing:
        return mul(self, o)

    def __rmul__(self, o: _Typing) -> _Typing:
        return mul(o, self)

    def __neg__(self) -> _Typing:
        return mul(self, -1)

    def __floordiv__(self, o: _Typing) -> _Typing:
        return floordiv(self, o)

    def __rfloordiv__(self, o: _Typing) -> _Typing:
        return floordiv(o, self)

    def __mod__(self, o: _Typing) -> _Typing:
        return floormod(self, o)

    def __rmod__(self, o: _Typing) -> _Typing:
        return floormod(o, self)

    def _cmp(self, other: _Typing, op: str) -> bool:
        diff = add(self, mul(other, -1))
        if isinstance(diff, int):
            return bool({"<": diff < 0, "<=": diff <= 0, ">": diff > 0, ">=": diff >= 0}[op])
        if op == ">=" and is_size(diff):
            return True
        raise SymbolicDimError(
            f"cannot decide {self} {op} {other}: the dimension is symbolic or unknown (?) "
            "and this operator needs its value at compile time; give the tensor a static "
            "shape or run the model on the VM (relay.vm.compile)"
        )

    def __lt__(self, o: _Typing) -> bool:
        return self._cmp(o, "<")

    def __le__(self, o: _Typing) -> bool:
        return self._cmp(o, "<=")

    def __gt__(self, o: _Typing) -> bool:
        return self._cmp(o, ">")

    def __ge__(self, o: _Typing) -> bool:
        return self._cmp(o, ">=")

    def __int__(self) -> int:
        raise SymbolicDimError(
            f"dimension {self} is symbolic or unknown (?), not an integer; this needs a "
            "static shape (or the VM, relay.vm.compile, which computes shapes at run time)"
        )

    __index__ = __int__

    def __repr__(self) -> str:
        return str(self)


class Any(PrimExpr):
    """A dimension unknown until run time (``relay.Any()``, printed ``?``)."""

    __slots__ = ("span",)

    def __init__(self, span: object = None) -> None:
        self.span = span

    def key(self) -> tuple[object, ...]:
        return ("?",)

    def __str__(self) -> str:
        return "?"


class Var(PrimExpr):
    """A named symbolic scalar (``tvm.tir.Var(name, dtype)``, made by ``te.var``).

    As a tensor dimension it stands for one size fixed per call; two ``Var`` objects
    are different variables even when their names agree (as in TVM).
    """

    __slots__ = ("name", "dtype", "span")

    def __init__(self, name: str = "v", dtype: str = "int32", span: object = None) -> None:
        self.name = str(name)
        self.dtype = str(dtype)
        self.span = span

    @property
    def name_hint(self) -> str:
        return self.name

    def key(self) -> tuple[object, ...]:
        return ("v", self.name, id(self))

    def __str__(self) -> str:
        return self.name


class SizeVar(Var):
    """A symbolic non-negative size (``tvm.tir.SizeVar``, made by ``te.size_var``)."""

    __slots__ = ()


class _Opaque(PrimExpr):
    """``floordiv(a, b)`` or ``floormod(a, b)`` that does not simplify: an atom."""

    __slots__ = ("a", "b", "op")

    def __init__(self, op: str, a: Dim, b: Dim) -> None:
        self.op, self.a, self.b = op, a, b

    def key(self) -> tuple[object, ...]:
        return (self.op, _key(self.a), _key(self.b))

    def __str__(self) -> str:
        return f"{self.op}({self.a}, {self.b})"


Monomial = tuple[PrimExpr, ...]


class SymExpr(PrimExpr):
    """A sum of integer-weighted products of atoms, in normal form (made by arithmetic)."""

    __slots__ = ("terms",)

    def __init__(self, terms: tuple[tuple[Monomial, int], ...]) -> None:
        self.terms = terms

    def key(self) -> tuple[object, ...]:
        return ("p", tuple((tuple(_key(a) for a in m), c) for m, c in self.terms))

    def __str__(self) -> str:
        parts = []
        for m, c in sorted(self.terms, key=lambda mc: not mc[0]):  # constant last
            body = "*".join(str(a) for a in m)
            if not m:
                parts.append(str(c))
            elif c == 1:
                parts.append(body)
            elif c == -1:
                parts.append("-" + body)
            else:
                parts.append(f"{c}*{body}")
        text = " + ".join(parts).replace("+ -", "- ")
        return f"({text})"


def _key(d: Dim) -> tuple[object, ...]:
    return ("c", int(d)) if isinstance(d, int) else d.key()


def is_size(d: Dim) -> bool:
    """Whether ``d`` is provably non-negative (an int >= 0, a size variable, or a
    polynomial of size variables with non-negative coefficients)."""
    if isinstance(d, int):
        return d >= 0
    if isinstance(d, SizeVar):
        return True
    if isinstance(d, SymExpr):
        return all(c >= 0 and all(isinstance(a, SizeVar) for a in m) for m, c in d.terms)
    return False


def _poly(d: _Typing) -> dict[Monomial, int]:
    if isinstance(d, SymExpr):
        return dict(d.terms)
    if isinstance(d, PrimExpr):
        return {(d,): 1}
    return {(): int(d)} if int(d) else {}


def _from_poly(p: dict[Monomial, int]) -> Dim:
    items = sorted(((m, c) for m, c in p.items() if c), key=lambda mc: [_key(a) for a in mc[0]])
    if not items:
        return 0
    if len(items) == 1:
        m, c = items[0]
        if not m:
            return c
        if len(m) == 1 and c == 1:
            return m[0]
    return SymExpr(tuple(items))


def _check(x: _Typing) -> _Typing:
    if isinstance(x, PrimExpr):
        return x
    if isinstance(x, int | np.integer):
        return int(x)
    return NotImplemented


def add(a: _Typing, b: _Typing) -> _Typing:
    """``a + b`` in normal form (``Any`` if either is ``Any``)."""
    a, b = _check(a), _check(b)
    if a is NotImplemented or b is NotImplemented:
        return NotImplemented
    if isinstance(a, Any) or isinstance(b, Any):
        return Any()
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    p = _poly(a)
    for m, c in _poly(b).items():
        p[m] = p.get(m, 0) + c
    return _from_poly(p)


def mul(a: _Typing, b: _Typing) -> _Typing:
    """``a * b`` in normal form (``Any`` if either is ``Any``, unless the other is 0)."""
    a, b = _check(a), _check(b)
    if a is NotImplemented or b is NotImplemented:
        return NotImplemented
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 0 or b == 0:
        return 0
    if isinstance(a, Any) or isinstance(b, Any):
        return Any()
    p: dict[Monomial, int] = {}
    for ma, ca in _poly(a).items():
        for mb, cb in _poly(b).items():
            m = tuple(sorted((*ma, *mb), key=_key))
            p[m] = p.get(m, 0) + ca * cb
    return _from_poly(p)


def _divide(op: str, a: _Typing, b: _Typing) -> _Typing:
    a, b = _check(a), _check(b)
    if a is NotImplemented or b is NotImplemented:
        return NotImplemented
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise SymbolicDimError(f"{op}({a}, 0): division by zero in a shape")
        return a // b if op == "floordiv" else a % b
    if isinstance(a, Any) or isinstance(b, Any):
        return Any()
    if isinstance(b, int) and b != 0:
        if all(c % b == 0 for c in _poly(a).values()):
            return _from_poly({m: c // b for m, c in _poly(a).items()}) if op == "floordiv" else 0
        if b == 1:
            return a if op == "floordiv" else 0
    elif _key(a) == _key(b):
        return 1 if op == "floordiv" else 0
    else:
        q = _exact_quotient(_poly(a), _poly(b))
        if q is not None:
            return q if op == "floordiv" else 0
    return _Opaque(op, a, b)


def _exact_quotient(pa: dict[Monomial, int], pb: dict[Monomial, int]) -> Dim | None:
    """``a / b`` when ``b`` is one monomial that divides every term of ``a`` exactly."""
    if len(pb) != 1:
        return None
    ((mb, cb),) = pb.items()
    out: dict[Monomial, int] = {}
    for ma, ca in pa.items():
        rest = list(ma)
        for atom in mb:
            hit = next((i for i, x in enumerate(rest) if _key(x) == _key(atom)), None)
            if hit is None:
                return None
            rest.pop(hit)
        if ca % cb:
            return None
        out[tuple(rest)] = ca // cb
    return _from_poly(out)


def floordiv(a: _Typing, b: _Typing) -> _Typing:
    """``a // b`` (rounding down), simplified when ``b`` divides every coefficient."""
    return _divide("floordiv", a, b)


def floormod(a: _Typing, b: _Typing) -> _Typing:
    """``a % b`` (sign of ``b``), simplified when ``b`` divides every coefficient."""
    return _divide("floormod", a, b)


#: TVM's names for index arithmetic (on non-negative sizes, as in shapes).
indexdiv = floordiv
indexmod = floormod


def is_static(d: object) -> bool:
    """Whether a dimension is a concrete integer (not ``Any`` or symbolic)."""
    return isinstance(d, int | np.integer)


def vars_of(d: Dim) -> list[Var]:
    """The variables a dimension mentions, in first-use order."""
    out: list[Var] = []
    if isinstance(d, Var):
        out.append(d)
    elif isinstance(d, SymExpr):
        for m, _ in d.terms:
            for atom in m:
                out.extend(v for v in vars_of(atom) if v not in out)
    elif isinstance(d, _Opaque):
        for part in (d.a, d.b):
            out.extend(v for v in vars_of(part) if v not in out)
    return out


def evaluate(d: Dim, env: Mapping[Var, int]) -> int:
    """The value of a dimension with its variables bound by ``env``."""
    if isinstance(d, int):
        return int(d)
    if isinstance(d, Var):
        if d not in env:
            raise SymbolicDimError(f"size variable {d} is not bound")
        return int(env[d])
    if isinstance(d, SymExpr):
        total = 0
        for m, c in d.terms:
            prod = c
            for atom in m:
                prod *= evaluate(atom, env)
            total += prod
        return total
    if isinstance(d, _Opaque):
        a, b = evaluate(d.a, env), evaluate(d.b, env)
        return a // b if d.op == "floordiv" else a % b
    raise SymbolicDimError(f"dimension {d} has no value (it is unknown until run time)")
