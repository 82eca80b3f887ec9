"""Winograd F(2x2, 3x3) convolutions in dnnl regions, where they measure faster.

oneDNN 3.2 has no Winograd kernel on x86 CPUs, and its direct 3x3 kernels already
run near the cores' peak, so fewer multiply-adds is the only way left to a faster
3x3 convolution. Winograd's minimal filtering algorithm (Lavin & Gray, 2016) makes
each 2x2 output tile from a 4x4 input patch with 16 multiplies per channel pair
instead of 36: the input and output transforms are additions (relaykit's own
kernels, ``native/winograd.h``), and the multiplies become 16 matrix products
that oneDNN's matmul runs at peak. The weights are transformed once, in float64:
``U = G w G^T`` (:mod:`relaykit.backends.host.winograd_math`, shared with the host path).

Whether it pays depends on the layer: with few channels the transforms and the
16 intermediate planes cost more than the products save. So :func:`winograd_build`
measures it: it builds the region with every eligible convolution (3x3, stride 1,
no dilation or groups, channels a multiple of 16, post-ops relu/clip/linear/sum,
intermediates within :data:`MAX_TILE_BYTES`)
by Winograd, compares each one's time with its direct kernel's in the blocked
build, and keeps Winograd only where it ran at least 5% faster.

The transform is exact in exact arithmetic; in float32 the results differ from a
direct convolution by a few units in the last place of the accumulated sums
(tests check them against a float64 reference).

>>> import numpy as np
>>> w = np.ones((16, 16, 3, 3), np.float32)
>>> transformed_weight(w).shape    # [16 tile positions, C, K]
(16, 16, 16)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from relaykit.backends.dnnl.run.program import Node, Program
from relaykit.backends.dnnl.run.region import DnnlRegion
from relaykit.backends.host.winograd_math import G, transformed_weight
from relaykit.errors import CodegenError

__all__ = [
    "G",
    "eligible",
    "transformed_weight",
    "with_winograd",
    "winograd_build",
    "MIN_GAIN",
    "MAX_TILE_BYTES",
]

#: Post-ops the output transform applies itself.
_POSTS = frozenset({"relu", "leaky_relu", "clip", "clip_v2", "linear", "sum"})

#: Winograd is kept for a convolution when it ran at least this much faster.
MIN_GAIN = 0.05

#: Largest intermediate (transformed input or product, 16 planes of tiles x channels) a
#: Winograd convolution may take: each is about 4x its activation, so big images keep the
#: direct kernel rather than grow the region's arena by gigabytes.
MAX_TILE_BYTES = 64 << 20


def eligible(p: Program, n: Node) -> bool:
    """Whether convolution node ``n`` of ``p`` can run by Winograd F(2x2, 3x3)."""
    if n.op != "conv" or n.attrs.get("groups", 1) != 1 or "winograd" in n.attrs:
        return False
    w = n.attrs["weight"]
    if not p.is_constant(w):
        return False
    ws, xs, ys = p.shapes[w], p.shapes[n.inputs[0]], p.shapes[n.out]
    if len(ys) != 4:
        return False
    tiles = ys[0] * ((ys[2] + 1) // 2) * ((ys[3] + 1) // 2)
    return (
        16 * tiles * max(xs[1], ys[1]) * 4 <= MAX_TILE_BYTES
        and len(ws) == 4
        and ws[2:] == (3, 3)
        and list(n.attrs["strides"]) == [1, 1]
        and list(n.attrs.get("dilation", [1, 1])) == [1, 1]
        and xs[1] % 16 == 0
        and ys[1] % 16 == 0
        and all(q["op"] in _POSTS for q in n.post)
        and sum(q["op"] == "sum" for q in n.post) <= 1
    )


def with_winograd(p: Program, outs: Collection[int]) -> Program:
    """A copy of ``p`` whose convolutions writing ``outs`` run by Winograd."""
    q = p.copy()
    for n in q.nodes:
        if n.out in outs:
            n.attrs["winograd"] = q.add_constant(transformed_weight(q.constants[n.attrs["weight"]]))
    return q


def _conv_ms(region: DnnlRegion, inputs: Sequence[np.ndarray], repeats: int) -> dict[int, float]:
    """Per convolution (by the tensor it writes): the best over ``repeats`` calls of the
    sum of its steps' times (one step direct, three by Winograd)."""
    best: dict[int, float] = {}
    for _ in range(repeats):
        per: dict[int, float] = {}
        for step, ms in region.profile(inputs):
            if step.startswith("conv t"):
                out = int(step.split()[1][1:])
                per[out] = per.get(out, 0.0) + ms
        for out, ms in per.items():
            best[out] = min(best.get(out, float("inf")), ms)
    return best


def winograd_build(
    program: Program, build: Callable[[Program], Any], direct: DnnlRegion
) -> Any | None:
    """``program`` built blocked with Winograd for the convolutions where it measured at
    least :data:`MIN_GAIN` faster than in ``direct`` (the blocked build); None when
    none is eligible or faster."""
    outs = {n.out for n in program.nodes if eligible(program, n)}
    if not outs:
        return None
    trial = with_winograd(program, outs)
    trial.layout = "blocked"
    try:
        region = build(trial)
    except CodegenError:  # the runtime refused a Winograd convolution: keep them direct
        return None
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in direct.input_shapes]
    region(*inputs)  # warm up both
    direct(*inputs)
    repeats = 5
    wino, base = _conv_ms(region, inputs, repeats), _conv_ms(direct, inputs, repeats)
    keep = {t for t in outs if t in wino and t in base and wino[t] < (1 - MIN_GAIN) * base[t]}
    if not keep:
        return None
    if keep == outs:
        return region
    final = with_winograd(program, keep)
    final.layout = "blocked"
    return build(final)
