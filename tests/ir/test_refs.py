"""Mutable references through every layer: types, printing, parsing, evaluation, traversal."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ExecutionError, RelayTypeError
from relaykit.ir import RefCreate, RefRead, RefType, RefWrite, TensorType, TupleType
from relaykit.runtime.container import RefValue

F32 = TensorType((2,), "float32")


def _typed(expr):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(expr))
    return mod["main"]


def test_types_of_create_read_and_write():
    x = relay.var("x", F32)
    r = relay.var("r")
    body = relay.Let(r, RefCreate(x), relay.Tuple([RefRead(r), RefWrite(r, x), r]))
    fn = _typed(relay.Function([x], body))
    assert fn.checked_type.ret_type == TupleType([F32, TupleType([]), RefType(F32)])


def test_writing_a_value_of_another_type_is_a_type_error():
    x = relay.var("x", F32)
    y = relay.var("y", TensorType((3,), "float32"))
    r = relay.var("r")
    body = relay.Let(r, RefCreate(x), RefWrite(r, y))
    with pytest.raises(RelayTypeError, match=r"ref_write stores a Tensor\[\(3\), float32\]"):
        _typed(relay.Function([x, y], body))


def test_reading_a_non_reference_is_a_type_error():
    x = relay.var("x", F32)
    with pytest.raises(RelayTypeError, match="RefRead needs a reference"):
        _typed(relay.Function([x], RefRead(x)))


def test_interpreter_runs_a_counter_in_program_order():
    # r = ref(x); r := r! + x; r := r! * x; r!   ==  (x + x) * x
    x = relay.var("x", F32)
    r, u1, u2 = relay.var("r"), relay.var("u1"), relay.var("u2")
    body = relay.Let(
        r,
        RefCreate(x),
        relay.Let(
            u1,
            RefWrite(r, RefRead(r) + x),
            relay.Let(u2, RefWrite(r, RefRead(r) * x), RefRead(r)),
        ),
    )
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    data = np.array([1.5, -2.0], dtype="float32")
    out = relay.create_executor(mod=mod).evaluate()(data)
    np.testing.assert_allclose(out.numpy(), (data.astype("float64") * 2) * data, rtol=1e-6)


def test_each_evaluation_of_ref_create_makes_a_new_cell():
    x = relay.var("x", F32)
    a, b = relay.var("a"), relay.var("b")
    body = relay.Let(
        a,
        RefCreate(x),
        relay.Let(b, RefCreate(x), relay.Tuple([RefWrite(a, x + x), RefRead(b), a])),
    )
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    out = relay.create_executor(mod=mod).evaluate()(np.ones(2, "float32"))
    assert isinstance(out[2], RefValue)
    np.testing.assert_array_equal(out[1].numpy(), [1.0, 1.0])  # b untouched
    np.testing.assert_array_equal(out[2].value.numpy(), [2.0, 2.0])


def test_evaluator_rejects_reading_a_tensor_as_a_reference():
    from relaykit.execution.evaluator import Activation, Environment
    from relaykit.execution.interpreter import Interpreter

    machine = Interpreter(tvm.IRModule())
    with pytest.raises(ExecutionError, match="RefRead of a ndarray value"):
        machine.run(RefRead(relay.const(np.ones(2, "float32"))), Activation(Environment()))


def test_print_parse_round_trip_and_structure():
    x = relay.var("x", F32)
    r = relay.var("r")
    fn = relay.Function([x], relay.Let(r, RefCreate(x), relay.Tuple([RefWrite(r, x), RefRead(r)])))
    text = fn.astext()
    assert "ref(%x)" in text and "ref_write(%r, %x)" in text and "ref_read(%r)" in text
    back = relay.parse_expr(text)
    assert tvm.ir.structural_equal(back, fn, map_free_vars=True)
    assert tvm.ir.structural_hash(back, True) == tvm.ir.structural_hash(fn, True)
    other = relay.Function([x], relay.Let(r, RefCreate(x), relay.Tuple([RefWrite(r, x), x])))
    assert not tvm.ir.structural_equal(other, fn, map_free_vars=True)


def test_ref_type_prints_and_parses():
    fn = relay.parse_expr("fn (%r: ref(Tensor[(2), float32])) { ref_read(%r) }")
    assert fn.params[0].type_annotation == RefType(F32)
    assert str(RefType(F32)) == "ref(Tensor[(2), float32])"


def test_visitors_and_mutators_see_references():
    x = relay.var("x", F32)
    expr = RefWrite(RefCreate(x), RefRead(RefCreate(x)))
    seen = []

    class Count(relay.ExprVisitor):
        def visit_ref_create(self, node):
            seen.append(node)
            super().visit_ref_create(node)

    Count().visit(expr)
    assert len(seen) == 2
    assert relay.ExprMutator().visit(expr) is expr

    class Swap(relay.ExprMutator):
        def visit_var(self, var):
            return relay.const(np.zeros(2, "float32"))

    swapped = Swap().visit(expr)
    assert isinstance(swapped.ref.value, relay.Constant)
    assert isinstance(swapped.value.ref.value, relay.Constant)
