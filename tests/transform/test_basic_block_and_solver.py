"""ToBasicBlockNormalForm (before/after, same values) and the type solver."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import IRError, RelayTypeError
from relaykit.ir import EnvFunc, IncompleteType, TensorType, TupleType, TypeRelation
from relaykit.transform import ToBasicBlockNormalForm, to_basic_block_normal_form
from relaykit.transform.basic_block import check_basic_block_normal_form
from relaykit.transform.type_solver import TypeSolver

S = TensorType((), "float32")


def _branches():
    c, x = relay.var("c", "bool"), relay.var("x", S)
    shared = x * x  # used in both branches of the outer if
    inner = x + x  # used in both branches of the inner if
    body = relay.If(c, relay.If(c, inner, inner * shared), shared)
    return relay.Function([c, x], body)


def test_shared_computation_is_bound_above_the_branches():
    fn = _branches()
    with pytest.raises(IRError, match="used from several basic blocks"):
        check_basic_block_normal_form(fn)
    out = to_basic_block_normal_form(fn)
    check_basic_block_normal_form(out)
    _, x = out.params
    let = out.body
    assert isinstance(let, relay.Let) and let.value.op.name == "multiply"
    assert let.value.args == (x, x)
    # x + x is used in both branches of the inner if: bound in the outer true branch
    inner_let = let.body.true_branch
    assert isinstance(inner_let, relay.Let) and inner_let.value.op.name == "add"
    inner = inner_let.body
    assert inner.true_branch is inner_let.var
    assert inner.false_branch.args == (inner_let.var, let.var)
    assert let.body.false_branch is let.var


def test_same_values_after_the_pass():
    mod = tvm.IRModule.from_expr(_branches())
    new = ToBasicBlockNormalForm()(mod)
    run_old = relay.create_executor(mod=mod).evaluate()
    run_new = relay.create_executor(mod=new).evaluate()
    for cond in (True, False):
        x = np.float32(1.5)
        want = (x + x) if cond else x * x
        for run in (run_old, run_new):
            np.testing.assert_allclose(run(np.bool_(cond), x).numpy(), want, rtol=1e-6)


def test_binding_goes_after_the_let_it_depends_on():
    c, x = relay.var("c", "bool"), relay.var("x", S)
    y = relay.var("y")
    shared = y * y
    fn = relay.Function([c, x], relay.Let(y, x + x, relay.If(c, shared, shared + y)))
    out = to_basic_block_normal_form(fn)
    assert out.body.var is y  # the user's let stays first
    assert isinstance(out.body.body, relay.Let) and out.body.body.value.op.name == "multiply"
    check_basic_block_normal_form(out)


def test_solver_solves_relations_forward_and_backward():
    s = TypeSolver()
    bcast = EnvFunc.get("tvm.relay.type_relation.Broadcast")
    ident = EnvFunc.get("tvm.relay.type_relation.Identity")
    t1, out = IncompleteType(), IncompleteType()
    s.add_constraint(TypeRelation(bcast, [TensorType((4, 1)), t1, out], 2))
    s.add_constraint(TypeRelation(ident, [t1, TensorType((3,))], 1))
    assert s.solve()
    assert s.resolve(out) == TensorType((4, 3))


def test_solver_unifies_structures_and_rejects_cycles():
    s = TypeSolver()
    a, b = IncompleteType(), IncompleteType()
    t = TensorType((2,))
    assert s.unify(TupleType([a, b]), TupleType([t, a])) == TupleType([t, t])
    assert s.resolve(b) == t
    c = IncompleteType()
    with pytest.raises(RelayTypeError, match="contains itself"):
        s.unify(c, TupleType([c]))
    with pytest.raises(RelayTypeError, match="cannot unify"):
        s.unify(TupleType([t]), TupleType([t, t]))
