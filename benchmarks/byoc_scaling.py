"""Time of each BYOC pass on real and synthetic graphs, and how it grows.

    python benchmarks/byoc_scaling.py            # vgg-11, resnet-50, synthetic 1k/10k/100k
    python benchmarks/byoc_scaling.py --quick    # synthetic 1k/10k only

Synthetic graphs use a target ``bench`` that supports ``add``, ``nn.relu`` and
``multiply`` (``abs`` and ``tanh`` stay on the host) and one composite pattern
``bench.add_relu``:

- ``chain``: one long chain of elementwise operators, supported and not mixed;
- ``residual``: blocks ``out = x + relu(f(x))`` whose skip or main path
  sometimes runs on the host, so many merges must be refused (cycles);
- ``diamond``: blocks fanning out to four branches (one unsupported) that join
  in a tuple and a sum, so merges see fan-out, fan-in and tuples.

The growth exponent between sizes ``a`` and ``b`` is
``log(t_b / t_a) / log(b / a)``: 1.0 is linear, 2.0 quadratic. Each graph runs
``--repeat`` times (default 2) and the best time of each pass is shown, so that
other processes on a shared machine stay out of the numbers.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import (
    AnnotateTarget,
    MergeCompilerRegions,
    MergeComposite,
    PartitionGraph,
    scoped_registries,
)
from relaykit.dataflow_pattern import is_op, wildcard
from relaykit.ir import Expr, IRModule
from relaykit.transform import InferType

TARGET = "bench"
SUPPORTED = ("add", "nn.relu", "multiply")
PATTERNS = [(f"{TARGET}.add_relu", is_op("nn.relu")(is_op("add")(wildcard(), wildcard())))]


def _unary(i: int, x: Expr) -> Expr:
    k = i % 7
    if k in (0, 3):
        return relay.nn.relu(x)
    if k == 1:
        return relay.abs(x)
    if k == 2:
        return relay.add(x, relay.const(np.float32(0.5)))
    if k == 4:
        return relay.multiply(x, relay.const(np.float32(0.9)))
    if k == 5:
        return relay.tanh(x)
    return relay.add(x, x)


def chain(n_ops: int) -> IRModule:
    x = relay.var("x", shape=(1, 8))
    y: Expr = x
    for i in range(n_ops):
        y = _unary(i, y)
    return IRModule.from_expr(relay.Function([x], y))


def residual(n_ops: int) -> IRModule:
    """Blocks of 5 ops: a = f(x); b = relu(a); s = g(x); out = add(b, s) ... ."""
    x = relay.var("x", shape=(1, 8))
    y: Expr = x
    i = 0
    while i < n_ops:
        a = _unary(i, y)
        b = relay.nn.relu(a)
        s = _unary(i + 3, y)
        y = relay.add(b, s)
        y = _unary(i + 1, y)
        i += 5
    return IRModule.from_expr(relay.Function([x], y))


def diamond(n_ops: int) -> IRModule:
    """Blocks of 8 ops: four branches (one on the host) joined by a tuple and sums."""
    x = relay.var("x", shape=(1, 8))
    y: Expr = x
    i = 0
    while i < n_ops:
        b1 = relay.nn.relu(y)
        b2 = relay.abs(y)
        b3 = relay.multiply(y, y)
        b4 = relay.add(y, relay.const(np.float32(1.0)))
        t = relay.Tuple([b1, b2, b3, b4])
        s = relay.add(relay.TupleGetItem(t, 0), relay.TupleGetItem(t, 2))
        s = relay.add(s, relay.TupleGetItem(t, 1))
        y = relay.add(s, relay.TupleGetItem(t, 3))
        i += 8
    return IRModule.from_expr(relay.Function([x], y))


def _register() -> None:
    for name in SUPPORTED:
        tvm.ir.register_op_attr(name, f"target.{TARGET}", lambda expr: True)


def run_passes(
    mod: IRModule, target: str, patterns: list, repeat: int = 1
) -> tuple[dict[str, float], IRModule]:
    """Time each pass; with ``repeat`` > 1, the best of that many runs (the usual way
    to keep other processes on a shared machine out of the numbers)."""
    mod = InferType()(mod)
    best: dict[str, float] = {}
    out = mod
    for _ in range(repeat):
        times: dict[str, float] = {}
        steps: list[tuple[str, Callable[[IRModule], IRModule]]] = [
            ("MergeComposite", MergeComposite(patterns)),
            ("AnnotateTarget", AnnotateTarget(target)),
            ("MergeCompilerRegions", MergeCompilerRegions()),
            ("PartitionGraph", PartitionGraph()),
        ]
        out = mod
        for name, p in steps:
            t0 = time.perf_counter()
            out = p(out)
            times[name] = time.perf_counter() - t0
        times["total"] = sum(times.values())
        for k, v in times.items():
            best[k] = min(best.get(k, v), v)
    return best, out


def _functions(mod: IRModule) -> int:
    return sum(1 for _, f in mod.items() if "Compiler" in f.attrs)


def _print_row(label: str, times: dict[str, float], n_funcs: int) -> None:
    cells = "  ".join(
        f"{times[k]:8.3f}"
        for k in (
            "MergeComposite",
            "AnnotateTarget",
            "MergeCompilerRegions",
            "PartitionGraph",
            "total",
        )
    )
    print(f"{label:<22}{cells}  {n_funcs:>8}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="synthetic 1k and 10k only")
    parser.add_argument(
        "--repeat", type=int, default=2, help="runs per graph; the best time of each pass is shown"
    )
    args = parser.parse_args(argv)
    sys.setrecursionlimit(10_000)  # nothing here may need more: the passes are iterative
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    print(
        f"{'graph':<22}{'MergeComp':>8}  {'Annotate':>8}  {'MergeReg':>8}  "
        f"{'Partition':>8}  {'total':>8}  {'#funcs':>8}   (seconds)"
    )
    with scoped_registries():
        _register()
        if not args.quick:
            from relaykit.testing import resnet, vgg

            tvm.ir.register_op_attr("nn.dense", "target.byoc-target", lambda expr: True)
            conv = is_op("nn.conv2d")(wildcard(), wildcard())
            vgg_patterns = [
                (
                    "byoc-target.conv2d_relu_with_bias",
                    is_op("nn.relu")(is_op("nn.bias_add")(conv, wildcard())),
                ),
                ("byoc-target.conv2d_relu_wo_bias", is_op("nn.relu")(conv)),
            ]
            net = vgg.get_net(1, (3, 224, 224), 1000, "float32", num_layers=11)
            times, out = run_passes(
                IRModule.from_expr(net), "byoc-target", vgg_patterns, args.repeat
            )
            _print_row("vgg-11", times, _functions(out))
            for name in ("nn.conv2d", "nn.batch_norm", "nn.relu", "add"):
                tvm.ir.register_op_attr(name, "target.byoc-target", lambda expr: True, level=11)
            net = resnet.get_net(1, 1000, num_layers=50, image_shape=(3, 224, 224))
            times, out = run_passes(
                IRModule.from_expr(net), "byoc-target", vgg_patterns, args.repeat
            )
            _print_row("resnet-50", times, _functions(out))
        for kind, build in (("chain", chain), ("residual", residual), ("diamond", diamond)):
            totals = {}
            for n in sizes:
                mod = build(n)
                times, out = run_passes(mod, TARGET, PATTERNS, args.repeat)
                totals[n] = times["total"]
                _print_row(f"{kind} {n // 1000}k", times, _functions(out))
            a, b = sizes[-2], sizes[-1]
            exponent = math.log(totals[b] / totals[a]) / math.log(b / a)
            print(f"{'':<22}growth exponent {a // 1000}k -> {b // 1000}k: {exponent:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
