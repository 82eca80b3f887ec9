"""Choosing a region's activation layout by timing it (``layout="auto"``).

oneDNN's fastest convolution kernels depend on the model and the layer: the
brgemm-based nhwc kernels win on ResNet's 3x3 convolutions, the blocked
(nChw16c) ones on small 1x1 convolutions and wherever concatenations abound
(they run in place only in the blocked layout). :func:`fastest_build` builds
the region nhwc and blocked, and, when the program has 1x1 convolutions feeding
depthwise 3x3 ones (MobileNet), a third time blocked with each such pair fused into
one primitive (:func:`.fuse.fuse_depthwise`); then once mixing them by stage
(:func:`by_stage`: each input size's convolutions as in the build that ran them
fastest, so that layouts change only between stages: MobileNetV2 takes its
112x112 stage fused and blocked, most of the rest nhwc), and once blocked with the
3x3 convolutions that measured faster by Winograd's algorithm run so
(:func:`.winograd.winograd_build`); it times the builds on random inputs and keeps
the fastest. An int8 region whose layouts build alike (oneDNN's int8 kernels run nhwc)
is tried with oneDNN's direct kernel for its large depthwise convolutions instead
(:func:`int8_depthwise_build`). Mixing per convolution instead measured slower: the reorders eat the
gain.

>>> from relaykit.backends.dnnl.run.program import Node, Program
>>> p = Program()
>>> x = p.add_input((1, 4))
>>> y = p.new_tensor((1, 4))
>>> p.nodes.append(Node("eltwise", [x], y, {"alg": "relu"}))
>>> p.outputs.append(y)
>>> fastest_build(p, lambda q: q.layout)   # no convolution: nothing to tune
'blocked'
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.backends.dnnl.run.program import Program
from relaykit.backends.dnnl.run.region import DnnlRegion
from relaykit.errors import CodegenError

from .fuse import fuse_depthwise
from .winograd import winograd_build

__all__ = [
    "fastest_build",
    "fastest",
    "by_stage",
    "staged",
    "depthwise_fused_build",
    "int8_depthwise_build",
    "TUNED_LAYOUTS",
]

#: The single layouts tried.
TUNED_LAYOUTS = ("nhwc", "blocked")


def fastest_build(program: Program, build: Callable[[Program], Any], winograd: bool = True) -> Any:
    """The fastest region ``build`` makes of ``program`` (see the module docstring);
    ``winograd`` False leaves out the Winograd build."""
    if not any(n.op in ("conv", "qconv") for n in program.nodes):
        program.layout = "blocked"
        return build(program)
    candidates = []
    for choice in TUNED_LAYOUTS:
        program.layout = choice
        candidates.append(build(program))
    if len({tuple(r.steps()) for r in candidates}) == 1:
        program.layout = candidates[0].layout
        direct = int8_depthwise_build(program, build, candidates[0])
        return candidates[0] if direct is None else fastest([candidates[0], direct])
    fused = depthwise_fused_build(program, build)
    pure = [*candidates, fused] if fused is not None else list(candidates)
    mixed = by_stage(program, pure)
    if mixed is not None:
        candidates.append(build(mixed))
    if fused is not None:
        candidates.append(fused)
    wino = (
        winograd_build(program, build, candidates[TUNED_LAYOUTS.index("blocked")])
        if winograd
        else None
    )
    if wino is not None:
        candidates.append(wino)
    return fastest(candidates)


def depthwise_fused_build(program: Program, build: Callable[[Program], Any]) -> Any | None:
    """``program`` built blocked with its 1x1 + depthwise pairs fused (see
    :func:`.fuse.fuse_depthwise`), keeping only the pairs oneDNN fuses in one jit kernel:
    its generic fallback (``ref_fused_convolution``, the two kernels one after the other
    through a scratch tensor) measured slower than the two convolutions apart (MobileNetV2,
    2 threads: 0.148 against 0.127 ms for the 144-channel pair at 56x56), the jit kernel
    faster (0.136 against 0.165 ms for the 96-channel pair at 112x112). None when no pair
    is left or oneDNN fuses none."""
    exclude: frozenset[int] = frozenset()
    for _ in range(2):
        fused = fuse_depthwise(program, exclude)
        if fused is None:
            return None
        fused.layout = "blocked"
        try:
            region = build(fused)
        except CodegenError:  # no oneDNN kernel takes one of the pairs
            return None
        generic = frozenset(
            int(step.split()[1][1:])
            for step in region.steps()
            if step.startswith("conv t") and "+dw" in step and "impl=ref_fused" in step
        )
        if not generic:
            return region
        exclude |= generic
    return None


#: The oneDNN kernel tried for int8 depthwise convolutions besides its first choice.
DIRECT_DEPTHWISE = "jit_int8:"
#: The direct kernel replaces the first choice when it measured at most this fraction of
#: its time: the gains are 10-20% where there are any, and a loaded machine's per-step
#: times (each step waiting for a descheduled worker) differ by noise alone.
MARGIN = 0.9
#: Only depthwise layers writing at least this many pixels per channel are tried: the
#: direct kernel measured slower on every smaller one (28x28: 0.018 against 0.017 ms,
#: 7x7 with 960 channels: 0.012 against 0.0075 ms), and fewer trials leave fewer
#: choices to a loaded machine's noise.
DIRECT_MIN_PIXELS = 56 * 56


def int8_depthwise_build(program: Program, build: Callable[[Program], Any], base: Any) -> Any:
    """``program`` (built as ``base``) with each int8 depthwise convolution run by the
    kernel measured faster for it: oneDNN's first choice for int8 depthwise layers
    (``brdgmm_dw``) or its direct int8 kernel (:data:`DIRECT_DEPTHWISE`, asked for with
    the node's ``impl``). On this 2-core AVX-512 machine the direct kernel measured
    faster on MobileNetV2's large layers (0.034 against 0.043 ms at 32x112x112, 0.032
    against 0.038 ms for 96 channels at 112x112 with stride 2), slower from 28x28 on.
    Every layer keeps its layout, so per-layer choices add no reorders. None when no
    layer is faster so (by :data:`MARGIN`)."""
    depthwise = [
        n for n in program.nodes
        if n.op == "qconv" and int(n.attrs.get("groups", 1)) > 1
        and int(n.attrs["groups"]) == program.shapes[n.inputs[0]][1]
        and int(np.prod(program.shapes[n.out][2:])) >= DIRECT_MIN_PIXELS
    ]  # fmt: skip
    if not depthwise:
        return None
    trial = program.copy()
    for node in trial.nodes:
        if node.op == "qconv" and node.out in {n.out for n in depthwise}:
            node.attrs["impl"] = DIRECT_DEPTHWISE
    other = build(trial)
    if other.steps() == base.steps():
        return None  # oneDNN has no such kernel here
    rng = np.random.default_rng(0)
    inputs = [
        (rng.standard_normal(s) * (1 if d.kind == "f" else 20)).astype(d)
        for s, d in zip(base.input_shapes, base.input_dtypes, strict=True)
    ]
    # interleaved rounds: both builds see the same machine
    first: dict[tuple[str, int], float] = {}
    direct: dict[tuple[str, int], float] = {}
    for _ in range(4):
        for r, best in ((base, first), (other, direct)):
            for key, ms in _step_times(r, inputs, ("qconv",), rounds=2).items():
                best[key] = min(best.get(key, float("inf")), ms)
    faster = {
        n.out for n in depthwise
        if direct.get(("qconv", n.out), float("inf")) < MARGIN * first.get(("qconv", n.out), 0.0)
    }  # fmt: skip
    if not faster:
        return None
    if len(faster) == len(depthwise):
        return other
    mixed = program.copy()
    for node in mixed.nodes:
        if node.out in faster:
            node.attrs["impl"] = DIRECT_DEPTHWISE
    return build(mixed)


def _step_times(
    region: DnnlRegion,
    inputs: list[np.ndarray],
    kinds: tuple[str, ...] = ("conv", "reorder"),
    rounds: int = 0,
) -> dict[tuple[str, int], float]:
    """Best time of each step of ``kinds`` (convolutions and reorders) of ``region``, by
    kind and the tensor it writes (a convolution) or converts (a reorder)."""
    best: dict[tuple[str, int], float] = {}
    t = time.perf_counter()
    region(*inputs)
    repeats = rounds or (3 if time.perf_counter() - t < 0.05 else 2)
    for _ in range(repeats):
        for step, ms in region.profile(inputs):
            kind, _, rest = step.partition(" t")
            if kind in kinds:
                key = (kind, int(rest.split()[0]))
                best[key] = min(best.get(key, float("inf")), ms)
    return best


def _built_convs(region: DnnlRegion) -> list[dict[str, Any]]:
    """The convolution nodes of the program ``region`` was built from."""
    doc = json.loads(region.program_json)
    return [n for n in doc["nodes"] if n["op"] == "conv"]


def _fused_outputs(region: DnnlRegion) -> set[int]:
    """What the fused 1x1 + depthwise steps of ``region`` write (the depthwise outputs)."""
    return {
        n["out"] for n in _built_convs(region) if any(p["op"] == "dw" for p in n.get("post", ()))
    }


def by_stage(program: Program, pure: Sequence[DnnlRegion]) -> Program | None:
    """``program`` with the convolutions of each stage (same input height and width) as
    in the ``pure`` build that ran that stage fastest (its convolutions and the reorders
    of what they read), so that layouts change (with a reorder) only between stages;
    None when one build wins every stage. The builds are single layouts and blocked with
    1x1 + depthwise pairs fused (a pair reads one stage, so its fused step competes with
    the two steps apart; the pairs of the stages that build wins are fused in the
    result)."""
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in pure[0].input_shapes]
    stage_of = {n.out: program.shapes[n.inputs[0]][2:] for n in program.nodes if n.op == "conv"}
    stage_time = {stage: [0.0] * len(pure) for stage in stage_of.values()}
    for i, region in enumerate(pure):
        times = _step_times(region, inputs)
        for node in _built_convs(region):
            if node["out"] not in stage_of or ("conv", node["out"]) not in times:
                return None  # a step the program does not have: cannot compare
            stage_time[stage_of[node["out"]]][i] += times["conv", node["out"]]
        # A build's reorders count against the stage whose convolutions read the tensor
        # (nhwc converts the region's nchw input; blocked kernels read it as it is).
        for (kind, t), ms in times.items():
            stage = program.shapes[t][2:] if kind == "reorder" else None
            if stage in stage_time:
                stage_time[stage][i] += ms
    choice = {stage: acc.index(min(acc)) for stage, acc in stage_time.items()}
    if len(set(choice.values())) <= 1:
        return None
    return staged(program, pure, choice)


def staged(
    program: Program, pure: Sequence[DnnlRegion], choice: dict[tuple[int, ...], int]
) -> Program:
    """``program`` with the convolutions of each stage (input height and width) as the
    build ``pure[choice[stage]]`` has them: its layout, and its fused 1x1 + depthwise
    pairs."""
    stage_of = {n.out: program.shapes[n.inputs[0]][2:] for n in program.nodes if n.op == "conv"}
    keep = frozenset(
        t for i, r in enumerate(pure) for t in _fused_outputs(r) if choice[stage_of[t]] == i
    )
    mixed = fuse_depthwise(program, frozenset(stage_of) - keep) if keep else None
    if mixed is None:
        mixed = program.copy()
    # The first convolution lowers as in its stage's build (it reads the region input in
    # whatever layout that build's kernels take); the others are told their layout.
    convs = [n for n in mixed.nodes if n.op == "conv"]
    mixed.layout = pure[choice[stage_of[convs[0].out]]].layout
    for node in convs[1:]:
        node.attrs["layout"] = pure[choice[stage_of[node.out]]].layout
    return mixed


def fastest(regions: Sequence[DnnlRegion], budget: float = 1.0) -> DnnlRegion:
    """The region of ``regions`` (same program, other layouts) that runs fastest on random
    inputs: the best of a few timed calls each, in interleaved rounds, within about
    ``budget`` seconds (big regions get fewer calls)."""
    if len(regions) == 1 or len({tuple(r.steps()) for r in regions}) == 1:
        return regions[0]
    rng = np.random.default_rng(0)
    inputs = [
        (rng.standard_normal(s) * (1 if d.kind == "f" else 20)).astype(d)
        for s, d in zip(regions[0].input_shapes, regions[0].input_dtypes, strict=True)
    ]
    outs = [
        [np.empty(s, d) for s, d in zip(r.output_shapes, r.output_dtypes, strict=True)]
        for r in regions
    ]
    calls = [r.bind(inputs, o, adaptive=False) for r, o in zip(regions, outs, strict=True)]
    t = time.perf_counter()
    for call in calls:
        call()
    per_call = (time.perf_counter() - t) / len(calls)
    rounds = 3 if per_call < 0.05 else 2
    # As many timed calls as the budget allows, up to 15 per round (was 3): on a shared
    # machine most calls of a multi-threaded region are slowed by other processes, and
    # builds a few percent apart (SqueezeNet's blocked and nhwc: 1.71 and 1.83 ms, sums of
    # per-step minima at 2 threads) need many calls for their best to be telling.
    runs = max(1, min(15, int(budget / (rounds * len(calls) * max(per_call, 1e-6))) - 1))
    best = [float("inf")] * len(regions)
    for _ in range(rounds):
        for i, call in enumerate(calls):
            call()  # wake this region's threads, warm its buffers
            for _ in range(runs):
                t = time.perf_counter()
                call()
                best[i] = min(best[i], time.perf_counter() - t)
    return regions[best.index(min(best))]
