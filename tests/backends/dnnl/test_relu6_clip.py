"""ReLU6 / ONNX Clip (maximum then minimum with scalar constants) becomes one eltwise
clip post-op of the convolution before it, not two binary post-ops; results are checked
against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.backends.dnnl import partition_for_dnnl
from relaykit.backends.dnnl.compile.fuse import optimize
from relaykit.backends.dnnl.run.program import Node, Program

W = np.random.default_rng(5).standard_normal((6, 3, 3, 3)).astype("float32")


def _program(steps: list[tuple[str, float]]) -> Program:
    p = Program()
    x = p.add_input((1, 2, 4, 4))
    w = p.add_constant(np.ones((2, 2, 1, 1)))
    t = p.new_tensor((1, 2, 4, 4))
    attrs = {"weight": w, "bias": -1, "strides": [1, 1], "dilation": [1, 1],
             "pad": [0, 0, 0, 0], "groups": 1}  # fmt: skip
    p.nodes.append(Node("conv", [x], t, attrs))
    for alg, v in steps:
        y = p.new_tensor((1, 2, 4, 4))
        p.nodes.append(Node("binary", [t, p.add_constant(np.array(v))], y, {"alg": alg}))
        t = y
    p.outputs = [t]
    return optimize(p)


@pytest.mark.parametrize(
    ("steps", "posts"),
    [
        ([("max", 0.0), ("min", 6.0)], [{"op": "clip_v2", "beta": 6.0}]),
        ([("min", 6.0), ("max", -1.0)], [{"op": "clip_v2", "alpha": -1.0, "beta": 6.0}]),
        ([("max", 7.0), ("min", 6.0)],  # disjoint ranges: two clips, never merged
         [{"op": "clip_v2", "alpha": 7.0, "beta": float("inf")},
          {"op": "clip_v2", "alpha": float("-inf"), "beta": 6.0}]),
    ],
)  # fmt: skip
def test_scalar_max_min_become_one_clip_post_op(steps, posts):
    (conv,) = _program(steps).nodes
    got = [{k: v for k, v in q.items() if v} for q in conv.post]
    want = [{k: v for k, v in q.items() if v} for q in posts]
    assert got == want


def test_non_scalar_maximum_stays_binary():
    p = Program()
    x = p.add_input((1, 2, 4, 4))
    y = p.new_tensor((1, 2, 4, 4))
    p.nodes.append(Node("binary", [x, p.add_constant(np.zeros((1, 2, 1, 1)))], y, {"alg": "max"}))
    p.outputs = [y]
    assert optimize(p).nodes[0].op == "binary"


@pytest.mark.parametrize(
    ("lo", "hi", "first"),
    [(0.0, 6.0, "max"), (-0.5, 0.7, "min"), (1.0, 0.5, "max"), (1.0, 0.5, "min")],
)
def test_clip_after_convolution_matches_numpy(dnnl, lo, hi, first):
    def net(x):
        y = relay.nn.conv2d(x, relay.const(W), padding=(1, 1))
        if first == "max":
            return relay.minimum(relay.maximum(y, relay.const(lo)), relay.const(hi))
        return relay.maximum(relay.minimum(y, relay.const(hi)), relay.const(lo))

    mod = dnnl.module_of(net, (1, 3, 9, 7))
    pmod = partition_for_dnnl(mod)
    assert dnnl.host_ops(pmod) == []
    x = np.random.default_rng(0).standard_normal((1, 3, 9, 7)).astype("float32")
    (got,) = dnnl.run_lib(dnnl.build(pmod), {"x0": x})
    ref = dnnl.conv_ref(x, W)
    want = (
        np.minimum(np.maximum(ref, lo), hi)
        if first == "max"
        else np.maximum(np.minimum(ref, hi), lo)
    )
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_standalone_clip_on_an_input_matches_numpy(dnnl):
    def net(x):
        y = relay.maximum(relay.nn.relu(x) - relay.const(1.0), relay.const(0.5))
        return relay.minimum(y, relay.const(2.0))

    mod = dnnl.module_of(net, (1, 4, 5, 6))
    pmod = partition_for_dnnl(mod)
    x = np.random.default_rng(1).standard_normal((1, 4, 5, 6)).astype("float32") * 3
    (got,) = dnnl.run_lib(dnnl.build(pmod), {"x0": x})
    want = np.clip(np.maximum(x, 0) - 1.0, 0.5, 2.0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
