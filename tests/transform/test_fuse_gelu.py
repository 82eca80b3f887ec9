"""FuseGelu and nn.gelu: the exporters' erf GELU chains become one operator; results (the
reference kernel, relay.build's native and NumPy host kernels) against scipy in float64."""

import math

import numpy as np
import pytest
import scipy.special

import relaykit as tvm
from relaykit import relay
from relaykit.backends.host import native as host_native
from relaykit.contrib import graph_executor
from relaykit.ir.expr import Call
from relaykit.ir.functor import post_order
from relaykit.transform import InferType
from relaykit.transform.gelu import FuseGelu

RNG = np.random.default_rng(9)


def gelu64(x):
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + scipy.special.erf(x / math.sqrt(2.0)))


def fuse(f):
    return FuseGelu()(InferType()(tvm.IRModule.from_expr(f)))["main"]


def op_names(f):
    return sorted(n.op.name for n in post_order(f.body) if isinstance(n, Call))


def c(v):
    return relay.const(np.float32(v))


def chain(x, assoc, inner="divide", add_order="erf_first"):
    arg = (
        relay.divide(x, c(math.sqrt(2)))
        if inner == "divide"
        else relay.multiply(c(1 / math.sqrt(2)), x)
    )
    e = relay.erf(arg)
    cdf = relay.add(e, c(1.0)) if add_order == "erf_first" else relay.add(c(1.0), e)
    if assoc == 0:
        return relay.multiply(relay.multiply(x, cdf), c(0.5))
    if assoc == 1:
        return relay.multiply(relay.multiply(c(0.5), x), cdf)
    return relay.multiply(x, relay.multiply(cdf, c(0.5)))


def build_run(f, data, native=True):
    def go():
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(f), target="llvm")
        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        m.set_input("x", data)
        m.run()
        return m.get_output(0).numpy(), [n.name for n in lib.plan.nodes if n.kind == "op"]

    if native:
        return go()
    with host_native.disabled():
        return go()


@pytest.mark.parametrize("assoc", [0, 1, 2])
@pytest.mark.parametrize("inner", ["divide", "multiply"])
@pytest.mark.parametrize("add_order", ["erf_first", "one_first"])
def test_chains_become_one_gelu(assoc, inner, add_order):
    x = relay.var("x", shape=(4, 64))
    out = fuse(relay.Function([x], chain(x, assoc, inner, add_order)))
    assert op_names(out) == ["nn.gelu"]
    assert out.body.args[0] is out.params[0]


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relay_build_runs_gelu(native, dtype):
    if native and host_native.library() is None:
        pytest.skip("no C compiler")
    x = relay.var("x", shape=(3, 700), dtype=dtype)
    f = relay.Function([x], relay.nn.gelu(x))
    data = (RNG.standard_normal((3, 700)) * 4).astype(dtype)
    data[0, :4] = [0.0, -0.0, 30.0, -30.0]
    got, names = build_run(f, data, native)
    assert names == ["nn.gelu"]
    tol = 1e-6 if dtype == "float32" else 1e-12
    err = np.abs(got - gelu64(data))
    assert (err <= tol * np.abs(gelu64(data)) + 3e-8 * np.abs(data)).all()


def test_reference_kernel_matches_scipy():
    x = relay.var("x", shape=(50,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.gelu(x)))
    data = np.linspace(-8, 8, 50).astype("float32")
    got = relay.create_executor("debug", mod=mod).evaluate()(data).numpy()
    np.testing.assert_allclose(got, gelu64(data).astype("float32"), rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize("native", [True, False])
def test_the_built_chain_is_fused_and_right(native):
    if native and host_native.library() is None:
        pytest.skip("no C compiler")
    x = relay.var("x", shape=(2, 128, 64))
    data = (RNG.standard_normal((2, 128, 64)) * 3).astype("float32")
    got, names = build_run(relay.Function([x], chain(x, 0)), data, native)
    assert names == ["nn.gelu"]
    err = np.abs(got - gelu64(data))
    assert (err <= 1e-6 * np.abs(gelu64(data)) + 3e-8 * np.abs(data)).all()


def test_other_chains_are_left_alone():
    x, y = relay.var("x", shape=(8,)), relay.var("y", shape=(8,))
    cdf = relay.add(relay.erf(relay.divide(x, c(math.sqrt(2)))), c(1.0))
    cases = [
        relay.multiply(relay.multiply(x, cdf), c(0.4)),  # not a half
        relay.multiply(relay.multiply(y, cdf), c(0.5)),  # another tensor
        relay.multiply(
            relay.multiply(x, relay.add(relay.erf(relay.divide(x, c(1.7))), c(1.0))), c(0.5)
        ),  # not sqrt 2
        relay.multiply(
            relay.multiply(x, cdf), relay.const(np.full((1, 1), 0.5, "float32"))
        ),  # a 0.5 that broadcasts x to (1, 8)
    ]
    for body in cases:
        out = fuse(relay.Function([x, y], body))
        assert "nn.gelu" not in op_names(out)
