"""The IR's own type checker: full, incremental (InferTypeLocal) and module checks."""

import pytest

import relaykit as tvm
from relaykit import op, relay
from relaykit.errors import IRError, OpNotFoundError, RelayTypeError
from relaykit.ir import (
    Function,
    IRModule,
    OpRegistry,
    TensorType,
    Tuple,
    TupleType,
    Var,
    default_registry,
    hooks,
    infer_type,
    infer_type_local,
)
from relaykit.transform import InferTypeLocal

T = TensorType((2, 3))


def _counting(name):
    rel = default_registry.get_attr(name, "FTypeRelation")
    calls = []

    def counted(args, attrs):
        calls.append(args)
        return rel(args, attrs)

    default_registry.set_attr(name, "FTypeRelation", counted, level=99)
    return calls


def test_infer_type_local_types_only_the_new_nodes():
    x = Var("x", T)
    y = op.add(x, x)
    infer_type(y)
    with default_registry.scoped():
        adds, muls = _counting("add"), _counting("multiply")
        z = op.multiply(y, y)
        assert InferTypeLocal(z) == T
    assert (len(adds), len(muls)) == (0, 1)
    assert z.checked_type == T


def test_infer_type_retypes_everything():
    x = Var("x", T)
    y = op.add(x, x)
    infer_type(y)
    with default_registry.scoped():
        adds = _counting("add")
        infer_type(op.multiply(y, y))
    assert len(adds) == 1


def test_infer_type_local_types_vars_tuples_and_reports_bad_new_nodes():
    x = Var("x", T)
    t = Tuple([x, x])
    assert infer_type_local(t) == TupleType([T, T])
    assert x.checked_type == T
    bad = op.add(x, Var("y", TensorType((4,))))
    with pytest.raises(RelayTypeError, match=r"type error in add\(") as err:
        infer_type_local(bad)
    assert "in:" in str(err.value)  # the IR around the node is shown


def test_infer_type_local_resolves_globals_of_a_module():
    x = Var("x", T)
    mod = IRModule.from_expr(Function([x], op.exp(x)))
    a = Var("a", T)
    call = mod.get_global_var("main")(a)
    assert infer_type_local(call, mod) == T


def test_set_checked_type_is_write_once():
    x = Var("x", T)
    y = op.add(x, x)
    assert y.set_checked_type(T) is y
    assert y.set_checked_type(TensorType((2, 3))) is y  # the same type again is fine
    with pytest.raises(IRError, match="already has checked type"):
        y.set_checked_type(TensorType((3,)))
    with pytest.raises(IRError, match="must be a Type"):
        op.add(x, x).set_checked_type("float32")


def test_printing_without_a_printer_installed_says_what_to_import(monkeypatch):
    monkeypatch.setattr(hooks, "_PRINTER", [])
    x = Var("x", T)
    with pytest.raises(IRError, match=r"import relaykit\.text"):
        x.astext()
    with pytest.raises(IRError, match=r"import relaykit\.text"):
        IRModule.from_expr(Function([x], x)).astext()
    # type errors still explain themselves, without the printed context
    with pytest.raises(RelayTypeError, match="type error in add"):
        infer_type(op.add(x, Var("y", TensorType((4,)))))


def test_op_registry_tables_are_registries_that_restore():
    reg = OpRegistry()
    relu = reg.register("my.relu", num_inputs=1)
    with reg.scoped():
        reg.set_attr("my.relu", "target.fields_test", True)
        assert relu.get_attr("target.fields_test") is True
        assert reg.attr_table("target.fields_test") == {"my.relu": True}
    assert relu.get_attr("target.fields_test") is None  # restored, cache dropped
    assert reg.ops_with_attr("num_inputs") == ["my.relu"]
    with pytest.raises(OpNotFoundError, match=r"did you mean my\.relu"):
        reg.get("my.relux")


def test_inference_fills_call_type_args():
    x, y = relay.var("x", shape=(10, 10)), relay.var("y", shape=(1, 10))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.add(x, y)))
    ty_args = mod["main"].body.type_args
    assert [t.shape for t in ty_args] == [(10, 10), (1, 10)]
    a = relay.TypeVar("a")
    v = relay.var("v", a)
    ident = relay.GlobalVar("ident")
    f = relay.var("f", shape=(), dtype="int8")
    mod = tvm.IRModule({ident: relay.Function([v], v, a, [a])})
    mod["main"] = relay.Function([f], ident(f))
    mod = relay.transform.InferType()(mod)
    tvm.ir.assert_structural_equal(mod["main"].body.type_args, [relay.TensorType((), "int8")])
    # a note on the call, not part of it: structural equality ignores it
    bare = relay.Function([f], ident(f), relay.TensorType((), "int8"))
    assert tvm.ir.structural_equal(mod["main"], bare, map_free_vars=True)
