"""The Prelude's list and tree functions (foldr1, zip, map_accumr/l, unfoldr/l, tmap,
size, iterate), run by the interpreter and compared with the same computations in
plain Python; and a Nil nothing constrains type-checks, as in TVM."""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit import relay
from relaykit.ir import IRModule
from relaykit.relay.prelude import Prelude

MOD = IRModule()
P = Prelude(MOD)
_, CONS, NIL = MOD.get_type("List")
_, SOME, NONE = MOD.get_type("Option")


def _list(values: list[int]) -> relay.Expr:
    out = NIL()
    for v in reversed(values):
        out = CONS(relay.const(v), out)
    return out


def _run(expr: relay.Expr) -> Any:
    return relay.create_executor(mod=MOD).evaluate(expr)


def _py(value: Any) -> Any:
    if hasattr(value, "constructor"):
        if value.constructor.name_hint == "Cons":
            return [_py(value.fields[0]), *_py(value.fields[1])]
        if value.constructor.name_hint == "Nil":
            return []
        return (value.constructor.name_hint, [_py(f) for f in value.fields])
    if isinstance(value, tuple | list) or type(value).__name__ == "ADT":
        return tuple(_py(v) for v in value)
    return value.numpy().item()


def _int_fn(n: int, body: Any) -> relay.Function:
    xs = [relay.var(f"a{i}", shape=(), dtype="int32") for i in range(n)]
    return relay.Function(xs, body(*xs))


def test_foldr1_zip_and_iterate():
    values = [3, 1, 4, 1, 5]
    sub = _int_fn(2, lambda a, b: a - b)
    got = _py(_run(P.foldr1(sub, _list(values))))
    want = values[-1]
    for v in reversed(values[:-1]):
        want = v - want
    assert got == want
    assert _py(_run(P.zip(_list([1, 2, 3]), _list([7, 8])))) == [(1, 7), (2, 8)]
    double = _int_fn(1, lambda a: a * relay.const(2))
    assert _py(_run(relay.Call(P.iterate(double, relay.const(3)), [relay.const(5)]))) == 40


def test_map_accum_from_both_ends():
    step = _int_fn(2, lambda acc, x: relay.Tuple([acc + x, acc * x]))
    values = [2, 3, 4]
    acc, out = _py(_run(P.map_accumr(step, relay.const(1), _list(values))))
    racc, routs = 1, []
    for v in reversed(values):
        racc, y = racc + v, racc * v
        routs.insert(0, y)
    assert (acc, out) == (racc, routs)
    acc, out = _py(_run(P.map_accuml(step, relay.const(1), _list(values))))
    lacc, louts = 1, []
    for v in values:
        lacc, y = lacc + v, lacc * v
        louts.insert(0, y)  # as TVM's prelude: the last output first
    assert (acc, out) == (lacc, louts)


def test_unfold_counts_down_and_up():
    n = relay.var("n", shape=(), dtype="int32")
    body = relay.If(
        relay.equal(n, relay.const(0)),
        NONE(),
        SOME(relay.Tuple([n - relay.const(1), n * n])),
    )
    squares = relay.Function([n], body)
    assert _py(_run(P.unfoldr(squares, relay.const(3)))) == [9, 4, 1]
    assert _py(_run(P.unfoldl(squares, relay.const(3)))) == [1, 4, 9]


def test_tree_map_and_size():
    _, rose = MOD.get_type("Tree")
    leaf = lambda v: rose(relay.const(v), NIL())  # noqa: E731
    tree = rose(
        relay.const(1), CONS(leaf(2), CONS(rose(relay.const(3), CONS(leaf(4), NIL())), NIL()))
    )
    assert _py(_run(P.size(tree))) == 4
    inc = _int_fn(1, lambda a: a + relay.const(10))
    mapped = _run(P.tmap(inc, tree))

    def members(t: Any) -> list[int]:
        return [int(t.fields[0].numpy())] + [m for c in _py_list(t.fields[1]) for m in members(c)]

    assert members(mapped) == [11, 12, 13, 14]


def _py_list(value: Any) -> list[Any]:
    out = []
    while value.constructor.name_hint == "Cons":
        out.append(value.fields[0])
        value = value.fields[1]
    return out


def test_an_unconstrained_nil_type_checks_and_runs():
    x = relay.Var("x")
    identity = relay.Function([x], x)
    assert _py(_run(identity(NIL()))) == []
    assert np.asarray(_py(_run(P.length(CONS(NIL(), NIL()))))) == 1
