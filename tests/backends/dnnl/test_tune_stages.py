"""Layout tuning by stage (``tune.staged``): each input size's convolutions as in the build
chosen for it -- nhwc, blocked, or blocked with 1x1 + depthwise pairs fused -- with the
fused pairs of the stages that chose the fused build only; results against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.backends.dnnl.compile.fuse import fuse_depthwise
from relaykit.backends.dnnl.compile.tune import by_stage, staged
from relaykit.backends.dnnl.run.program import Node, Program
from relaykit.backends.dnnl.run.region import DnnlRegion

RNG = np.random.default_rng(11)
# (cin, cout, kernel, stride, groups) of an inverted-residual pair of blocks:
# 12x12 stage: 1x1 expand, depthwise stride 2; 6x6 stage: 1x1 project, 1x1 expand,
# depthwise, 1x1 project added to the first projection.
LAYERS = [(8, 16, 1, 1, 1), (16, 16, 3, 2, 16), (16, 8, 1, 1, 1), (8, 24, 1, 1, 1),
          (24, 24, 3, 1, 24), (24, 8, 1, 1, 1)]  # fmt: skip
WEIGHTS = [
    ((RNG.standard_normal((co, ci // g, k, k)) * 0.3).astype("float32"),
     RNG.standard_normal(co).astype("float32"))
    for ci, co, k, _, g in LAYERS
]  # fmt: skip


@pytest.fixture(autouse=True)
def _needs_dnnl(dnnl):
    """Skipped (with the reason) where oneDNN is missing, as every dnnl test."""


def _program() -> Program:
    p = Program()
    t = p.add_input((1, 8, 12, 12))
    hw = 12
    outs = []
    for (_, co, k, s, g), (w, b) in zip(LAYERS, WEIGHTS, strict=True):
        hw = (hw + 2 * (k // 2) - k) // s + 1
        y = p.new_tensor((1, co, hw, hw))
        attrs = {"weight": p.add_constant(w), "bias": p.add_constant(b), "strides": [s, s],
                 "dilation": [1, 1], "pad": [k // 2] * 4, "groups": g}  # fmt: skip
        node = Node("conv", [t], y, attrs)
        if len(outs) in (0, 1, 3, 4):
            node.post = [{"op": "clip_v2", "alpha": 0.0, "beta": 6.0}]
        if len(outs) == 5:
            node.post = [{"op": "sum", "in": outs[2]}]
        p.nodes.append(node)
        outs.append(y)
        t = y
    p.outputs = [t]
    return p


def _conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, groups: int) -> np.ndarray:
    k = w.shape[2]
    pad = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho = (x.shape[2] + 2 * pad - k) // stride + 1
    cin_g, cout_g = x.shape[1] // groups, w.shape[0] // groups
    out = np.zeros((1, w.shape[0], ho, ho))
    for g in range(groups):
        xs = xp[:, g * cin_g : (g + 1) * cin_g]
        ws = w[g * cout_g : (g + 1) * cout_g].astype(np.float64)
        for i in range(k):
            for j in range(k):
                win = xs[:, :, i : i + stride * (ho - 1) + 1 : stride,
                         j : j + stride * (ho - 1) + 1 : stride]  # fmt: skip
                out[:, g * cout_g : (g + 1) * cout_g] += np.einsum(
                    "nchw,oc->nohw", win, ws[:, :, i, j]
                )
    return out + b[None, :, None, None]


def _reference(x: np.ndarray) -> np.ndarray:
    t = x.astype(np.float64)
    outs = []
    for n, ((_, _, _, s, g), (w, b)) in enumerate(zip(LAYERS, WEIGHTS, strict=True)):
        t = _conv(t, w, b, s, g)
        if n in (0, 1, 3, 4):
            t = np.clip(t, 0.0, 6.0)
        if n == 5:
            t = t + outs[2]
        outs.append(t)
    return t


def _pure() -> list[DnnlRegion]:
    builds = []
    for layout in ("nhwc", "blocked"):
        p = _program()
        p.layout = layout
        builds.append(DnnlRegion.from_program(p, num_threads=2))
    fused = fuse_depthwise(_program())
    assert fused is not None
    fused.layout = "blocked"
    builds.append(DnnlRegion.from_program(fused, num_threads=2))
    return builds


@pytest.mark.parametrize(
    ("first", "second", "fused_steps"),
    [(2, 0, 1), (0, 2, 1), (1, 0, 0), (2, 2, 2)],
)
def test_staged_build_matches_numpy(first, second, fused_steps):
    pure = _pure()
    mixed = staged(_program(), pure, {(12, 12): first, (6, 6): second})
    region = DnnlRegion.from_program(mixed, num_threads=2)
    steps = region.steps()
    assert sum("+dw" in s for s in steps) == fused_steps
    # the 6x6 stage's 1x1 projection (reading the stride-2 output) in its build's layout
    project = next(s for s in steps if s.startswith("conv") and "1x16x6x6" in s.split()[2])
    nhwc_strides = ":576,1,96,16"
    assert (nhwc_strides in project.split()[2]) == (pure[second].layout == "nhwc")
    x = RNG.standard_normal((1, 8, 12, 12)).astype("float32")
    np.testing.assert_allclose(region(x), _reference(x), rtol=1e-5, atol=1e-5)


def test_by_stage_result_matches_numpy():
    mixed = by_stage(_program(), _pure())  # whatever the timings chose
    if mixed is None:
        pytest.skip("one build won every stage")
    x = RNG.standard_normal((1, 8, 12, 12)).astype("float32")
    region = DnnlRegion.from_program(mixed, num_threads=2)
    np.testing.assert_allclose(region(x), _reference(x), rtol=1e-5, atol=1e-5)


class _TimedBuild:
    """A stand-in for a built region whose profile gives fixed step times."""

    def __init__(self, program: Program, times: dict[str, float]) -> None:
        self.layout = program.layout
        self.program_json = program.to_json()
        self.input_shapes = [program.shapes[t] for t in program.inputs]
        self._times = times

    def __call__(self, *inputs: np.ndarray) -> None:
        pass

    def profile(self, inputs: list[np.ndarray]) -> list[tuple[str, float]]:
        return [(f"{step} 1x1 -> impl=stub", ms) for step, ms in self._times.items()]


def _timed_builds(nhwc_first: float) -> list[_TimedBuild]:
    # tensors: input 0; the six convolutions write 1, 4, 7, 10, 13, 16
    nhwc, blocked = _program(), _program()
    nhwc.layout, blocked.layout = "nhwc", "blocked"
    fused = fuse_depthwise(_program())
    assert fused is not None
    fused.layout = "blocked"
    rest = {"conv t7": 0.01, "conv t10": 0.01, "conv t13": 0.01, "conv t16": 0.01}
    return [
        _TimedBuild(
            nhwc, {"reorder t0": 0.05, "conv t1": nhwc_first, "conv t4": nhwc_first, **rest}
        ),
        _TimedBuild(blocked, {"conv t1": 0.02, "conv t4": 0.02, **{k: 0.03 for k in rest}}),
        _TimedBuild(fused, {"conv t4": 0.015, "conv t7": 0.03, "conv t13": 0.05, "conv t16": 0.03}),
    ]


@pytest.mark.parametrize("nhwc_first", [0.02, 0.005])
def test_by_stage_counts_reorders_and_fused_pairs(nhwc_first):
    # 12x12 stage: nhwc 2 * nhwc_first + 0.05 (its input reorder), blocked 0.04, fused
    # 0.015; 6x6 stage: nhwc 0.04, blocked 0.12, fused 0.11. Without the reorder, nhwc's
    # 0.01 would win the first stage at nhwc_first=0.005.
    mixed = by_stage(_program(), _timed_builds(nhwc_first))  # type: ignore[arg-type]
    assert mixed is not None
    assert mixed.layout == "blocked"
    convs = [n for n in mixed.nodes if n.op == "conv"]
    assert [n.out for n in convs] == [4, 7, 10, 13, 16]
    assert [q["op"] for q in convs[0].post].count("dw") == 1
    assert [n.attrs.get("layout") for n in convs[1:]] == ["nhwc"] * 4
    assert not any(q["op"] == "dw" for n in convs[1:] for q in n.post)
