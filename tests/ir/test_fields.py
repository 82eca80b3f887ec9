"""Each IR node class declares its fields once; everything else is derived from it."""

import pytest

from relaykit import op
from relaykit.errors import IRError
from relaykit.ir import (
    Attrs,
    Call,
    Constant,
    ExprMutator,
    ExprVisitor,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    children,
    const,
    get_op,
    post_order,
    rebuild,
    structural_equal,
    structural_hash,
)

T = TensorType((2,))
NODE_CLASSES = [Var, Constant, Call, Tuple, TupleGetItem, Function, Let, If, GlobalVar, Op]


def _samples():
    x, y = Var("x", T), Var("y", T)
    c = const(1.0)
    call = op.add(x, c)
    tup = Tuple([x, call])
    return {
        Var: x,
        Constant: c,
        Call: call,
        Tuple: tup,
        TupleGetItem: TupleGetItem(tup, 1),
        Function: Function([x], call),
        Let: Let(y, call, op.multiply(y, y)),
        If: If(Var("b", TensorType((), "bool")), x, call),
        GlobalVar: GlobalVar("g"),
        Op: get_op("add"),
    }


def test_fields_are_declared_in_constructor_order():
    assert Call._fields == ("op", "args", "attrs", "type_args")
    # virtual_device_ is a keyword field (the constructor's virtual_device=), so last
    assert Function._fields == (
        "params", "body", "ret_type", "type_params", "attrs", "virtual_device_"
    )  # fmt: skip
    assert Let._fields == ("var", "value", "body")
    assert TupleGetItem._fields == ("tuple_value", "index")
    assert Var._fields == ("name_hint", "type_annotation", "virtual_device_")
    for cls in NODE_CLASSES:
        # the slots are the declared fields: no second spelling of the layout
        assert set(cls._fields) <= set(cls.__slots__) | {"name"}, cls


@pytest.mark.parametrize("cls", NODE_CLASSES, ids=lambda c: c.__name__)
def test_children_follow_the_declaration(cls):
    node = _samples()[cls]
    expected = []
    for f in cls._layout:
        if f.is_sequence:
            expected.extend(getattr(node, f.name))
        elif f.is_child:
            expected.append(getattr(node, f.name))
    assert list(children(node)) == expected


@pytest.mark.parametrize("cls", NODE_CLASSES, ids=lambda c: c.__name__)
def test_rebuild_is_copy_on_write(cls):
    node = _samples()[cls]
    assert rebuild(node, lambda c: c) is node
    kids = children(node)
    if not kids:
        return
    swapped = {kids[-1]: Var("z", T) if isinstance(kids[-1], Var) else kids[-1]}
    out = rebuild(node, lambda c: swapped.get(c, c))
    if out is not node:
        assert type(out) is cls
        assert children(out)[-1] is swapped[kids[-1]]
        assert out.span is node.span


def test_with_fields_keeps_identity_changes_fields_and_rejects_unknown_names():
    x = Var("x", T)
    call = op.add(x, x)
    assert call.with_fields(args=[x, x]) is call
    assert call.with_fields(args=None) is call
    y = Var("y", T)
    new = call.with_fields(args=[x, y])
    assert new is not call and new.args == (x, y) and new.attrs is call.attrs
    fn = Function([x], call, T)
    assert fn.with_fields(ret_type=None).ret_type is None  # None is a value of ret_type
    assert TupleGetItem(Tuple([x]), 0).with_fields(index=0).index == 0
    with pytest.raises(IRError, match="Call has no field 'argz'; its fields are op, args"):
        call.with_fields(argz=[x])
    with pytest.raises(IRError, match="must be a relay expression"):
        call.with_fields(args=[x, 3])


def test_unchecked_builds_a_typed_node_without_validation():
    x = Var("x", T)
    c = Call.unchecked(get_op("nn.relu"), (x,), Attrs({}), (), checked_type=T)
    assert c.args == (x,) and c.checked_type is T and c.span is None
    t = Tuple.unchecked((x, c), checked_type=None)
    assert not t.has_checked_type and t.fields[1] is c
    assert Call.unchecked.__doc__.startswith("``Call(op, args, attrs, type_args)``")


def test_a_subclass_without_fields_of_its_own_traverses_like_its_base():
    class MyCall(Call):
        pass

    x = Var("x", T)
    node = MyCall(get_op("add"), [x, x])
    assert children(node) == (node.op, x, x)
    assert [type(n).__name__ for n in post_order(node)] == ["Op", "Var", "MyCall"]
    assert MyCall._visitor_name == "visit_call"  # visited as the call it is


def test_visitor_and_mutator_dispatch_from_the_declaration():
    assert TupleGetItem._visitor_name == "visit_tuple_getitem"
    assert GlobalVar._visitor_name == "visit_global_var"
    seen = []

    class Seen(ExprVisitor):
        def visit_tuple_getitem(self, t):
            seen.append(t.index)
            super().visit_tuple_getitem(t)

    x = Var("x", T)
    Seen().visit(TupleGetItem(Tuple([x, x]), 1))
    assert seen == [1]

    class Swap(ExprMutator):
        def visit_var(self, var):
            return Var("w", T)

    out = Swap().visit(Let(Var("v", T), x, x))
    assert isinstance(out, Let) and out.var.name_hint == "w"


def test_structural_equality_and_hash_read_the_declaration():
    x = Var("x", T)
    a = TupleGetItem(Tuple([x, x]), 0)
    b = TupleGetItem(Tuple([x, x]), 1)
    assert not structural_equal(a, b)
    assert structural_equal(a, TupleGetItem(Tuple([x, x]), 0))
    assert structural_hash(a) != structural_hash(b)
    # type_args are not compared (declared compare=False)
    c1 = Call(get_op("add"), [x, x], None, [T])
    c2 = Call(get_op("add"), [x, x])
    assert structural_equal(c1, c2) and structural_hash(c1) == structural_hash(c2)
