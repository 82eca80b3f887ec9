"""Transformer operators on oneDNN: matmul, layer norm, softmax with masks, GELU, attention.

Each result is checked against NumPy (or onnxruntime, for an encoder layer as an
exporter writes it), never against relaykit itself; the partitioning is checked
too: what should be one region is one region, and nothing stays on the host.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends.dnnl import partition_for_dnnl
from relaykit.contrib import graph_executor

RNG = np.random.default_rng(7)
SQRT2 = math.sqrt(2.0)


def _c(*shape: int, scale: float = 0.2) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype("float32")


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


def _layer_norm(x: np.ndarray, g: Any = 1.0, b: Any = 0.0, eps: float = 1e-5) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _run(dnnl: Any, body: Any, *shapes: tuple[int, ...]) -> tuple[Any, list[np.ndarray], Any]:
    """Partition, build and run ``body`` on random inputs: (partitioned module, inputs,
    output)."""
    mod = dnnl.module_of(body, *shapes)
    part = partition_for_dnnl(mod)
    inputs = dnnl.random_inputs(mod)
    (out,) = dnnl.run_lib(dnnl.build(part), inputs)
    return part, list(inputs.values()), out


def _one_region(dnnl: Any, part: Any) -> None:
    assert dnnl.host_ops(part) == []
    assert len(dnnl.dnnl_functions(part)) == 1


@pytest.mark.parametrize("transpose_b", [False, True])
def test_batch_matmul(dnnl, transpose_b):
    b_shape = (3, 7, 5) if transpose_b else (3, 5, 7)
    part, (a, b), out = _run(
        dnnl,
        lambda a, b: relay.nn.batch_matmul(a, b, transpose_b=transpose_b),
        (3, 4, 5),
        b_shape,
    )
    _one_region(dnnl, part)
    want = a @ (b.transpose(0, 2, 1) if transpose_b else b)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def test_matmul_of_transposed_views(dnnl):
    # q @ k^T over heads, as exporters write it: reshape -> transpose -> reshape.
    def body(q: Any, k: Any) -> Any:
        qh = relay.reshape(relay.transpose(relay.reshape(q, (1, 6, 2, 4)), (0, 2, 1, 3)), (2, 6, 4))
        kh = relay.reshape(relay.transpose(relay.reshape(k, (1, 6, 2, 4)), (0, 2, 3, 1)), (2, 4, 6))
        return relay.nn.batch_matmul(qh, kh, transpose_b=False)

    part, (q, k), out = _run(dnnl, body, (1, 6, 8), (1, 6, 8))
    _one_region(dnnl, part)
    qh = q.reshape(1, 6, 2, 4).transpose(0, 2, 1, 3).reshape(2, 6, 4)
    kh = k.reshape(1, 6, 2, 4).transpose(0, 2, 3, 1).reshape(2, 4, 6)
    np.testing.assert_allclose(out, qh @ kh, rtol=1e-4, atol=1e-5)


def test_dense_of_a_3d_input_with_bias(dnnl):
    w, bias = _c(16, 8), _c(16)
    part, (x,), out = _run(
        dnnl,
        lambda x: relay.nn.bias_add(relay.nn.dense(x, relay.const(w)), relay.const(bias), axis=-1),
        (2, 5, 8),
    )
    _one_region(dnnl, part)
    np.testing.assert_allclose(out, x @ w.T + bias, rtol=1e-4, atol=1e-5)


def test_nn_layer_norm(dnnl):
    g, b = _c(32) + 1, _c(32)
    part, (x,), out = _run(
        dnnl,
        lambda x: relay.nn.layer_norm(x, relay.const(g), relay.const(b), epsilon=1e-6),
        (2, 3, 32),
    )
    _one_region(dnnl, part)
    np.testing.assert_allclose(out, _layer_norm(x, g, b, 1e-6), rtol=1e-4, atol=1e-5)


def _ln_chain(x: Any, g: np.ndarray | None, b: np.ndarray | None, square: str) -> Any:
    """A layer norm as exporters decompose it."""
    mean = relay.mean(x, axis=[-1], keepdims=True)
    d = x - mean
    sq = d * d if square == "multiply" else relay.power(d, relay.const(2.0))
    var = relay.mean(sq, axis=[-1], keepdims=True)
    y = d / relay.sqrt(var + relay.const(1e-5))
    if g is not None:
        y = y * relay.const(g)
    if b is not None:
        y = y + relay.const(b)
    return y


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("square", ["multiply", "power"])
def test_layer_norm_chain_is_one_primitive(dnnl, affine, square):
    g, b = (_c(16) + 1, _c(16)) if affine else (None, None)
    part, (x,), out = _run(dnnl, lambda x: _ln_chain(x, g, b, square), (4, 16))
    _one_region(dnnl, part)
    (func,) = dnnl.dnnl_functions(part)
    assert "dnnl.layer_norm" in str(func)
    want = _layer_norm(x, 1.0 if g is None else g, 0.0 if b is None else b)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def test_mean_over_another_axis_is_not_a_layer_norm(dnnl):
    def body(x: Any) -> Any:
        mean = relay.mean(x, axis=[0], keepdims=True)
        d = x - mean
        return d / relay.sqrt(relay.mean(d * d, axis=[0], keepdims=True) + relay.const(1e-5))

    mod = dnnl.module_of(body, (4, 16))
    assert "mean" in dnnl.host_ops(partition_for_dnnl(mod))


def _gelu_erf(x: Any) -> Any:
    return x * (relay.erf(x / relay.const(SQRT2)) + relay.const(1.0)) * relay.const(0.5)


def _gelu_tanh(x: Any) -> Any:
    inner = relay.const(math.sqrt(2 / math.pi)) * (
        x + relay.const(0.044715) * relay.power(x, relay.const(3.0))
    )
    return relay.const(0.5) * x * (relay.const(1.0) + relay.tanh(inner))


@pytest.mark.parametrize("form", ["erf", "tanh"])
def test_gelu_is_a_post_op_of_the_dense_layer(dnnl, form):
    w = _c(32, 16)
    gelu = _gelu_erf if form == "erf" else _gelu_tanh
    part, (x,), out = _run(dnnl, lambda x: gelu(relay.nn.dense(x, relay.const(w))), (8, 16))
    _one_region(dnnl, part)
    y = (x @ w.T).astype(np.float64)
    if form == "erf":
        want = 0.5 * y * (1 + _erf(y / SQRT2))
    else:
        want = 0.5 * y * (1 + np.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y**3)))
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def test_wrong_constants_are_not_gelu(dnnl):
    mod = dnnl.module_of(
        lambda x: x * (relay.erf(x / relay.const(2.0)) + relay.const(1.0)) * relay.const(0.5),
        (4, 8),
    )
    lib = dnnl.build(partition_for_dnnl(mod))
    steps = [
        step
        for m in lib.lib.imported_modules
        if m.type_key == "dnnl"
        for r in m.regions.values()
        for step in r.steps()
    ]
    assert any(step.startswith("erf") for step in steps)  # erf as erf (the runtime's loop)
    assert not any("gelu" in step for step in steps)
    x = np.linspace(-3, 3, 32, dtype="float32").reshape(4, 8)
    (got,) = dnnl.run_lib(lib, {"x0": x})
    want = x * (_erf(x / 2.0) + 1.0) * 0.5
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _attention(q: Any, k: Any, v: Any, mask: Any, heads: int, d: int, seq: int) -> Any:
    def split(t: Any, perm: tuple[int, ...]) -> Any:
        t = relay.transpose(relay.reshape(t, (1, seq, heads, d)), perm)
        return relay.reshape(t, (heads, *((seq, d) if perm[-1] == 3 else (d, seq))))

    scores = relay.nn.batch_matmul(
        split(q, (0, 2, 1, 3)), split(k, (0, 2, 3, 1)), transpose_b=False
    )
    scores = relay.reshape(scores, (1, heads, seq, seq)) / relay.const(math.sqrt(d))
    additive = (relay.const(1.0) - relay.reshape(mask, (1, 1, 1, seq))) * relay.const(-10000.0)
    probs = relay.reshape(relay.nn.softmax(scores + additive), (heads, seq, seq))
    ctx = relay.nn.batch_matmul(probs, split(v, (0, 2, 1, 3)), transpose_b=False)
    ctx = relay.transpose(relay.reshape(ctx, (1, heads, seq, d)), (0, 2, 1, 3))
    return relay.reshape(ctx, (1, seq, heads * d))


def test_attention_with_a_mask_is_one_region(dnnl):
    heads, d, seq = 2, 8, 12
    mod = dnnl.module_of(
        lambda q, k, v, m: _attention(q, k, v, m, heads, d, seq),
        (1, seq, heads * d),
        (1, seq, heads * d),
        (1, seq, heads * d),
        (1, seq),
    )
    part = partition_for_dnnl(mod)
    _one_region(dnnl, part)
    inputs = dnnl.random_inputs(mod)
    mask = np.ones((1, seq), "float32")
    mask[0, 9:] = 0  # padding: these keys get no attention
    inputs["x3"] = mask
    (out,) = dnnl.run_lib(dnnl.build(part), inputs)

    def heads_of(t: np.ndarray) -> np.ndarray:
        return t.reshape(seq, heads, d).transpose(1, 0, 2)

    q, k, v = (heads_of(inputs[f"x{i}"]) for i in range(3))
    s = q @ k.transpose(0, 2, 1) / math.sqrt(d) + (1 - mask) * -10000.0
    want = (_softmax(s) @ v).transpose(1, 0, 2).reshape(1, seq, heads * d)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def test_causal_attention_mask_fuses_into_a_jit_matmul(dnnl):
    # GPT-2's causal mask is a constant [1, 1, seq, seq] added to every head's scores: a
    # post-op operand broadcast over the heads only. oneDNN 3.2 runs that rank-3 matmul
    # with its reference kernel (~600x slower); the region must pick a jit kernel.
    heads, d, seq = 3, 16, 32
    causal = np.triu(np.full((seq, seq), -10000.0, "float32"), k=1)[None, None]

    def body(q: Any, k: Any, v: Any) -> Any:
        def split(t: Any, perm: tuple[int, ...]) -> Any:
            t = relay.transpose(relay.reshape(t, (1, seq, heads, d)), perm)
            return relay.reshape(t, (heads, *((seq, d) if perm[-1] == 3 else (d, seq))))

        s = relay.nn.batch_matmul(split(q, (0, 2, 1, 3)), split(k, (0, 2, 3, 1)), transpose_b=False)
        s = relay.reshape(s, (1, heads, seq, seq)) / relay.const(math.sqrt(d))
        probs = relay.reshape(relay.nn.softmax(s + relay.const(causal)), (heads, seq, seq))
        ctx = relay.nn.batch_matmul(probs, split(v, (0, 2, 1, 3)), transpose_b=False)
        ctx = relay.transpose(relay.reshape(ctx, (1, heads, seq, d)), (0, 2, 1, 3))
        return relay.reshape(ctx, (1, seq, heads * d))

    shape = (1, seq, heads * d)
    mod = dnnl.module_of(body, shape, shape, shape)
    part = partition_for_dnnl(mod)
    _one_region(dnnl, part)
    inputs = dnnl.random_inputs(mod)
    lib = dnnl.build(part)
    (out,) = dnnl.run_lib(lib, inputs)
    (region,) = next(m for m in lib.lib.imported_modules if m.type_key == "dnnl").regions.values()
    fused = [s for s in region.steps() if s.startswith("matmul") and "binary_add" in s]
    assert len(fused) == 1, region.steps()
    assert "impl=ref" not in fused[0], fused

    def heads_of(t: np.ndarray) -> np.ndarray:
        return t.astype(np.float64).reshape(seq, heads, d).transpose(1, 0, 2)

    q, k, v = (heads_of(inputs[f"x{i}"]) for i in range(3))
    s = q @ k.transpose(0, 2, 1) / math.sqrt(d) + causal[0]
    want = (_softmax(s) @ v).transpose(1, 0, 2).reshape(shape)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


# -- an encoder layer as onnx exporters write it, against onnxruntime ---------------------------


def _encoder_layer_onnx(hidden: int = 32, heads: int = 2, ffn: int = 64, seq: int = 16) -> Any:
    """One BERT encoder layer in ONNX (opset 13, layer norms and GELU decomposed)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    d = hidden // heads
    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name))
        return name

    def shape(name: str, value: tuple[int, ...]) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.int64), name))
        return name

    def node(op: str, ins: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def linear(x: str, n_in: int, n_out: int, name: str) -> str:
        y = node("MatMul", [x, const(name + ".w", _c(n_in, n_out))], name + ".mm")
        return node("Add", [y, const(name + ".b", _c(n_out))], name)

    def layer_norm(x: str, name: str) -> str:
        m = node("ReduceMean", [x], name + ".mean", axes=[-1])
        dd = node("Sub", [x, m], name + ".d")
        sq = node("Pow", [dd, const(name + ".two", 2.0)], name + ".sq")
        var = node("ReduceMean", [sq], name + ".var", axes=[-1])
        std = node(
            "Sqrt", [node("Add", [var, const(name + ".eps", 1e-5)], name + ".ve")], name + ".std"
        )
        y = node("Div", [dd, std], name + ".n")
        y = node("Mul", [y, const(name + ".g", _c(hidden) + 1)], name + ".s")
        return node("Add", [y, const(name + ".beta", _c(hidden))], name)

    def split(x: str, perm: list[int], name: str) -> str:
        r = node("Reshape", [x, shape(name + ".shape", (1, seq, heads, d))], name + ".r")
        return node("Transpose", [r], name, perm=perm)

    q = split(linear("x", hidden, hidden, "q"), [0, 2, 1, 3], "qh")
    k = split(linear("x", hidden, hidden, "k"), [0, 2, 3, 1], "kh")
    v = split(linear("x", hidden, hidden, "v"), [0, 2, 1, 3], "vh")
    s = node("Div", [node("MatMul", [q, k], "qk"), const("scale", math.sqrt(d))], "scores")
    um = node("Unsqueeze", ["mask", shape("axes", (1, 2))], "mask4")
    add_mask = node(
        "Mul", [node("Sub", [const("one", 1.0), um], "inv"), const("big", -10000.0)], "am"
    )
    p = node("Softmax", [node("Add", [s, add_mask], "masked")], "probs", axis=-1)
    c = node("Transpose", [node("MatMul", [p, v], "ctx")], "ctxt", perm=[0, 2, 1, 3])
    c = node("Reshape", [c, shape("hshape", (1, seq, hidden))], "ctxr")
    h = layer_norm(node("Add", ["x", linear(c, hidden, hidden, "o")], "res1"), "ln1")
    f = linear(h, hidden, ffn, "f1")
    g = node("Div", [f, const("sqrt2", SQRT2)], "g.d")
    g = node("Add", [node("Erf", [g], "g.erf"), const("g.one", 1.0)], "g.cdf")
    g = node("Mul", [node("Mul", [f, g], "g.xc"), const("g.half", 0.5)], "gelu")
    out = layer_norm(node("Add", [h, linear(g, ffn, hidden, "f2")], "res2"), "out")
    graph = helper.make_graph(
        nodes,
        "encoder_layer",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, seq]),
        ],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, seq, hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def test_encoder_layer_is_one_region_and_matches_onnxruntime(dnnl):
    ort = pytest.importorskip("onnxruntime")
    seq = 16
    model = _encoder_layer_onnx(seq=seq)
    mod, params = relay.frontend.from_onnx(model, shape={"x": (1, seq, 32), "mask": (1, seq)})
    part = partition_for_dnnl(mod, params)
    _one_region(dnnl, part)
    x = RNG.standard_normal((1, seq, 32)).astype("float32")
    mask = np.ones((1, seq), "float32")
    mask[0, 12:] = 0
    lib = dnnl.build(part)
    (got,) = dnnl.run_lib(lib, {"x": x, "mask": mask})
    (region,) = next(m for m in lib.lib.imported_modules if m.type_key == "dnnl").regions.values()
    steps = region.steps()
    # reshapes and transposes are views: no copy steps; scale and mask fuse into QK^T
    assert not [s for s in steps if s.startswith(("reshape", "transpose"))], steps
    assert any(s.startswith("matmul") and "+linear+binary_add" in s for s in steps), steps
    assert sum(s.startswith("layer_norm") for s in steps) == 2, steps
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x, "mask": mask})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# -- executors in parallel; special values ----------------------------------------------------


