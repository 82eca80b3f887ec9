from collections import Counter

import pytest

from relaykit import op
from relaykit.errors import IRError
from relaykit.ir import (
    Call,
    ExprMutator,
    ExprVisitor,
    Function,
    IRModule,
    Let,
    TensorType,
    Var,
    bound_vars,
    free_vars,
    post_order,
    post_order_visit,
)

T = TensorType((3,))


def test_post_order_visits_each_shared_node_once_children_first():
    x = Var("x", T)
    a = op.exp(x)
    out = op.add(a, a)
    seen = list(post_order(out))
    assert seen.count(a) == 1
    assert seen.index(x) < seen.index(a) < seen.index(out)


def test_visitor_subclass_as_in_the_byoc_demo_counts_ops():
    class OpProfiler(ExprVisitor):
        def __init__(self):
            super().__init__()
            self.ops = Counter()

        def visit_call(self, call):
            self.ops[call.op.name] += 1
            super().visit_call(call)

    x = Var("x", T)
    y = op.nn.relu(op.add(x, x))
    prof = OpProfiler()
    prof.visit(Function([x], op.multiply(y, y)))
    assert prof.ops == {"add": 1, "nn.relu": 1, "multiply": 1}


def test_mutator_is_copy_on_write_and_rewrites():
    x = Var("x", T)
    f = Function([x], op.nn.relu(op.exp(x)))

    class Identity(ExprMutator):
        pass

    assert Identity().visit(f) is f

    class ExpToLog(ExprMutator):
        def visit_call(self, call):
            new = super().visit_call(call)
            if new.op.name == "exp":
                return op.log(new.args[0])
            return new

    g = ExpToLog().visit(f)
    assert g is not f and g.body.args[0].op.name == "log" and g.params[0] is x


def test_visitor_and_mutator_handle_100k_chains():
    x = Var("x", T)
    y = x
    for _ in range(100_000):
        y = op.nn.relu(y)

    class Count(ExprVisitor):
        n = 0

        def visit_call(self, call):
            self.n += 1
            super().visit_call(call)

    c = Count()
    c.visit(y)
    assert c.n == 100_000
    assert ExprMutator().visit(y) is y
    nodes = []
    post_order_visit(y, nodes.append)
    assert len(nodes) == 100_002  # x, the op, and the calls


def test_free_and_bound_vars():
    x, y, z = Var("x", T), Var("y", T), Var("z", T)
    f = Function([x], Let(z, op.add(x, y), z))
    assert free_vars(f) == [y]
    assert set(bound_vars(f)) == {x, z}


def test_nodes_are_immutable_and_checked():
    x = Var("x", T)
    call = op.add(x, x)
    with pytest.raises(AttributeError, match="immutable"):
        call.args = ()
    with pytest.raises(IRError, match="must be a relay expression"):
        Call(call.op, [x, 3])
    with pytest.raises(IRError, match="relay Var"):
        Function([call], x)


def test_module_lookup_errors_name_close_globals():
    x = Var("x", T)
    mod = IRModule.from_expr(Function([x], x))
    with pytest.raises(IRError, match=r"@mian is not in the module .*did you mean @main"):
        mod["mian"]
