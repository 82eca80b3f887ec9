"""Structural equality matches the shape variables of two functions' types, as TVM
does; a let-bound recursive function without annotations type-checks; ``uint1`` is
bool."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import StructuralMismatchError


def _reshaped(b: object) -> relay.Function:
    x = relay.var("x", shape=(b, 4))
    return relay.Function([x], relay.reshape(x, (2, -1)))


def test_functions_over_different_size_variables_are_equal():
    one, two = _reshaped(tvm.te.size_var("b")), _reshaped(tvm.te.size_var("b"))
    one, two = (relay.transform.InferType()(tvm.IRModule.from_expr(f))["main"] for f in (one, two))
    tvm.ir.assert_structural_equal(one, two)


def test_one_size_variable_cannot_match_two():
    b, c = tvm.te.size_var("b"), tvm.te.size_var("c")
    x, y = relay.var("x", shape=(b, c)), relay.var("x", shape=(b, b))
    with pytest.raises(StructuralMismatchError):
        tvm.ir.assert_structural_equal(relay.Function([x], x), relay.Function([y], y))


def test_recursive_let_function_infers_its_result_type():
    x = relay.var("x", shape=(), dtype="int32")
    f = relay.Var("f")
    body = relay.If(
        relay.equal(x, relay.const(0)),
        relay.const(0),
        x + relay.Call(f, [x - relay.const(1)]),
    )
    main = relay.Function([x], relay.Let(f, relay.Function([x], body), relay.Call(f, [x])))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(main))
    assert str(mod["main"].ret_type) == "int32"
    got = relay.create_executor(mod=mod).evaluate()(np.int32(6)).numpy()
    assert int(got) == sum(range(7))


def test_uint1_is_bool():
    assert relay.var("c", shape=(), dtype="uint1").type_annotation.dtype == "bool"
