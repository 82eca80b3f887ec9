"""FuseLayerNorm: layer normalisation chains (SimplifyInference's and the exporters') become
one nn.layer_norm; results against a float64 NumPy layer norm."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends.host import native as host_native
from relaykit.contrib import graph_executor
from relaykit.ir.expr import Call
from relaykit.ir.functor import post_order
from relaykit.transform import InferType, SimplifyInference
from relaykit.transform.layer_norm import FuseLayerNorm

RNG = np.random.default_rng(11)


def fuse(f):
    return FuseLayerNorm()(InferType()(tvm.IRModule.from_expr(f)))["main"]


def op_names(f):
    return sorted(n.op.name for n in post_order(f.body) if isinstance(n, Call))


def reference(x, axis, eps, gamma=None, beta=None):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axis, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=axis, keepdims=True)
    out = (x64 - mean) / np.sqrt(var + eps)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    if gamma is not None:
        out = out * gamma.astype(np.float64).reshape(shape)
    if beta is not None:
        out = out + beta.astype(np.float64).reshape(shape)
    return out


def chain(x, axis=-1, eps=1e-5, gamma=None, beta=None, square="multiply", root="sqrt"):
    """The chain as an exporter writes it."""
    mean = relay.mean(x, axis=[axis], keepdims=True)
    d = relay.subtract(x, mean)
    sq = relay.multiply(d, d) if square == "multiply" else relay.power(d, relay.const(2.0))
    var = relay.add(relay.mean(sq, axis=[axis], keepdims=True), relay.const(eps))
    if root == "sqrt":
        out = relay.divide(d, relay.sqrt(var))
    else:
        out = relay.multiply(relay.rsqrt(var), d)
    if gamma is not None:
        out = relay.multiply(out, gamma)
    if beta is not None:
        out = relay.add(beta, out)
    return out


def build_run(f, inputs, opt_level=3):
    with tvm.transform.PassContext(opt_level=opt_level):
        lib = relay.build(tvm.IRModule.from_expr(f), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in inputs.items():
        m.set_input(k, v)
    m.run()
    names = sorted({n.name for n in lib.plan.nodes if n.kind == "op"})
    return m.get_output(0).numpy(), names


@pytest.mark.parametrize("square", ["multiply", "power"])
@pytest.mark.parametrize("root", ["sqrt", "rsqrt"])
@pytest.mark.parametrize(
    "scale, center", [(True, True), (True, False), (False, True), (False, False)]
)
def test_exporter_chains_become_one_layer_norm(square, root, scale, center):
    x = relay.var("x", shape=(2, 3, 16))
    g = RNG.standard_normal(16).astype("float32")
    b = RNG.standard_normal(16).astype("float32")
    y = chain(
        x, -1, 1e-6, relay.const(g) if scale else None, relay.const(b) if center else None,
        square, root,
    )  # fmt: skip
    out = fuse(relay.Function([x], y))
    assert op_names(out) == ["nn.layer_norm"]
    call = out.body
    assert call.args[0] is out.params[0]
    assert call.attrs.axis == 2 and call.attrs.epsilon == pytest.approx(1e-6)
    assert (call.attrs.scale, call.attrs.center) == (scale, center)
    data = RNG.standard_normal((2, 3, 16)).astype("float32") * 3 + 2
    got, _ = build_run(out, {"x": data})
    want = reference(data, 2, 1e-6, g if scale else None, b if center else None)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, axis", [((2, 5, 8), -1), ((2, 6, 3, 3), 1)])
def test_simplify_inference_output_fuses_back(shape, axis):
    c = shape[axis]
    x = relay.var("x", shape=shape)
    g = RNG.standard_normal(c).astype("float32")
    b = RNG.standard_normal(c).astype("float32")
    f = relay.Function([x], relay.nn.layer_norm(x, relay.const(g), relay.const(b), axis=axis))
    mod = SimplifyInference()(InferType()(tvm.IRModule.from_expr(f)))
    mod = tvm.transform.Sequential([relay.transform.FoldConstant(), InferType()])(mod)
    assert "mean" in op_names(mod["main"])
    out = fuse(mod["main"])
    assert op_names(out) == ["nn.layer_norm"]
    assert out.body.attrs.axis == axis % len(shape)
    data = RNG.standard_normal(shape).astype("float32")
    got, _ = build_run(out, {"x": data})
    np.testing.assert_allclose(got, reference(data, axis % len(shape), 1e-5, g, b), atol=2e-5)


def test_non_constant_parameters_on_the_last_axis():
    x, g, b = relay.var("x", shape=(4, 8)), relay.var("g", shape=(8,)), relay.var("b", shape=(8,))
    out = fuse(relay.Function([x, g, b], chain(x, -1, 1e-5, g, b)))
    assert op_names(out) == ["nn.layer_norm"]
    data, gv, bv = (RNG.standard_normal(s).astype("float32") for s in ((4, 8), (8,), (8,)))
    got, _ = build_run(out, {"x": data, "g": gv, "b": bv})
    np.testing.assert_allclose(got, reference(data, 1, 1e-5, gv, bv), atol=2e-5)


def _unchanged(f):
    before = op_names(InferType()(tvm.IRModule.from_expr(f))["main"])
    assert op_names(fuse(f)) == before
    assert "nn.layer_norm" not in before


def test_not_a_layer_norm_is_left_alone():
    x = relay.var("x", shape=(4, 8))
    # two different centred tensors
    d1 = relay.subtract(x, relay.mean(x, axis=[1], keepdims=True))
    d2 = relay.subtract(x, relay.mean(x, axis=[1], keepdims=True))
    var = relay.mean(relay.multiply(d1, d1), axis=[1], keepdims=True)
    _unchanged(relay.Function([x], relay.divide(d2, relay.sqrt(relay.add(var, relay.const(1e-5))))))
    # the mean and the variance over different axes
    d = relay.subtract(x, relay.mean(x, axis=[1], keepdims=True))
    var = relay.mean(relay.multiply(d, d), axis=[0], keepdims=True)
    _unchanged(relay.Function([x], relay.divide(d, relay.sqrt(relay.add(var, relay.const(1e-5))))))
    # a cube instead of a square
    var = relay.mean(relay.power(d, relay.const(3.0)), axis=[1], keepdims=True)
    _unchanged(relay.Function([x], relay.divide(d, relay.sqrt(relay.add(var, relay.const(1e-5))))))
    # epsilon not a scalar
    var = relay.mean(relay.multiply(d, d), axis=[1], keepdims=True)
    eps = relay.const(np.full((4, 1), 1e-5, "float32"))
    _unchanged(relay.Function([x], relay.divide(d, relay.sqrt(relay.add(var, eps)))))


def test_a_scale_along_another_axis_is_not_gamma():
    x = relay.var("x", shape=(4, 8))
    s = RNG.standard_normal((4, 1)).astype("float32")
    out = fuse(relay.Function([x], relay.multiply(chain(x, 1, 1e-5), relay.const(s))))
    assert op_names(out) == ["multiply", "nn.layer_norm"]
    assert not out.body.args[0].attrs.scale
    data = RNG.standard_normal((4, 8)).astype("float32")
    got, _ = build_run(out, {"x": data})
    np.testing.assert_allclose(got, reference(data, 1, 1e-5) * s, rtol=1e-5, atol=1e-5)


def test_shared_parts_stay_available():
    """A chain whose centred tensor is also used elsewhere is fused; the other use keeps
    its value."""
    x = relay.var("x", shape=(4, 8))
    y = chain(x, -1, 1e-5)
    d = y.args[0]
    out = fuse(relay.Function([x], relay.Tuple([y, relay.exp(d)])))
    assert "nn.layer_norm" in op_names(out)
    data = RNG.standard_normal((4, 8)).astype("float32")
    got = relay.create_executor("debug", mod=tvm.IRModule.from_expr(out)).evaluate()(data)
    np.testing.assert_allclose(got[0].numpy(), reference(data, 1, 1e-5), atol=2e-5)
    want = np.exp(data.astype("f8") - data.astype("f8").mean(1, keepdims=True))
    np.testing.assert_allclose(got[1].numpy(), want, rtol=1e-5)


@pytest.mark.parametrize("path", ["native", "numpy"])
@pytest.mark.parametrize("offset, spread", [(1e4, 1e-2), (-3e3, 1e-3), (0.0, 1e-6), (5.0, 0.0)])
def test_relay_build_runs_the_chain_accurately(path, offset, spread):
    """Large means with tiny variances (and constant rows): the built chain against float64;
    run as written in float32 (mean rounded, then subtracted), the first case is off by 5%."""
    if path == "native" and host_native.library() is None:
        pytest.skip("no C compiler")
    x = relay.var("x", shape=(3, 256))
    g = RNG.standard_normal(256).astype("float32")
    b = RNG.standard_normal(256).astype("float32")
    f = relay.Function([x], relay.nn.layer_norm(x, relay.const(g), relay.const(b), epsilon=1e-12))
    data = (offset + spread * RNG.standard_normal((3, 256))).astype("float32")
    if path == "numpy":
        with host_native.disabled():
            got, names = build_run(f, {"x": data})
    else:
        got, names = build_run(f, {"x": data})
    assert names == ["nn.layer_norm"]
    want = reference(data, 1, 1e-12, g, b)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * np.abs(want).max())


def test_torch_style_onnx_chain_builds_into_layer_norm():
    """The chain torch exports below opset 17 (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
    Div, Mul, Add) through the ONNX frontend and relay.build."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from relaykit.frontend import from_onnx

    g = RNG.standard_normal(32).astype("float32")
    b = RNG.standard_normal(32).astype("float32")
    inits = [
        numpy_helper.from_array(g, "gamma"),
        numpy_helper.from_array(b, "beta"),
        numpy_helper.from_array(np.array(2.0, "float32"), "two"),
        numpy_helper.from_array(np.array(1e-12, "float32"), "eps"),
    ]
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["mu"], axes=[-1], keepdims=1),
        helper.make_node("Sub", ["x", "mu"], ["d"]),
        helper.make_node("Pow", ["d", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["d", "sd"], ["n"]),
        helper.make_node("Mul", ["n", "gamma"], ["s"]),
        helper.make_node("Add", ["s", "beta"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 32])], initializer=inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    mod, params = from_onnx(
        onnx.load_from_string(model.SerializeToString()), shape={"x": (1, 16, 32)}
    )
    data = (100 + RNG.standard_normal((1, 16, 32))).astype("float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    assert [n.name for n in lib.plan.nodes if n.kind == "op"] == ["nn.layer_norm"]
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", data)
    m.run()
    want = reference(data, 2, 1e-12, g, b)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-5, atol=1e-5)
