"""``relay.transform.recast``: casts around the chosen operators, layers numbered from
the input along the deepest chain, ``skip_layers`` (negative from the end)."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import OpNotFoundError, UsageError
from relaykit.relay.transform import recast


def dense_chain(n):
    x = relay.var("x", shape=(2, 4))
    ws = [relay.var(f"w{i}", shape=(4, 4)) for i in range(n)]
    y = x
    for w in ws:
        y = relay.nn.relu(relay.nn.dense(y, w))
    return relay.Function([x, *ws], y), x, ws


def expected_chain(x, ws, cast_layers):
    y = x
    for i, w in enumerate(ws):
        if i in cast_layers:
            d = relay.nn.dense(relay.cast(y, "float16"), relay.cast(w, "float16"),
                               out_dtype="float16")  # fmt: skip
            y = relay.cast(d, "float32")
        else:
            y = relay.nn.dense(y, w)
        y = relay.nn.relu(y)
    return relay.Function([x, *ws], y)


@pytest.mark.parametrize(
    ("skip", "cast_layers"),
    [(None, {0, 1, 2}), ([0], {1, 2}), ([-1], {0, 1}), ([0, -1], {1})],
)
def test_skip_layers_count_from_the_input_or_from_the_end(skip, cast_layers):
    fn, x, ws = dense_chain(3)
    out = recast(fn, "float16", "float16", ops=["nn.dense"], skip_layers=skip)
    tvm.ir.assert_structural_equal(out, expected_chain(x, ws, cast_layers))


def test_a_module_gives_a_module_and_the_default_op_is_conv2d():
    x, w = relay.var("x", shape=(1, 2, 5, 5)), relay.var("w", shape=(3, 2, 3, 3))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.conv2d(x, w)))
    out = recast(mod, "int8", "int32")
    assert isinstance(out, tvm.IRModule)
    conv = relay.nn.conv2d(relay.cast(x, "int8"), relay.cast(w, "int8"), out_dtype="int32")
    want = tvm.IRModule.from_expr(relay.Function([x, w], relay.cast(conv, "float32")))
    tvm.ir.assert_structural_equal(out["main"], want["main"])


def test_parallel_branches_are_one_layer():
    x = relay.var("x", shape=(2, 4))
    w1, w2, w3 = (relay.var(f"w{i}", shape=(4, 4)) for i in range(3))
    a, b = relay.nn.dense(x, w1), relay.nn.dense(x, w2)
    fn = relay.Function([x, w1, w2, w3], relay.nn.dense(a + b, w3))
    out = recast(fn, "float16", "float16", ops=["nn.dense"], skip_layers=[0])
    # both branches are layer 0 and stay; the last dense is layer 1 and is cast
    last = out.body
    assert last.op.name == "cast" and last.args[0].op.name == "nn.dense"
    inner = last.args[0].args[0].args[0]  # cast(add(a, b)) -> add
    assert inner.op.name == "add"
    assert [arg.op.name for arg in inner.args] == ["nn.dense", "nn.dense"]


def test_concatenate_casts_each_field_and_leaves_a_tuple_variable():
    x, y = relay.var("x", shape=(1, 2)), relay.var("y", shape=(1, 3))
    fn = relay.Function([x, y], relay.concatenate([x, y], axis=1))
    out = recast(fn, "float16", "float32", ops=["concatenate"])
    cat = relay.concatenate([relay.cast(x, "float16"), relay.cast(y, "float16")], axis=1)
    tvm.ir.assert_structural_equal(out, relay.Function([x, y], relay.cast(cat, "float32")))
    t = relay.var("t", relay.TupleType([relay.TensorType((1, 2)), relay.TensorType((1, 3))]))
    fn = relay.Function([t], relay.concatenate(t, axis=1))
    tvm.ir.assert_structural_equal(recast(fn, "float16", "float32", ops=["concatenate"]), fn)


def test_the_recast_graph_computes_in_the_new_dtype():
    rng = np.random.default_rng(0)
    fn, _, _ = dense_chain(2)
    out = recast(fn, "float16", "float16", ops=["nn.dense"])
    args = [rng.standard_normal(s).astype("float32") for s in ((2, 4), (4, 4), (4, 4))]
    got = relay.create_executor("graph", mod=tvm.IRModule.from_expr(out)).evaluate()(*args)
    y = args[0]
    for w in args[1:]:
        prod = y.astype(np.float16).astype(np.float64) @ w.astype(np.float16).astype(np.float64).T
        y = np.maximum(prod.astype(np.float16).astype(np.float32), 0)
    assert got.numpy().dtype == np.float32
    np.testing.assert_allclose(got.numpy(), y, rtol=2e-3, atol=2e-3)


def test_an_unknown_operator_is_reported():
    fn, _, _ = dense_chain(1)
    with pytest.raises(OpNotFoundError, match="nn.dens"):
        recast(fn, "float16", "float16", ops=["nn.dens"])


def test_a_layer_number_that_is_not_an_int_is_reported():
    fn, _, _ = dense_chain(2)
    with pytest.raises(UsageError, match="skip_layers takes layer numbers.*'last'"):
        recast(fn, "float16", "float16", ops=["nn.dense"], skip_layers=["last"])
    # numpy integers are layer numbers too
    tvm.ir.assert_structural_equal(
        recast(fn, "float16", "float16", ops=["nn.dense"], skip_layers=[np.int64(-1)]),
        recast(fn, "float16", "float16", ops=["nn.dense"], skip_layers=[1]),
    )