def test_executors_of_one_build_run_in_parallel_threads(dnnl):
    w = _c(64, 32)
    mod = dnnl.module_of(lambda x: relay.nn.relu(relay.nn.dense(x, relay.const(w))), (16, 32))
    lib = dnnl.build(partition_for_dnnl(mod))
    inputs = [RNG.standard_normal((16, 32)).astype("float32") for _ in range(8)]
    wants = [np.maximum(x @ w.T, 0) for x in inputs]
    wrong: list[int] = []

    def work(i: int) -> None:
        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        for r in range(40):
            k = (i + r) % len(inputs)
            m.set_input("x0", inputs[k])
            m.run()
            if not np.allclose(m.get_output(0).numpy(), wants[k], rtol=1e-4, atol=1e-5):
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_one_region_run_from_many_threads(dnnl):
    from relaykit.backends.dnnl import compile_region

    w = _c(64, 32)
    mod = partition_for_dnnl(
        dnnl.module_of(lambda x: relay.nn.relu(relay.nn.dense(x, relay.const(w))), (16, 32))
    )
    typed = relay.transform.InferType()(mod)
    region = compile_region(dnnl.dnnl_functions(typed)[0])
    inputs = [RNG.standard_normal((16, 32)).astype("float32") for _ in range(6)]
    out = [np.empty((16, 64), "float32") for _ in inputs]
    bound = region.bind([inputs[0]], [out[0]])
    wrong: list[int] = []

    def work(i: int) -> None:
        for _ in range(40):
            got = region(inputs[i])
            if not np.allclose(got, np.maximum(inputs[i] @ w.T, 0), rtol=1e-4, atol=1e-5):
                wrong.append(i)
            bound()  # one bound region shared by the threads: they take turns

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    np.testing.assert_allclose(out[0], np.maximum(inputs[0] @ w.T, 0), rtol=1e-4, atol=1e-5)


