"""Sub-graphs by post-order index: validity (exits, taps, cycles) and the cut-out function,
whose results are checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.byoc.sub_graph import (
    PartitionForTesting,
    SubGraph,
    SubGraphConfig,
    capture_post_dfs_index_in_spans,
)
from relaykit.dataflow_pattern.graph import IndexedGraph
from relaykit.errors import ArgumentError
from relaykit.ir import Call, Function, IRModule, TupleGetItem
from relaykit.runtime import get_global_func


def _diamond():
    # a0 b1 | ops: add2 relu3 multiply4 ... (indexes checked below)
    a, b = relay.var("a", shape=(2, 3)), relay.var("b", shape=(2, 3))
    s = relay.add(a, b)
    r = relay.nn.relu(s)
    return IRModule.from_expr(relay.Function([a, b], relay.multiply(r, s))), (s, r)


def _index(mod, node):
    return IndexedGraph(mod["main"]).index[node]


def _eval(mod, *args):
    return relay.create_executor("debug", mod=mod).evaluate()(*args)


def test_single_exit_is_cut_out_and_computes_the_same():
    mod, (s, r) = _diamond()
    idx = [_index(mod, s), _index(mod, r)]
    out = PartitionForTesting(2, True, "foo", idx)(mod)
    body = out["main"].body
    assert isinstance(body.args[0], TupleGetItem)  # s is used outside too: two exits
    call = body.args[0].tuple_value
    assert isinstance(call, Call) and isinstance(call.op, Function)
    assert call.op.attrs["Compiler"] == "foo"
    x, y = np.random.default_rng(0).standard_normal((2, 2, 3)).astype("float32")
    want = np.maximum(x + y, 0) * (x + y)
    np.testing.assert_allclose(_eval(out, x, y).numpy(), want, rtol=1e-6)


def test_taps_and_exit_limits_leave_the_module_unchanged():
    mod, (s, r) = _diamond()
    idx = [_index(mod, s), _index(mod, r)]
    # s is an exit also used inside (by relu): a tap
    assert PartitionForTesting(2, False, "foo", idx)(mod)["main"].body.same_as(mod["main"].body)
    # two exits, one allowed
    assert PartitionForTesting(1, True, "foo", idx)(mod)["main"].body.same_as(mod["main"].body)


def test_cycle_is_invalid():
    a = relay.var("a", shape=(4,))
    x = relay.add(a, a)
    y = relay.nn.relu(x)
    z = relay.multiply(y, x)
    fn = relay.transform.InferType()(IRModule.from_expr(relay.Function([a], z)))["main"]
    g = IndexedGraph(fn)
    sub = SubGraph(g, [g.index[x], g.index[z]])  # y is outside, between them
    assert "cycle" in sub.invalid_reason(SubGraphConfig(max_exits=2, allow_taps=True))
    whole = SubGraph(g, [g.index[x], g.index[y], g.index[z]])
    assert whole.invalid_reason(SubGraphConfig(max_exits=1)) == ""
    assert whole.depth() == 3


def test_labels_make_composite_functions_inside():
    a = relay.var("a", shape=(3,))
    r1 = relay.nn.relu(a)
    r2 = relay.nn.relu(r1)
    e = relay.exp(r2)
    mod = IRModule.from_expr(relay.Function([a], e))
    idx = [_index(mod, n) for n in (r1, r2, e)]
    out = PartitionForTesting(1, False, "foo", idx, ["", "c", "c"])(mod)
    outer = out["main"].body.op
    inner = outer.body.op
    assert outer.attrs["Compiler"] == "foo" and inner.attrs["Composite"] == "c"
    x = np.array([-1.0, 0.5, 2.0], "float32")
    np.testing.assert_allclose(_eval(out, x).numpy(), np.exp(np.maximum(x, 0)), rtol=1e-6)


def test_global_function_and_bad_indexes():
    assert get_global_func("relay.collage.PartitionForTesting") is PartitionForTesting
    mod, _ = _diamond()
    with pytest.raises(ArgumentError, match="outside"):
        PartitionForTesting(1, False, "foo", [99])(mod)
    with pytest.raises(ArgumentError, match="labels"):
        PartitionForTesting(1, False, "foo", [3, 4], ["x"])


def test_spans_carry_post_order_indexes():
    mod, (_, r) = _diamond()
    out = capture_post_dfs_index_in_spans(mod)
    body = out["main"].body
    assert body.span.source_name.startswith(f"index:{_index(mod, mod['main'].body)}:")
    assert body.args[0].span.source_name.startswith(f"index:{_index(mod, r)}:")
