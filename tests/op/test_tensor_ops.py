"""Elementwise, broadcasting, comparison, cast/clip/where and init operators."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special

from relaykit import op
from relaykit.ir import TensorType, TupleType, const
from relaykit.op import TypeRelError

BINARY_REFERENCE = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
    "maximum": max,
    "minimum": min,
    "power": lambda a, b: a**b,
    "floor_divide": lambda a, b: math.floor(a / b),
    "floor_mod": lambda a, b: a - math.floor(a / b) * b,
    "mod": math.fmod,
}


@pytest.mark.parametrize("name", sorted(BINARY_REFERENCE))
def test_binary_float_against_python(name, run, tvar, rng):
    a = rng.uniform(0.5, 3.0, size=(2, 3)).astype("float32")
    b = rng.uniform(0.5, 3.0, size=(3,)).astype("float32")
    call = getattr(op, name)(tvar("a", (2, 3)), tvar("b", (3,)))
    out = run(call, a, b)
    assert out.dtype == np.float32 and out.shape == (2, 3)
    want = [
        [BINARY_REFERENCE[name](float(a[i, j]), float(b[j])) for j in range(3)] for i in range(2)
    ]
    np.testing.assert_allclose(out, np.array(want), rtol=1e-5, atol=1e-5)


def test_integer_division_and_mod_round_toward_zero(run, tvar):
    a = np.array([7, -7, 7, -7, 0], dtype="int32")
    b = np.array([2, 2, -2, -2, 3], dtype="int32")
    div = run(op.divide(tvar("a", (5,), "int32"), tvar("b", (5,), "int32")), a, b)
    assert div.dtype == np.int32
    assert div.tolist() == [int(x / y) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    mod = run(op.mod(tvar("a", (5,), "int32"), tvar("b", (5,), "int32")), a, b)
    assert mod.tolist() == [
        int(math.fmod(x, y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)
    ]
    fmod = run(op.floor_mod(tvar("a", (5,), "int32"), tvar("b", (5,), "int32")), a, b)
    assert fmod.tolist() == [x % y for x, y in zip(a.tolist(), b.tolist(), strict=True)]


def test_broadcast_relation(rel, tvar):
    call = op.add(tvar("a", (4, 1, 3)), tvar("b", (5, 1)))
    assert rel(call) == TensorType((4, 5, 3), "float32")
    assert rel(op.multiply(tvar("a", ()), tvar("b", (2, 2)))) == TensorType((2, 2))


def test_broadcast_relation_errors(rel, tvar):
    with pytest.raises(TypeRelError, match=r"cannot be broadcast: dimension -1 is 3 .* and 4"):
        rel(op.add(tvar("a", (2, 3)), tvar("b", (2, 4))))
    with pytest.raises(TypeRelError, match=r"same dtype.*float32.*int32.*cast"):
        rel(op.add(tvar("a", (2,)), tvar("b", (2,), "int32")))
    with pytest.raises(TypeRelError, match=r"rhs \(second input\) must be a tensor"):
        rel(op.add(tvar("a", (2,)), tvar("b", (2,))), TensorType((2,)), TupleType([]))


@pytest.mark.parametrize(
    "name, fn",
    [
        ("equal", lambda a, b: a == b),
        ("not_equal", lambda a, b: a != b),
        ("less", lambda a, b: a < b),
        ("less_equal", lambda a, b: a <= b),
        ("greater", lambda a, b: a > b),
        ("greater_equal", lambda a, b: a >= b),
    ],
)
def test_comparisons_return_bool(name, fn, run, tvar):
    a = np.array([[1, 2, 3], [3, 2, 1]], dtype="int32")
    b = np.array([2, 2, 2], dtype="int32")
    call = getattr(op, name)(tvar("a", (2, 3), "int32"), tvar("b", (3,), "int32"))
    out = run(call, a, b)
    assert out.dtype == np.bool_
    want = [[fn(int(a[i, j]), int(b[j])) for j in range(3)] for i in range(2)]
    assert out.tolist() == want


def test_logical_ops(run, tvar):
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    va, vb = tvar("a", (4,), "bool"), tvar("b", (4,), "bool")
    assert run(op.logical_and(va, vb), a, b).tolist() == [True, False, False, False]
    assert run(op.logical_or(va, vb), a, b).tolist() == [True, True, True, False]
    assert run(op.logical_xor(va, vb), a, b).tolist() == [False, True, True, False]
    assert run(op.logical_not(va), a).tolist() == [False, False, True, True]


def test_logical_rejects_float(rel, tvar):
    with pytest.raises(TypeRelError, match="bool or integer"):
        rel(op.logical_and(tvar("a", (2,)), tvar("b", (2,))))


def test_shifts(run, rel, tvar):
    a = np.array([1, 8, -16], dtype="int32")
    s = np.array([2, 1, 2], dtype="int32")
    va, vs = tvar("a", (3,), "int32"), tvar("s", (3,), "int32")
    assert run(op.left_shift(va, vs), a, s).tolist() == [4, 16, -64]
    assert run(op.right_shift(va, vs), a, s).tolist() == [0, 4, -4]
    with pytest.raises(TypeRelError, match="integer tensors, got dtype float32"):
        rel(op.left_shift(tvar("a", (3,)), tvar("b", (3,))))


UNARY_REFERENCE = {
    "negative": lambda x: -x,
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "trunc": math.trunc,
    "sign": lambda x: float((x > 0) - (x < 0)),
    "exp": math.exp,
    "log": math.log,
    "log2": math.log2,
    "sqrt": math.sqrt,
    "rsqrt": lambda x: 1 / math.sqrt(x),
    "tanh": math.tanh,
    "sigmoid": lambda x: 1 / (1 + math.exp(-x)),
    "erf": math.erf,
    "sin": math.sin,
    "cos": math.cos,
}
_PREPROCESS = {
    "log": lambda x: np.abs(x) + 0.1,
    "log2": lambda x: np.abs(x) + 0.1,
    "sqrt": np.abs,
    "rsqrt": lambda x: np.abs(x) + 0.1,
}


@pytest.mark.parametrize("name", sorted(UNARY_REFERENCE))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_against_math(name, dtype, run, tvar, rng):
    x = rng.uniform(-4, 4, size=(3, 5)).astype(dtype)
    inp = _PREPROCESS.get(name, lambda v: v)(x).astype(dtype)
    out = run(getattr(op, name)(tvar("x", (3, 5), dtype)), inp)
    assert out.dtype == np.dtype(dtype)
    want = np.array([[UNARY_REFERENCE[name](float(v)) for v in row] for row in inp.tolist()])
    tol = 1e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)


def test_float_only_unary_rejects_integers(rel, tvar):
    with pytest.raises(TypeRelError, match="floating-point.*cast integers"):
        rel(op.exp(tvar("x", (2,), "int32")))


def test_erf_is_accurate_in_float64(run, tvar):
    x = np.concatenate([np.linspace(-7, 7, 2801), [0.0, 2.5, -2.5, 1e-8, 40.0]])
    out = run(op.erf(tvar("x", x.shape, "float64")), x)
    want = np.array([math.erf(v) for v in x.tolist()])
    assert np.max(np.abs(out - want)) < 1e-14
    np.testing.assert_allclose(out, scipy.special.erf(x), rtol=1e-14, atol=1e-15)


def test_erf_float32_within_one_ulp(run, tvar):
    x = np.linspace(-5, 5, 4001, dtype="float32")
    out = run(op.erf(tvar("x", x.shape)), x)
    want = np.array([math.erf(float(v)) for v in x], dtype="float32")
    ulps = np.abs(out.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulps.max() <= 1


def test_erf_special_values(run, tvar):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0])
    out = run(op.erf(tvar("x", (5,), "float64")), x)
    assert out[0] == 1.0 and out[1] == -1.0 and np.isnan(out[2])
    assert out[3] == 0.0 and np.signbit(out[4])


def test_sigmoid_is_stable_for_large_inputs(run, tvar):
    x = np.array([-1000.0, -100.0, 0.0, 100.0, 1000.0], dtype="float32")
    out = run(op.sigmoid(tvar("x", (5,))), x)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, [0.0, 3.7200760e-44, 0.5, 1.0, 1.0], atol=1e-30)


def test_round_halves_away_from_zero(run, tvar):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999997, 2.4, -2.6], dtype="float32")
    out = run(op.round(tvar("x", (8,))), x)
    assert out.tolist() == [1.0, 2.0, 3.0, -1.0, -2.0, 0.0, 2.0, -3.0]


def test_float16_stays_float16(run, tvar):
    x = np.array([1.0, 2.0], dtype="float16")
    assert run(op.sqrt(tvar("x", (2,), "float16")), x).dtype == np.float16
    assert (
        run(op.add(tvar("a", (2,), "float16"), tvar("b", (2,), "float16")), x, x).dtype
        == np.float16
    )


def test_isnan_isinf_isfinite(run, tvar):
    x = np.array([1.0, np.nan, np.inf, -np.inf], dtype="float32")
    v = tvar("x", (4,))
    assert run(op.isnan(v), x).tolist() == [False, True, False, False]
    assert run(op.isinf(v), x).tolist() == [False, False, True, True]
    assert run(op.isfinite(v), x).tolist() == [True, False, False, False]


def test_clip(run, rel, tvar):
    call = op.clip(tvar("x", (4,)), 0.0, 6.0)
    assert dict(call.attrs) == {"a_min": 0.0, "a_max": 6.0}
    assert call.attrs.type_key == "relay.attrs.ClipAttrs"
    x = np.array([-1.0, 3.0, 7.0, 6.0], dtype="float32")
    assert run(call, x).tolist() == [0.0, 3.0, 6.0, 6.0]
    xi = np.array([-5, 3, 9], dtype="int32")
    out = run(op.clip(tvar("x", (3,), "int32"), -1, 4), xi)
    assert out.dtype == np.int32 and out.tolist() == [-1, 3, 4]
    with pytest.raises(TypeRelError, match="a_min .* greater than a_max"):
        rel(op.clip(tvar("x", (4,)), 5, 1))


def test_cast(run, rel, tvar):
    call = op.cast(tvar("x", (3,)), "int32")
    assert rel(call) == TensorType((3,), "int32")
    assert run(call, np.array([1.7, -1.7, 0.2], dtype="float32")).tolist() == [1, -1, 0]
    assert op.cast(tvar("x", (3,)), np.float16).attrs.dtype == "float16"
    assert tvar("x", (3,)).astype("int8").attrs == op.cast(tvar("y", (3,)), "int8").attrs


def test_where(run, rel, tvar):
    call = op.where(tvar("c", (2, 1), "bool"), tvar("x", (3,)), tvar("y", (2, 3)))
    assert rel(call) == TensorType((2, 3))
    c = np.array([[True], [False]])
    x = np.array([1, 2, 3], dtype="float32")
    y = np.full((2, 3), -1, dtype="float32")
    assert run(call, c, x, y).tolist() == [[1, 2, 3], [-1, -1, -1]]
    with pytest.raises(TypeRelError, match="x and y must have the same dtype"):
        rel(op.where(tvar("c", (2,), "bool"), tvar("x", (2,)), tvar("y", (2,), "int32")))
    # as TVM, a float condition is accepted (nonzero is true)
    assert rel(op.where(tvar("c", (2,)), tvar("x", (2,)), tvar("y", (2,)))).dtype == "float32"


def test_zeros_ones_full(run, rel, tvar):
    z = op.zeros((2, 3), "float32")
    assert z.args == () and rel(z) == TensorType((2, 3))
    assert run(z).tolist() == [[0, 0, 0], [0, 0, 0]]
    o = op.ones(4, "int8")
    assert run(o).dtype == np.int8 and run(o).tolist() == [1, 1, 1, 1]
    f = op.full(const(2.5), (2,), "float32")
    assert run(f, np.array(2.5, dtype="float32")).tolist() == [2.5, 2.5]
    f2 = op.full(const(3), (1, 2))
    assert rel(f2, TensorType((), "int32")) == TensorType((1, 2), "int32")
    with pytest.raises(TypeRelError, match="fill_value must be a scalar"):
        rel(op.full(tvar("v", (2,)), (3,)))


def test_like_ops_and_copy(run, tvar):
    x = np.arange(6, dtype="float32").reshape(2, 3)
    v = tvar("x", (2, 3))
    assert run(op.zeros_like(v), x).tolist() == [[0] * 3] * 2
    assert run(op.ones_like(v), x).tolist() == [[1] * 3] * 2
    assert run(op.full_like(v, const(7.0)), x, np.array(7.0, "float32")).tolist() == [[7] * 3] * 2
    out = run(op.copy(v), x)
    assert out.tolist() == x.tolist() and out is not x


def test_operator_sugar_uses_registered_ops(rel, tvar):
    x = tvar("x", (2,))
    assert (x + x).op is op.get("add") and (x * 2.0).op is op.get("multiply")
    assert rel(x < x) == TensorType((2,), "bool")
