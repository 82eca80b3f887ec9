"""Winograd F(2x2, 3x3) convolutions in dnnl regions: the algebra against SciPy's
correlation, and regions built with them against a float64 NumPy convolution."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import correlate2d

import relaykit as tvm
from relaykit import relay
from relaykit.backends.dnnl import OPTIONS_KEY, partition_for_dnnl
from relaykit.backends.dnnl.compile import tune, winograd
from relaykit.backends.dnnl.compile.winograd import (
    G,
    eligible,
    transformed_weight,
    winograd_build,
    with_winograd,
)
from relaykit.backends.dnnl.run.program import Node, Program
from relaykit.backends.dnnl.run.region import DnnlRegion
from relaykit.contrib import graph_executor
from relaykit.errors import CodegenError

#: Lavin & Gray's input and output transforms for F(2x2, 3x3), written out here.
BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.float64)
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.float64)


@pytest.fixture
def _dnnl(dnnl):
    """Skipped (with the reason) where oneDNN is missing, as every dnnl test; the dnnl
    test helpers."""
    return dnnl


def test_transforms_compute_a_correlation():
    rng = np.random.default_rng(0)
    d, g = rng.standard_normal((4, 4)), rng.standard_normal((3, 3))
    y = AT @ ((G @ g @ G.T) * (BT @ d @ BT.T)) @ AT.T
    np.testing.assert_allclose(y, correlate2d(d, g, mode="valid"), rtol=1e-12, atol=1e-12)


def test_transformed_weight_layout():
    w = np.random.default_rng(1).standard_normal((32, 16, 3, 3)).astype(np.float32)
    u = transformed_weight(w)
    assert u.shape == (16, 16, 32) and u.dtype == np.float32
    k, c = 5, 7
    want = G @ w[k, c].astype(np.float64) @ G.T
    np.testing.assert_allclose(u[:, c, k].reshape(4, 4), want, rtol=1e-6)


def _conv_node(p: Program, x: int, cin: int, cout: int, out_hw: tuple[int, int],
               pad: list[int], seed: int, bias: bool = True,
               stride: int = 1) -> tuple[Node, np.ndarray, np.ndarray | None]:  # fmt: skip
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((cout, cin, 3, 3)) / np.sqrt(9 * cin)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    y = p.new_tensor((p.shapes[x][0], cout, *out_hw))
    attrs = {"weight": p.add_constant(w), "bias": p.add_constant(b) if b is not None else -1,
             "strides": [stride, stride], "dilation": [1, 1], "pad": pad, "groups": 1}  # fmt: skip
    return Node("conv", [x], y, attrs), w, b


SHAPES = [  # batch, cin, cout, h, w, pad (top, left, bottom, right)
    (1, 16, 32, 13, 13, [1, 1, 1, 1]),
    (2, 32, 16, 8, 6, [1, 1, 1, 1]),
    (1, 16, 48, 7, 9, [0, 0, 0, 0]),
    (1, 48, 16, 6, 5, [0, 1, 2, 1]),
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_winograd_conv_matches_numpy(_dnnl, shape, threads):
    n, cin, cout, h, w, pad = shape
    p = Program()
    x = p.add_input((n, cin, h, w))
    node, wt, b = _conv_node(p, x, cin, cout, (h + pad[0] + pad[2] - 2, w + pad[1] + pad[3] - 2),
                             pad, seed=cin + cout)  # fmt: skip
    node.post = [{"op": "relu"}]
    p.nodes.append(node)
    p.outputs = [node.out]
    assert eligible(p, node)
    q = with_winograd(p, {node.out})
    q.layout = "blocked"
    region = DnnlRegion.from_program(q, num_threads=threads)
    assert any("winograd gemm" in s for s in region.steps())
    xv = np.random.default_rng(n + h).standard_normal((n, cin, h, w)).astype(np.float32)
    want = np.maximum(_dnnl.conv_ref(xv, wt, b, pad), 0.0)
    np.testing.assert_allclose(region(xv), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("post", "fn"),
    [
        ([{"op": "clip_v2", "alpha": -0.5, "beta": 0.75}], lambda y, r: np.clip(y, -0.5, 0.75)),
        ([{"op": "leaky_relu", "alpha": 0.1}], lambda y, r: np.where(y > 0, y, 0.1 * y)),
        ([{"op": "linear", "alpha": 2.0, "beta": -1.0}], lambda y, r: 2.0 * y - 1.0),
        ([{"op": "sum"}, {"op": "relu"}], lambda y, r: np.maximum(y + r, 0.0)),
    ],
)
def test_winograd_post_ops(_dnnl, post, fn):
    # conv1 (direct) feeds conv2 (Winograd) and, for "sum", is also conv2's residual
    p = Program()
    x = p.add_input((1, 16, 10, 10))
    c1, w1, b1 = _conv_node(p, x, 16, 32, (10, 10), [1] * 4, seed=3)
    c2, w2, b2 = _conv_node(p, c1.out, 32, 32, (10, 10), [1] * 4, seed=4, bias=False)
    c2.post = [dict(q, **({"in": c1.out} if q["op"] == "sum" else {})) for q in post]
    p.nodes += [c1, c2]
    p.outputs = [c2.out]
    q = with_winograd(p, {c2.out})
    q.layout = "blocked"
    region = DnnlRegion.from_program(q, num_threads=2)
    assert sum("winograd" in s for s in region.steps()) == 3
    xv = np.random.default_rng(5).standard_normal((1, 16, 10, 10)).astype(np.float32)
    r = _dnnl.conv_ref(xv, w1, b1, [1] * 4)
    want = fn(_dnnl.conv_ref(r, w2, b2, [1] * 4), r)
    np.testing.assert_allclose(region(xv), want, rtol=1e-5, atol=1e-5)


def test_eligibility():
    p = Program()
    x = p.add_input((1, 16, 8, 8))
    ok, _, _ = _conv_node(p, x, 16, 16, (8, 8), [1] * 4, seed=0)
    strided, _, _ = _conv_node(p, x, 16, 16, (4, 4), [1, 1, 0, 0], seed=0, stride=2)
    narrow, _, _ = _conv_node(p, x, 16, 8, (8, 8), [1] * 4, seed=0)
    mul, _, _ = _conv_node(p, x, 16, 16, (8, 8), [1] * 4, seed=0)
    mul.post = [{"op": "binary_mul", "in": ok.out}]
    grouped, _, _ = _conv_node(p, x, 16, 16, (8, 8), [1] * 4, seed=0)
    grouped.attrs["groups"] = 2
    assert eligible(p, ok)
    assert not any(eligible(p, n) for n in (strided, narrow, mul, grouped))
    big = p.add_input((1, 64, 1024, 1024))  # 16 planes x 262,144 tiles x 64 ch: 1 GiB
    huge, _, _ = _conv_node(p, big, 64, 64, (1024, 1024), [1] * 4, seed=0)
    assert not eligible(p, huge)


def _one_conv(cin: int, cout: int, hw: int) -> tuple[Program, np.ndarray, np.ndarray | None]:
    """A blocked program of one padded 3x3 convolution, with its weight and bias."""
    p = Program()
    x = p.add_input((1, cin, hw, hw))
    node, w, b = _conv_node(p, x, cin, cout, (hw, hw), [1] * 4, seed=cin + hw)
    p.nodes.append(node)
    p.outputs = [node.out]
    p.layout = "blocked"
    return p, w, b


def _build(q: Program) -> DnnlRegion:
    return DnnlRegion.from_program(q, num_threads=2)


def test_build_without_eligible_convolutions_is_none(_dnnl):
    p, _, _ = _one_conv(8, 16, 6)
    assert winograd_build(p, _build, _build(p)) is None


def test_tuned_build_matches_numpy(_dnnl):
    # whichever way the tuner decides (timing), the region computes the same convolution
    p, w, b = _one_conv(64, 128, 14)
    region = winograd_build(p, _build, _build(p)) or _build(p)
    xv = np.random.default_rng(2).standard_normal((1, 64, 14, 14)).astype(np.float32)
    np.testing.assert_allclose(region(xv), _dnnl.conv_ref(xv, w, b, [1] * 4), rtol=1e-5, atol=1e-5)


def _relay_conv_module():
    x = relay.var("x", shape=(1, 32, 12, 12))
    w = relay.const(np.random.default_rng(0).standard_normal((32, 32, 3, 3)).astype("float32"))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1), kernel_size=(3, 3), channels=32))
    return tvm.IRModule.from_expr(relay.Function([x], y))


def test_winograd_option_off_keeps_convolutions_direct(_dnnl):
    mod = partition_for_dnnl(_relay_conv_module())
    with tvm.transform.PassContext(opt_level=3, config={OPTIONS_KEY: {"winograd": False}}):
        lib = relay.build(mod, target="llvm")
    dnnl_mod = next(m for m in lib.lib.imported_modules if m.type_key == "dnnl")
    steps = [s for r in dnnl_mod.regions.values() for s in r.steps()]
    assert steps and not any("winograd" in s for s in steps)


def test_winograd_option_must_be_bool(_dnnl):
    mod = partition_for_dnnl(_relay_conv_module())
    with (
        tvm.transform.PassContext(opt_level=3, config={OPTIONS_KEY: {"winograd": "yes"}}),
        pytest.raises(CodegenError, match="'winograd' must be True or False"),
    ):
        relay.build(mod, target="llvm")


def test_exported_winograd_region_runs_the_same(_dnnl, tmp_path, monkeypatch):
    # the tuner forced to build Winograd and keep that build (its last candidate)
    monkeypatch.setattr(winograd, "MIN_GAIN", -1e9)
    monkeypatch.setattr(tune, "fastest", lambda regions, budget=1.0: regions[-1])
    mod = partition_for_dnnl(_relay_conv_module())
    with tvm.transform.PassContext(opt_level=3, config={OPTIONS_KEY: {"num_threads": 2}}):
        lib = relay.build(mod, target="llvm")
    dnnl_mod = next(m for m in lib.lib.imported_modules if m.type_key == "dnnl")
    assert any("winograd" in s for r in dnnl_mod.regions.values() for s in r.steps())
    path = str(tmp_path / "wino.rk")
    lib.export_library(path)
    xv = np.random.default_rng(4).standard_normal((1, 32, 12, 12)).astype("float32")
    outs = []
    for module in (lib, tvm.runtime.load_module(path, allow_native=False)):
        g = graph_executor.GraphModule(module["default"](tvm.cpu()))
        g.set_input("x", xv)
        g.run()
        outs.append(g.get_output(0).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize(
    ("post", "want"),
    [
        ([{"op": "relu"}], 0.0),  # as oneDNN's fused relu: max(x, 0)
        ([{"op": "clip_v2", "alpha": -0.5, "beta": 0.75}], -0.5),
    ],
)
def test_nan_through_fused_activation_as_onednn(_dnnl, post, want):
    # NaN in, a fused relu / clip after: the direct kernels give 0 / the lower bound
    p, _, _ = _one_conv(16, 16, 6)
    p.nodes[0].post = post
    q = with_winograd(p, {p.nodes[0].out})
    xv = np.full((1, 16, 6, 6), np.nan, np.float32)
    got = _build(q)(xv)
    assert np.all(got == want) and not np.any(np.signbit(got) & (got == 0))
    np.testing.assert_array_equal(got, _build(p)(xv))  # oneDNN's direct kernel
