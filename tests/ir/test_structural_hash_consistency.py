"""structural_hash agrees with structural_equal: free variables, sharing, float attrs."""

import itertools

import numpy as np

from relaykit import op
from relaykit.ir import Let, TensorType, Tuple, Var, const, structural_equal, structural_hash
from relaykit.ir.structural import data_equal
from relaykit.tir import IntImm

T = TensorType((2,))


def _cases():
    x, y = Var("x", T), Var("y", T)
    a = op.add(x, x)
    b = op.add(x, x)
    v1, v2 = Var("v1"), Var("v2")
    return [
        x,
        y,
        Var("x", T),
        op.add(x, y),
        op.add(y, x),
        op.add(a, a),  # one shared node
        op.add(a, b),  # two equal copies
        op.add(b, b),
        Let(v1, const(1), v1),
        Let(v2, const(1), v2),
        Let(v1, const(1), v2),
        Tuple([x, const(2.0)]),
        Tuple([x, const(-0.0)]),
        Tuple([x, const(0.0)]),
        Tuple([y, const(2.0)]),
    ]


def test_hash_is_equal_exactly_when_equal_both_modes():
    cases = _cases()
    for mode in (False, True):
        for p, q in itertools.product(cases, repeat=2):
            eq = structural_equal(p, q, map_free_vars=mode)
            assert eq == structural_equal(q, p, map_free_vars=mode)
            same = structural_hash(p, map_free_vars=mode) == structural_hash(q, map_free_vars=mode)
            assert eq == same, (p, q, mode)


def test_free_vars_distinct_unless_mapped():
    x, y = Var("x", T), Var("y", T)
    assert structural_hash(x) != structural_hash(y)
    assert structural_hash(x, map_free_vars=True) == structural_hash(y, map_free_vars=True)
    # sharing is part of the structure: add(a, a) differs from add(a, copy of a)
    a, b = op.add(x, x), op.add(x, x)
    assert not structural_equal(op.add(a, a), op.add(a, b))
    assert structural_hash(op.add(a, a)) != structural_hash(op.add(a, b))


def test_float_attrs_compare_with_absolute_tolerance():
    x = Var("x", TensorType((1, 2, 3, 3)))
    eps32 = float(np.float32(1e-5))  # 9.999999747378752e-06, differs by ~2.5e-13
    p = op.nn.leaky_relu(x, alpha=1e-5)
    q = op.nn.leaky_relu(x, alpha=eps32)
    r = op.nn.leaky_relu(x, alpha=2e-5)
    assert abs(1e-5 - eps32) < 1e-9
    assert structural_equal(p, q) and structural_hash(p) == structural_hash(q)
    assert not structural_equal(p, r)


def test_data_equal_numbers_and_containers():
    assert data_equal(1e-5, 1e-5 + 1e-12)
    assert not data_equal(1e-5, 1e-5 + 1e-8)
    assert data_equal((1, 2.0), [1, 2.0 + 1e-12])
    assert not data_equal(1, 2)
    assert not data_equal(True, 2)
    assert data_equal({"a": 0.5}, {"a": 0.5 + 1e-11})


def test_sequences_compare_as_arrays():
    # tuples and lists are both TVM Arrays; typed integers equal plain ones
    assert structural_equal((10, 10), [IntImm("int32", 10), IntImm("int32", 10)])
    assert structural_hash((10, 10)) == structural_hash([IntImm("int32", 10), 10])
    assert not structural_equal((10, 10), [10])
    x = Var("x", T)
    assert structural_equal([op.add(x, x)], (op.add(x, x),))
    assert not structural_equal([op.add(x, x)], [op.add(x, Var("y", T))])
