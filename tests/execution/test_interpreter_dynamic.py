"""The reference interpreter runs dynamically typed programs (issue 12)."""

import numpy as np
import pytest

from relaykit import relay, te
from relaykit.errors import BuildError, ExecutionError


def run(f, *args):
    return relay.create_executor("debug", relay.IRModule.from_expr(f)).evaluate()(*args).numpy()


def test_any_batch_runs_for_several_sizes():
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(relay.Any(), 4))
    w = relay.var("w", shape=(3, 4))
    f = relay.Function([x, w], relay.nn.softmax(relay.nn.dense(x, w)))
    wv = rng.standard_normal((3, 4)).astype("float32")
    for batch in (1, 3, 8):
        xv = rng.standard_normal((batch, 4)).astype("float32")
        z = xv @ wv.T
        want = np.exp(z - z.max(1, keepdims=True))
        want /= want.sum(1, keepdims=True)
        np.testing.assert_allclose(run(f, xv, wv), want, rtol=1e-5)


def test_symbol_is_bound_once_per_call():
    n = te.var("n")
    x = relay.var("x", shape=(n, 2))
    y = relay.var("y", shape=(n, 2))
    f = relay.Function([x, y], x + y)
    a = np.ones((3, 2), "float32")
    np.testing.assert_array_equal(run(f, a, a), a + a)
    with pytest.raises(ExecutionError, match=r"%y expects Tensor\[\(n, 2\).*\(4, 2\).*n=3"):
        run(f, a, np.ones((4, 2), "float32"))


def test_reshape_of_dynamic_input():
    x = relay.var("x", shape=(relay.Any(), 3, 2))
    f = relay.Function([x], relay.reshape(x, (0, -1)))
    v = np.arange(24, dtype="float32").reshape(4, 3, 2)
    np.testing.assert_array_equal(run(f, v), v.reshape(4, 6))


def test_graph_build_of_dynamic_module_says_use_the_vm():
    x = relay.var("x", shape=(relay.Any(), 3))
    mod = relay.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    with pytest.raises(BuildError, match="relay.vm.compile"):
        relay.build(mod, target="llvm")


def test_dynamic_batch_mlp_matches_static_model():
    from relaykit.testing import mlp
    from relaykit.transform.bind import bind

    mod, params = mlp.get_workload(batch_size=1)
    f = mod["main"]
    x = f.params[0]
    t = x.type_annotation
    nx = relay.var("data", relay.TensorType((relay.Any(), *t.shape[1:]), t.dtype))
    dyn = relay.Function([nx, *f.params[1:]], bind(f.body, {x: nx}))
    run_dyn = relay.create_executor("debug", relay.IRModule.from_expr(dyn)).evaluate()
    rng = np.random.default_rng(0)
    for batch in (1, 3, 8):
        smod, _ = mlp.get_workload(batch_size=batch)
        data = rng.random((batch, *t.shape[1:])).astype(t.dtype)
        want = relay.create_executor("debug", smod).evaluate()(data, **params).numpy()
        got = run_dyn(data, **params).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
