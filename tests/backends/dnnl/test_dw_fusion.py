"""oneDNN's 1x1 + depthwise convolution fusion (``dw`` post-op, MobileNet's expansion and
depthwise layers in one primitive): the fused region against a NumPy convolution."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.backends.dnnl.compile.fuse import fuse_depthwise
from relaykit.backends.dnnl.compile.tune import depthwise_fused_build
from relaykit.backends.dnnl.run.program import Node, Program
from relaykit.backends.dnnl.run.region import DnnlRegion

CIN, MID, HW = 16, 32, 14


def _weights(cin: int, mid: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(7)
    return (
        rng.standard_normal((mid, cin, 1, 1)).astype("float32") * 0.3,
        rng.standard_normal(mid).astype("float32"),
        rng.standard_normal((mid, 1, 3, 3)).astype("float32") * 0.5,
        rng.standard_normal(mid).astype("float32"),
    )


@pytest.fixture(autouse=True)
def _needs_dnnl(dnnl):
    """Skipped (with the reason) where oneDNN is missing, as every dnnl test."""


def _conv(attrs: dict, w: int, b: int, stride: int, pad: int, groups: int) -> dict:
    return {**attrs, "weight": w, "bias": b, "strides": [stride, stride], "dilation": [1, 1],
            "pad": [pad] * 4, "groups": groups}  # fmt: skip


def _program(stride: int, dw_clip: bool = True, cin: int = CIN, mid: int = MID,
             hw: int = HW) -> Program:  # fmt: skip
    w1, b1, wd, bd = _weights(cin, mid)
    p = Program()
    x = p.add_input((1, cin, hw, hw))
    t = p.new_tensor((1, mid, hw, hw))
    ho = (hw + 2 - 3) // stride + 1
    y = p.new_tensor((1, mid, ho, ho))
    c1 = Node("conv", [x], t, _conv({}, p.add_constant(w1), p.add_constant(b1), 1, 0, 1))
    c1.post = [{"op": "clip_v2", "beta": 6.0}]
    c2 = Node("conv", [t], y, _conv({}, p.add_constant(wd), p.add_constant(bd), stride, 1, mid))
    if dw_clip:
        c2.post = [{"op": "clip_v2", "alpha": -1.0, "beta": 2.0}]
    p.nodes += [c1, c2]
    p.outputs = [y]
    return p


def _reference(x: np.ndarray, stride: int, dw_clip: bool = True, mid: int = MID) -> np.ndarray:
    """clip(dwconv(clip(conv1x1(x), 0, 6)), -1, 2) in float64."""
    cin, hw = x.shape[1], x.shape[2]
    w1, b1, wd, bd = _weights(cin, mid)
    y = np.einsum("nchw,oc->nohw", x.astype(np.float64), w1[:, :, 0, 0])
    y = np.clip(y + b1[None, :, None, None], 0.0, 6.0)
    xp = np.pad(y, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ho = (hw + 2 - 3) // stride + 1
    out = np.zeros((1, mid, ho, ho))
    for i in range(3):
        for j in range(3):
            win = xp[
                :, :, i : i + stride * (ho - 1) + 1 : stride, j : j + stride * (ho - 1) + 1 : stride
            ]
            out += win * wd[None, :, 0, i, j, None, None]
    out += bd[None, :, None, None]
    return np.clip(out, -1.0, 2.0) if dw_clip else out


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("dw_clip", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_fused_pair_matches_numpy(stride, dw_clip, threads):
    fused = fuse_depthwise(_program(stride, dw_clip))
    assert fused is not None
    (node,) = fused.nodes
    assert [q["op"] for q in node.post] == ["clip_v2", "dw", *(["clip_v2"] if dw_clip else [])]
    fused.layout = "blocked"
    region = DnnlRegion.from_program(fused, num_threads=threads)
    assert any("+dw" in s for s in region.steps())
    x = np.random.default_rng(stride).standard_normal((1, CIN, HW, HW)).astype("float32")
    got = region(x)
    np.testing.assert_allclose(got, _reference(x, stride, dw_clip), rtol=1e-5, atol=1e-5)


def test_tuned_fused_build_matches_numpy():
    # MobileNetV2's first expansion (16 -> 96 channels at 112x112, depthwise stride 2):
    # the pair oneDNN 3.x fuses in its jit 1x1 kernel
    p = _program(2, cin=8, mid=96, hw=112)
    region = depthwise_fused_build(p, lambda q: DnnlRegion.from_program(q, num_threads=2))
    if region is None:
        pytest.skip("this oneDNN fuses no such pair in one jit kernel")
    assert all("ref_fused" not in s for s in region.steps())
    x = np.random.default_rng(3).standard_normal((1, 8, 112, 112)).astype("float32")
    got = region(x)
    np.testing.assert_allclose(got, _reference(x, 2, mid=96), rtol=1e-5, atol=1e-5)


def test_pairs_that_do_not_fit_stay_apart():
    p = _program(1)
    p.outputs.append(p.nodes[0].out)  # the 1x1's output is a region output too
    assert fuse_depthwise(p) is None
    q = _program(1)
    assert fuse_depthwise(q, exclude=frozenset({q.nodes[1].out})) is None
