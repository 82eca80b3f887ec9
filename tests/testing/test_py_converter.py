"""relay.testing.py_converter: the Python program of a Relay expression computes what
the expression means (checked against NumPy)."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ArgumentError
from relaykit.relay.testing import run_as_python
from relaykit.runtime.container import ADT, ConstructorValue, RefValue
from relaykit.testing.py_converter import to_python


def test_operators_closures_and_lets_match_numpy():
    x = relay.var("x", shape=(2, 3))
    f = relay.var("f")
    double = relay.Function([x], x + x)
    y = relay.var("y", shape=(2, 3))
    body = relay.Let(f, double, relay.nn.relu(f(y) - relay.const(1.0)))
    data = np.array([[0.0, 1.0, -2.0], [3.0, 0.25, 0.5]], dtype="float32")
    out = run_as_python(relay.Function([y], body)(relay.const(data)))
    np.testing.assert_allclose(out.numpy(), np.maximum(data.astype("float64") * 2 - 1, 0))


def test_the_source_is_a_python_program():
    src = to_python(relay.Tuple([relay.const(1), relay.RefCreate(relay.const(2))]))
    compile(src, "<test>", "exec")
    assert "RefValue(" in src and "ADT(0, [" in src


def test_global_recursion_over_lists():
    mod = tvm.IRModule()
    relay.prelude.Prelude(mod)
    _, cons, nil = mod.get_type("List")
    items = [relay.const(np.float32(v)) for v in (1.0, 2.5, 4.0)]
    lst = nil()
    for item in reversed(items):
        lst = cons(item, lst)
    length = run_as_python(mod.get_global_var("length")(lst), mod)
    assert int(length.numpy()) == 3
    rev = run_as_python(mod.get_global_var("rev")(lst), mod)
    values = []
    while rev.tag == cons.tag:
        assert isinstance(rev, ConstructorValue)
        values.append(float(rev.fields[0].numpy()))
        rev = rev.fields[1]
    assert values == [4.0, 2.5, 1.0]


def test_references_are_written_in_program_order():
    r, u = relay.var("r"), relay.var("u")
    one, two = relay.const(1.0), relay.const(2.0)
    expr = relay.Let(
        r,
        relay.RefCreate(one),
        relay.Let(u, relay.RefWrite(r, relay.RefRead(r) + two), relay.Tuple([relay.RefRead(r), r])),
    )
    out = run_as_python(expr)
    assert isinstance(out, ADT) and isinstance(out[1], RefValue)
    assert float(out[0].numpy()) == 3.0 and float(out[1].value.numpy()) == 3.0


def test_multi_output_operator_and_bad_input():
    x = relay.const(np.arange(6, dtype="float32"))
    parts = run_as_python(relay.split(x, 3))
    assert [p.numpy().tolist() for p in parts] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    with pytest.raises(ArgumentError, match="converts relay expressions"):
        to_python(42)