def test_relu_keeps_nan_and_infinities(dnnl):
    special = np.array([[np.nan, np.inf, -np.inf, -1.0, 0.0, 2.5, -0.0, 3e38]], "float32")
    one = relay.const(np.ones((1, 8), "float32"))
    # relu alone, and relu as a post-op of a binary node
    for body, want in (
        (relay.nn.relu, np.maximum(special, 0)),
        (lambda x: relay.nn.relu(x + one), np.maximum(special + 1, 0)),
    ):
        part = partition_for_dnnl(dnnl.module_of(body, (1, 8)))
        assert dnnl.host_ops(part) == []
        (got,) = dnnl.run_lib(dnnl.build(part), {"x0": special})
        np.testing.assert_array_equal(got, want)


def test_reshapes_sink_to_the_producer_and_stop():
    from relaykit.backends.dnnl.compile.fuse import optimize
    from relaykit.backends.dnnl.run.program import Node, Program

    # reshape(dense(reshape(x))) + bias + residual, as exporters write a linear layer
    p = Program()
    x, res = p.add_input((1, 8, 16)), p.add_input((1, 8, 16))
    w = p.add_constant(np.ones((16, 16)))
    bias = p.add_constant(np.ones((1, 1, 16)))
    x2 = p.new_tensor((8, 16))
    d = p.new_tensor((8, 16))
    d3 = p.new_tensor((1, 8, 16))
    a1 = p.new_tensor((1, 8, 16))
    a2 = p.new_tensor((1, 8, 16))
    p.nodes = [
        Node("reshape", [x], x2),
        Node("dense", [x2], d, {"weight": w, "bias": -1}),
        Node("reshape", [d], d3),
        Node("binary", [d3, bias], a1, {"alg": "add"}),
        Node("binary", [res, a1], a2, {"alg": "add"}),
    ]
    p.outputs = [a2]
    counts = optimize(p).op_counts()
    assert counts == {"reshape": 3, "dense+sum": 1}, counts


def test_nn_gelu_is_a_gelu_composite_and_a_post_op(dnnl):
    """``nn.gelu`` (what the frontends emit) goes to oneDNN as the written-out chain does:
    a ``dnnl.gelu_erf`` composite, lowered as the dense layer's post-op."""
    from relaykit.backends.dnnl.compile.codegen import region_ops
    from relaykit.backends.dnnl.compile.fuse import optimize
    from relaykit.backends.dnnl.compile.lower import lower_function

    w = _c(32, 16)
    part, (x,), out = _run(
        dnnl, lambda x: relay.nn.gelu(relay.nn.dense(x, relay.const(w))), (8, 16)
    )
    _one_region(dnnl, part)
    (fn,) = dnnl.dnnl_functions(part)
    assert region_ops(fn) == ["nn.dense", "dnnl.gelu_erf"]
    assert optimize(lower_function(fn)).op_counts() == {"dense+gelu_erf": 1}
    y = (x @ w.T).astype(np.float64)
    np.testing.assert_allclose(out, 0.5 * y * (1 + _erf(y / SQRT2)), rtol=1e-4, atol=1e-5)
