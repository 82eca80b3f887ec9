"""runtime.container.ADT: a tuple of its fields with a tag, as the executors return it."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.runtime.container import ADT, ConstructorValue


def test_adt_is_a_tuple_that_also_compares_tags() -> None:
    a = ADT(0, [1, 2])
    assert isinstance(a, tuple) and a == (1, 2) and a.fields == [1, 2]
    assert a[1:] == (2,) and hash(a) == hash((1, 2))
    assert ADT(7, [1]) != ADT(8, [1])
    assert ConstructorValue(7, [1], None) == ADT(7, [1])
    b = pickle.loads(pickle.dumps(ADT(5, [3])))
    assert b.tag == 5 and b == (3,)
    c = copy.deepcopy(ConstructorValue(9, [4], "ctor"))
    assert (c.tag, c.constructor, tuple(c)) == (9, "ctor", (4,))


@pytest.mark.parametrize("kind", ["debug", "vm"])
def test_tuple_results_are_adts(kind: str) -> None:
    x = relay.var("x", shape=(3,), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([x + x, relay.exp(x)])))
    data = np.array([0.0, 1.0, -2.0], dtype="float32")
    out = relay.create_executor(kind, mod=mod).evaluate()(data)
    assert isinstance(out, tvm.runtime.container.ADT) and out.tag == 0 and len(out) == 2
    first, second = out
    np.testing.assert_allclose(first.numpy(), 2 * data.astype("float64"))
    np.testing.assert_allclose(second.numpy(), np.exp(data.astype("float64")), rtol=1e-6)
