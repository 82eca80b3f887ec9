"""``partition_for_dnnl`` is the generic BYOC pipeline for the dnnl record: each pass once."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.backends.dnnl import partition_for_dnnl
from relaykit.instrument import pass_instrument
from relaykit.transform import PassContext


@pass_instrument
class _CountPasses:
    """Counts the passes that run, by name."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def run_before_pass(self, mod: Any, info: Any) -> None:
        self.counts[info.name] += 1


def _conv_bn_relu() -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(1, 8, 10, 10))
    w = relay.var("w", shape=(16, 8, 3, 3))
    gamma, beta, mean, var = (relay.var(n, shape=(16,)) for n in ("g", "b", "m", "v"))
    y = relay.nn.conv2d(x, w, padding=(1, 1))
    y = relay.nn.batch_norm(y, gamma, beta, mean, var)[0]
    mod = tvm.IRModule.from_expr(relay.Function([x, w, gamma, beta, mean, var], relay.nn.relu(y)))
    params = {
        "w": rng.standard_normal((16, 8, 3, 3)).astype("float32"),
        "g": rng.uniform(0.5, 1.5, 16).astype("float32"),
        "b": rng.standard_normal(16).astype("float32"),
        "m": rng.standard_normal(16).astype("float32"),
        "v": rng.uniform(0.5, 1.5, 16).astype("float32"),
    }
    return mod, params


def test_each_partitioning_pass_runs_once(dnnl):
    mod, params = _conv_bn_relu()
    counter = _CountPasses()
    with PassContext(instruments=[counter]):
        part = partition_for_dnnl(mod, params)
    once = (
        "SimplifyInference",
        "MergeComposite",
        "AnnotateTarget",
        "MergeCompilerRegions",
        "PartitionGraph",
    )
    assert {name: counter.counts[name] for name in once} == dict.fromkeys(once, 1)
    assert dnnl.host_ops(part) == []
    assert len(dnnl.dnnl_functions(part)) == 1
