import numpy as np
import pytest

from relaykit import op
from relaykit.errors import StructuralMismatchError
from relaykit.ir import (
    Function,
    IRModule,
    Let,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    assert_structural_equal,
    const,
    structural_equal,
    structural_hash,
)

T = TensorType((2, 2))


def make(names=("x", "y")):
    x, y = Var(names[0], T), Var(names[1], T)
    z = op.add(x, y)
    return Function([x, y], op.multiply(z, z))


def test_alpha_equivalent_functions_are_equal_and_hash_equal():
    a, b = make(), make(("p", "q"))
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)


def test_sharing_is_part_of_the_structure():
    x = Var("x", T)
    shared = op.add(x, x)
    a = Function([x], op.multiply(shared, shared))
    y = Var("x", T)
    b = Function([y], op.multiply(op.add(y, y), op.add(y, y)))
    assert not structural_equal(a, b)


def test_free_vars_compare_by_identity_unless_mapped():
    x, y = Var("x", T), Var("y", T)
    assert not structural_equal(op.add(x, x), op.add(y, y))
    assert structural_equal(op.add(x, x), op.add(y, y), map_free_vars=True)
    # map_free_vars still requires a consistent bijection.
    assert not structural_equal(op.add(x, x), op.add(x, y), map_free_vars=True)


def test_constants_attrs_and_tuples():
    c1 = const(np.arange(4, dtype="float32").reshape(2, 2))
    c2 = const(np.arange(4, dtype="float32").reshape(2, 2))
    c3 = const(np.ones((2, 2), "float32"))
    assert structural_equal(c1, c2) and not structural_equal(c1, c3)
    assert structural_hash(c1) == structural_hash(c2)
    x = Var("x", TensorType((1, 4)))
    assert not structural_equal(op.reshape(x, (4, 1)), op.reshape(x, (2, 2)))
    t = Tuple([x, x])
    assert structural_equal(TupleGetItem(t, 0), TupleGetItem(t, 0))
    assert not structural_equal(TupleGetItem(t, 0), TupleGetItem(t, 1))


def test_let_binds_its_variable():
    def build(name):
        v = Var(name, T)
        x = Var("x", T)
        return Function([x], Let(v, op.add(x, x), op.multiply(v, v)))

    assert structural_equal(build("a"), build("b"))


def test_assert_reports_first_mismatching_path():
    x = Var("x", T)
    a = Function([x], op.add(op.exp(x), x))
    y = Var("x", T)
    b = Function([y], op.add(op.log(y), y))
    with pytest.raises(
        StructuralMismatchError, match=r"root\.body\.args\[0\]\.op: operator exp vs log"
    ):
        assert_structural_equal(a, b)


def test_modules_compare_function_by_function():
    m1, m2 = IRModule.from_expr(make()), IRModule.from_expr(make(("a", "b")))
    assert structural_equal(m1, m2)
    m2["other"] = make()
    assert not structural_equal(m1, m2)


def test_deep_chain_equal_and_hash_iteratively():
    def chain(n):
        x = Var("x", T)
        y = x
        for _ in range(n):
            y = op.nn.relu(y)
        return Function([x], y)

    a, b = chain(50_000), chain(50_000)
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)


def test_constants_and_empty_tuples_compare_by_value_shared_or_not():
    """A constant or () used twice equals two equal copies (they are values, not graph
    nodes), and the hash agrees; a shared call still differs from two copies."""
    unit, v = Tuple([]), Var("_")
    shared, copies = Let(v, unit, unit), Let(v, Tuple([]), Tuple([]))
    assert structural_equal(shared, copies)
    assert structural_hash(shared) == structural_hash(copies)
    c = const(2.0)
    twice, apart = op.add(c, c), op.add(const(2.0), const(2.0))
    assert structural_equal(twice, apart)
    assert structural_hash(twice) == structural_hash(apart)
    x = Var("x", T)
    call = op.negative(x)
    assert not structural_equal(op.add(call, call), op.add(op.negative(x), call))
