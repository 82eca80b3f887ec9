"""BYOC over quantized graphs: composite patterns over QNN chains with MergeComposite,
and annotation.stop_fusion transparent to target annotation, so two QNN layers
separated by it become one region (MergeComposite -> AnnotateTarget ->
MergeCompilerRegions -> PartitionGraph, the flow of TVM's BYOC users)."""

from __future__ import annotations

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import configure_target, scoped_registries
from relaykit.byoc.qnn_patterns import (
    qdq_pattern,
    qnn_conv2d_pattern,
    qnn_dense_pattern,
    shift_requantize_conv2d_pattern,
)

RNG = np.random.default_rng(0)


def _c(v, dtype):
    return relay.const(np.array(v, dtype=dtype), dtype)


def qconv_layer(x, cin, cout):
    """qnn.conv2d -> bias add -> qnn.requantize -> clip: one int8 layer."""
    w = _c(RNG.integers(-127, 128, (cout, cin, 3, 3)), "int8")
    conv = relay.qnn.op.conv2d(
        x, w, _c(0, "int32"), _c(0, "int32"), _c(0.05, "float32"), _c(0.01, "float32"),
        kernel_size=(3, 3), channels=cout, padding=(1, 1),
    )  # fmt: skip
    biased = relay.add(conv, _c(RNG.integers(-500, 500, (cout, 1, 1)), "int32"))
    req = relay.qnn.op.requantize(
        biased, _c(0.0005, "float32"), _c(0, "int32"), _c(0.05, "float32"), _c(0, "int32"),
        out_dtype="int8",
    )  # fmt: skip
    return relay.clip(req, 0.0, 127.0)


def _two_layers(stop_fusion=True):
    x = relay.var("x", shape=(1, 4, 6, 6), dtype="int8")
    y = qconv_layer(x, 4, 8)
    if stop_fusion:
        y = relay.annotation.stop_fusion(y)
    out = qconv_layer(y, 8, 8)
    return tvm.IRModule.from_expr(relay.Function([x], out))


def _composites(mod):
    found = []
    relay.analysis.post_order_visit(
        mod["main"],
        lambda n: (
            found.append(str(n.attrs["Composite"]))
            if isinstance(n, relay.Function) and "Composite" in n.attrs
            else None
        ),
    )
    return found


def _run(mod, data):
    return relay.create_executor("graph", mod=mod).evaluate()(data).numpy()


def test_qnn_conv2d_chain_becomes_one_composite_and_computes_the_same():
    mod = relay.transform.InferType()(_two_layers())
    table = [("qlib.qconv2d", qnn_conv2d_pattern())]
    merged = relay.transform.MergeComposite(table)(mod)
    assert _composites(merged) == ["qlib.qconv2d", "qlib.qconv2d"]
    data = RNG.integers(-128, 128, (1, 4, 6, 6)).astype("int8")
    np.testing.assert_array_equal(_run(merged, data), _run(mod, data))


def test_pattern_flags_and_dense():
    x = relay.var("x", shape=(1, 4, 6, 6), dtype="int8")
    bare = qconv_layer(x, 4, 4).args[0]  # no clip
    assert qnn_conv2d_pattern(with_clip=False).match(bare)
    assert not qnn_conv2d_pattern().match(bare)
    d = relay.var("d", shape=(2, 16), dtype="int8")
    dense = relay.qnn.op.dense(
        d, _c(RNG.integers(-127, 128, (8, 16)), "int8"), _c(0, "int32"), _c(0, "int32"),
        _c(0.1, "float32"), _c(0.1, "float32"), units=8,
    )  # fmt: skip
    req = relay.qnn.op.requantize(
        relay.nn.bias_add(dense, _c(np.arange(8), "int32")),
        _c(0.01, "float32"), _c(0, "int32"), _c(0.2, "float32"), _c(0, "int32"),
    )  # fmt: skip
    assert qnn_dense_pattern().match(req)
    assert not qnn_dense_pattern(with_bias=False).match(req)


def test_qdq_pattern_over_a_binary_op():
    a = relay.var("a", shape=(4,), dtype="int8")
    b = relay.var("b", shape=(4,), dtype="int8")
    s, z = _c(0.1, "float32"), _c(0, "int32")
    f = relay.add(relay.qnn.op.dequantize(a, s, z), relay.qnn.op.dequantize(b, s, z))
    q = relay.qnn.op.quantize(f, s, z, out_dtype="int8")
    assert qdq_pattern("add", 2).match(q)
    assert not qdq_pattern("multiply", 2).match(q)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([a, b], q)))
    merged = relay.transform.MergeComposite([("qlib.add", qdq_pattern("add", 2))])(mod)
    assert _composites(merged) == ["qlib.add"]
    av = np.array([1, -5, 100, 127], "int8")
    bv = np.array([3, 5, 100, -128], "int8")
    got = relay.create_executor("graph", mod=merged).evaluate()(av, bv).numpy()
    np.testing.assert_array_equal(got, np.clip(av.astype(int) + bv, -128, 127))


def _partition(mod, transparent=None):
    with scoped_registries():
        if transparent is not None:
            configure_target("qlib", transparent_ops=transparent)
        mod = relay.transform.MergeComposite([("qlib.qconv2d", qnn_conv2d_pattern())])(mod)
        mod = relay.transform.AnnotateTarget(["qlib"])(mod)
        mod = relay.transform.MergeCompilerRegions()(mod)
        mod = relay.transform.PartitionGraph()(mod)
    return [gv for gv, f in mod.items() if f.attrs.get("Compiler") == "qlib"], mod


def test_stop_fusion_between_layers_does_not_split_the_region():
    regions, part = _partition(relay.transform.InferType()(_two_layers()))
    assert len(regions) == 1
    inside = []
    relay.analysis.post_order_visit(
        part[regions[0]],
        lambda n: (
            inside.append(n.op.name)
            if isinstance(n, relay.Call) and isinstance(n.op, tvm.ir.Op)
            else None
        ),
    )
    assert "annotation.stop_fusion" in inside
    # declared opaque, stop_fusion stays on the host between two single-layer regions
    split, _ = _partition(relay.transform.InferType()(_two_layers()), transparent=[])
    assert len(split) == 2


def test_shift_requantize_pattern_matches_relay_quantize_layers():
    w = RNG.uniform(-1, 1, (4, 4, 3, 3)).astype("float32")
    x = relay.var("x", shape=(1, 4, 8, 8))
    c1 = relay.nn.relu(relay.nn.conv2d(x, relay.const(w), kernel_size=(3, 3), padding=(1, 1)))
    c2 = relay.nn.conv2d(c1, relay.const(w), kernel_size=(3, 3), padding=(1, 1))
    mod = tvm.IRModule.from_expr(relay.Function([x], c2))
    with relay.quantize.qconfig(skip_conv_layers=None):
        qmod = relay.quantize.quantize(mod)
    merged = relay.transform.MergeComposite([("lib.conv", shift_requantize_conv2d_pattern())])(qmod)
    assert _composites(merged) == ["lib.conv", "lib.conv"]
    data = RNG.uniform(-1, 1, (1, 4, 8, 8)).astype("float32")
    np.testing.assert_array_equal(_run(merged, data), _run(qmod, data))
