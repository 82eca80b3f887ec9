"""Host lowering turns ReLU6 as exporters write it (``minimum(maximum(x, 0), 6)``) into one
``clip`` step, keeps the inner step for its other users, and changes no result."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.contrib import graph_executor
from relaykit.execution.lower import lower_to_plan

X = np.linspace(-10, 10, 24, dtype="float32").reshape(2, 12)
X[0, 0] = np.nan


def _ops(body_fn, x_shape=(2, 12)):
    x = relay.var("x", shape=x_shape)
    mod = tvm.IRModule.from_expr(relay.Function([x], body_fn(x)))
    mod = relay.transform.InferType()(mod)
    plan, _ = lower_to_plan(mod)
    with tvm.transform.PassContext(opt_level=0):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", X)
    g.run()
    outs = [g.get_output(i).numpy() for i in range(g.get_num_outputs())]
    return [n.name for n in plan.nodes if n.kind == "op"], outs


def c(v):
    return relay.const(np.float32(v))


@pytest.mark.parametrize(
    "body",
    [
        lambda x: relay.minimum(relay.maximum(x, c(0.0)), c(6.0)),
        lambda x: relay.maximum(relay.minimum(x, c(6.0)), c(0.0)),
    ],
)
def test_relu6_is_one_clip(body):
    ops, (out,) = _ops(body)
    assert ops == ["clip"]
    np.testing.assert_array_equal(out, np.clip(X, 0, 6))  # NaN stays NaN


def test_inner_step_kept_for_its_other_users():
    def body(x):
        m = relay.maximum(x, c(0.0))
        return relay.Tuple([relay.minimum(m, c(6.0)), m * c(2.0)])

    ops, (clipped, doubled) = _ops(body)
    assert sorted(ops) == ["clip", "maximum", "multiply"]
    np.testing.assert_array_equal(clipped, np.clip(X, 0, 6))
    np.testing.assert_array_equal(doubled, np.maximum(X, 0) * 2)


@pytest.mark.parametrize(
    "body, want",
    [
        # lo > hi: maximum(minimum(x, 1), 3) is 3 everywhere; clip would give 1
        (
            lambda x: relay.maximum(relay.minimum(x, c(1.0)), c(3.0)),
            lambda: np.maximum(np.minimum(X, 1), 3),
        ),
        # a tensor bound is not a scalar: left alone
        (
            lambda x: relay.minimum(relay.maximum(x, relay.const(np.zeros(12, "float32"))), c(6.0)),
            lambda: np.minimum(np.maximum(X, 0), 6),
        ),
    ],
)
def test_not_fused(body, want):
    ops, (out,) = _ops(body)
    assert "clip" not in ops
    if want is not None:
        np.testing.assert_array_equal(out, want())


def test_dropped_step_leaves_no_unplaced_entry():
    """The inner step's entry goes with it: every entry left has a storage (a big dropped
    entry once landed in a small block)."""
    x = relay.var("x", shape=(2, 12))
    body = relay.sum(relay.minimum(relay.maximum(x, c(0.0)), c(6.0)))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))
    plan, _ = lower_to_plan(mod)
    assert [n.name for n in plan.nodes if n.kind == "op"] == ["clip", "sum"]
    assert all(e.storage >= 0 for e in plan.entries)
    lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", X)
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), np.nansum(np.clip(X, 0, 6)) + np.nan)
