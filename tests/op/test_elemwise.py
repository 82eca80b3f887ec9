"""Trigonometric, hyperbolic and bitwise ops (the elementwise table of relaykit.op.tensor)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relaykit import op
from relaykit.op import TypeRelError

_FUNCS = {
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "asinh": math.asinh,
    "atanh": math.atanh,
}


@pytest.mark.parametrize("name", sorted(_FUNCS))
def test_float_unary_matches_math(run, tvar, name):
    values = [-0.75, -0.1, 0.0, 0.3, 0.9]
    out = run(getattr(op, name)(tvar("x", (5,))), np.array(values, "float32"))
    assert out.dtype == np.float32
    assert out.tolist() == pytest.approx([_FUNCS[name](v) for v in values], rel=1e-5, abs=1e-6)


def test_acosh_domain(run, tvar):
    out = run(op.acosh(tvar("x", (3,))), np.array([1.0, 2.0, 10.0], "float32"))
    assert out.tolist() == pytest.approx([math.acosh(v) for v in (1.0, 2.0, 10.0)], rel=1e-6)


def test_float_unary_rejects_integers(rel, tvar):
    with pytest.raises(TypeRelError, match="floating-point"):
        rel(op.tan(tvar("x", (2,), "int32")))


def test_bitwise_ops_match_python(run, tvar):
    a = np.array([0b1100, 7, -1], "int32")
    b = np.array([0b1010, 1, 5], "int32")
    x, y = tvar("a", (3,), "int32"), tvar("b", (3,), "int32")
    assert run(op.bitwise_and(x, y), a, b).tolist() == [
        p & q for p, q in zip(a.tolist(), b.tolist(), strict=False)
    ]
    assert run(op.bitwise_or(x, y), a, b).tolist() == [
        p | q for p, q in zip(a.tolist(), b.tolist(), strict=False)
    ]
    assert run(op.bitwise_xor(x, y), a, b).tolist() == [
        p ^ q for p, q in zip(a.tolist(), b.tolist(), strict=False)
    ]
    assert run(op.bitwise_not(x), a).tolist() == [~p for p in a.tolist()]


def test_bitwise_rejects_floats(rel, tvar):
    with pytest.raises(TypeRelError, match="integer or bool"):
        rel(op.bitwise_and(tvar("a", (2,)), tvar("b", (2,))))


def test_reinterpret_keeps_bits(run, rel, tvar):
    x = np.array([1.0, -2.5, 0.0], "float32")
    out = run(op.reinterpret(tvar("x", (3,)), "int32"), x)
    assert out.tolist() == [int.from_bytes(v.tobytes(), "little", signed=True) for v in x]
    with pytest.raises(TypeRelError, match="bit widths differ"):
        rel(op.reinterpret(tvar("x", (3,)), "int64"))
