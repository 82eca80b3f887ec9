"""``relaykit demo``: the BYOC walkthrough on VGG-11, end to end."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from relaykit.backend.interpreter import create_executor
from relaykit.backends import target_key
from relaykit.byoc import (
    AnnotateTarget,
    MergeCompilerRegions,
    MergeComposite,
    PartitionGraph,
    region_functions,
    scoped_registries,
)
from relaykit.cli._common import SubParsers
from relaykit.cli._models import DEMO_TARGET, demo_patterns, format_breakdown, main_breakdown
from relaykit.ir import Call, IRModule, Op, post_order
from relaykit.ir.op import register_op_attr
from relaykit.testing import vgg
from relaykit.transform import InferType

__all__ = ["register", "run"]

EPILOG = """\
examples:
  relaykit demo
  relaykit demo --image-size 64     # a smaller input, faster
"""


def register(sub: SubParsers) -> None:
    demo = sub.add_parser(
        "demo",
        help="the BYOC walkthrough on VGG-11, end to end",
        description="The BYOC walkthrough on VGG-11, end to end.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument("--image-size", type=int, default=224, help="input height and width")
    demo.set_defaults(func=run)


def _step(title: str, mod: IRModule) -> None:
    print(f"\n== {title}")
    print(format_breakdown(main_breakdown(mod)))


def run(args: argparse.Namespace) -> int:
    size = args.image_size
    t0 = time.perf_counter()
    mod, params = vgg.get_workload(
        batch_size=1, num_classes=1000, image_shape=(3, size, size), dtype="float32", num_layers=11
    )
    print(f"VGG-11, input (1, 3, {size}, {size}), built in {time.perf_counter() - t0:.1f} s")
    _step("the model", mod)
    with scoped_registries():
        # Operator-based rule: nn.dense is supported.
        register_op_attr("nn.dense", target_key(DEMO_TARGET), lambda expr: True)
        patterns = demo_patterns()
        print(
            f"\nRules for {DEMO_TARGET}: nn.dense; patterns "
            + ", ".join(name for name, _ in patterns)
        )
        steps: list[tuple[str, Callable[[IRModule], IRModule]]] = [
            ("MergeComposite", MergeComposite(patterns)),
            (f'AnnotateTarget("{DEMO_TARGET}")', AnnotateTarget(DEMO_TARGET)),
            ("MergeCompilerRegions", MergeCompilerRegions()),
            ("PartitionGraph", PartitionGraph()),
        ]
        part = InferType()(mod)
        for title, p in steps:
            t = time.perf_counter()
            part = p(part)
            _step(f"after {title} ({time.perf_counter() - t:.3f} s)", part)
    funcs = region_functions(part)
    print(f"\n{len(funcs)} functions partitioned for {DEMO_TARGET}:")
    for i, name in enumerate(funcs, 1):
        fn = part[name]
        ops = [
            n.op.name for n in post_order(fn.body) if isinstance(n, Call) and isinstance(n.op, Op)
        ]
        print(f"  {i}. @{name}  ({', '.join(ops)})")
    rng = np.random.default_rng(0)
    data = rng.standard_normal((1, 3, size, size)).astype("float32")
    t = time.perf_counter()
    ref = create_executor("debug", mod=mod).evaluate()(data, **params).numpy()
    t1 = time.perf_counter()
    got = create_executor("debug", mod=part).evaluate()(data, **params).numpy()
    t2 = time.perf_counter()
    diff = float(np.max(np.abs(ref - got)))
    print(
        f"\nEvaluated with the reference interpreter (external functions too): original "
        f"{t1 - t:.1f} s, partitioned {t2 - t1:.1f} s"
    )
    print(f"max abs difference: {diff:.3g}")
    ok = diff <= 1e-5 * max(1.0, float(np.max(np.abs(ref))))
    print(
        "the partitioned model computes the same result"
        if ok
        else "MISMATCH between the partitioned and the original model"
    )
    return 0 if ok else 1
