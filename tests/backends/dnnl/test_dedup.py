"""A region computes each node once: a residual add whose other operand is itself a
convolution (MobileNetV2's ``x + f(x)`` after a projection) no longer gets that
convolution twice (the pattern matcher duplicates a match's interior node that has
another user); duplicates are merged in the region program, constants compared by
value. Results checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.backends.dnnl import partition_for_dnnl
from relaykit.backends.dnnl.compile.dedup import merge_duplicates
from relaykit.backends.dnnl.compile.fuse import optimize
from relaykit.backends.dnnl.compile.lower import lower_function
from relaykit.backends.dnnl.run.program import Node, Program


def _conv1x1(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("nchw,oc->nohw", x, w[:, :, 0, 0].astype(np.float64)) + b[None, :, None, None]


def _residual_net(rng: np.random.Generator):
    """in -> projection p (1x1) -> expand (1x1, ReLU6) -> project f (1x1) -> p + f."""
    ws = [
        rng.standard_normal(s).astype("float32") * 0.3
        for s in [(8, 6, 1, 1), (24, 8, 1, 1), (8, 24, 1, 1)]
    ]
    bs = [rng.standard_normal(w.shape[0]).astype("float32") for w in ws]

    def conv(x, i):
        return relay.nn.bias_add(relay.nn.conv2d(x, relay.const(ws[i])), relay.const(bs[i]))

    def net(x):
        p = conv(x, 0)
        e = relay.clip(conv(p, 1), 0.0, 6.0)
        return relay.add(p, conv(e, 2))

    def numpy(x):
        p = _conv1x1(x.astype(np.float64), ws[0], bs[0])
        e = np.clip(_conv1x1(p, ws[1], bs[1]), 0, 6)
        return p + _conv1x1(e, ws[2], bs[2])

    return net, numpy


def test_residual_after_projection_has_one_conv_per_layer(dnnl):
    net, _ = _residual_net(np.random.default_rng(0))
    pmod = partition_for_dnnl(dnnl.module_of(net, (1, 6, 5, 5)))
    (func,) = dnnl.dnnl_functions(pmod)
    program = optimize(lower_function(func))
    assert program.op_counts() == {"conv": 1, "conv+clip": 1, "conv+sum": 1}


@pytest.mark.parametrize("layout", ["nhwc", "blocked", "auto"])
def test_residual_after_projection_matches_numpy(dnnl, layout):
    rng = np.random.default_rng(1)
    net, numpy = _residual_net(rng)
    pmod = partition_for_dnnl(dnnl.module_of(net, (1, 6, 5, 5)))
    assert dnnl.host_ops(pmod) == []
    x = rng.standard_normal((1, 6, 5, 5)).astype("float32")
    (got,) = dnnl.run_lib(dnnl.build(pmod, layout=layout), {"x0": x})
    np.testing.assert_allclose(got, numpy(x), rtol=1e-5, atol=1e-5)


def _two_convs(w0: np.ndarray, w1: np.ndarray, out_of_second: bool = False) -> Program:
    p = Program()
    x = p.add_input((1, 2, 3, 3))
    a, b, s = (p.new_tensor((1, 2, 3, 3)) for _ in range(3))
    attrs = {"strides": [1, 1], "dilation": [1, 1], "pad": [0, 0, 0, 0], "groups": 1}
    p.nodes = [
        Node("conv", [x], a, {**attrs, "weight": p.add_constant(w0), "bias": -1}),
        Node("conv", [x], b, {**attrs, "weight": p.add_constant(w1), "bias": -1}),
        Node("binary", [a, b], s, {"alg": "add"}),
    ]
    p.outputs = [s, b] if out_of_second else [s]
    return p


def test_equal_constants_merge_different_ones_do_not(dnnl):
    w = np.arange(4, dtype=np.float32).reshape(2, 2, 1, 1)
    same = _two_convs(w, w.copy())
    assert merge_duplicates(same) == 1
    assert [n.op for n in same.nodes] == ["conv", "binary"]
    assert same.nodes[1].inputs == [same.nodes[0].out] * 2

    other = _two_convs(w, w + 1)
    assert merge_duplicates(other) == 0
    assert len(other.nodes) == 3

    kept = _two_convs(w, w.copy(), out_of_second=True)  # a region output stays written
    assert merge_duplicates(kept) == 0


def test_chains_of_duplicates_merge_transitively(dnnl):
    p = Program()
    x = p.add_input((1, 4))
    t = [p.new_tensor((1, 4)) for _ in range(5)]
    p.nodes = [
        Node("eltwise", [x], t[0], {"alg": "relu"}),
        Node("eltwise", [x], t[1], {"alg": "relu"}),
        Node("eltwise", [t[0]], t[2], {"alg": "abs"}),
        Node("eltwise", [t[1]], t[3], {"alg": "abs"}),  # same as t[2] once t[1] is t[0]
        Node("binary", [t[2], t[3]], t[4], {"alg": "mul"}),
    ]
    p.outputs = [t[4]]
    assert merge_duplicates(p) == 2
    assert [(n.op, n.inputs) for n in p.nodes] == [
        ("eltwise", [x]),
        ("eltwise", [t[0]]),
        ("binary", [t[2], t[2]]),
    ]
