"""``relaykit demo``: a model from partition to a timed run on a real backend.

The default flow: ResNet-18 (generated weights) partitioned for the fastest backend here
(dnnl when oneDNN is installed, else ccompiler, else the host alone; or ``--target``;
when dnnl is missing, one line says which extra installs it), the placement report
written to a file (in a new temporary directory unless ``--report-dir`` or ``--report``
names where), the model built, run, checked against the host build, and timed
against it (a backend slower than the host is reported as such, with the reason). The
report, the build and the timing all come from one pipeline
(:func:`relaykit.cli._models.prepare_model`), so the report describes what runs.
``--walkthrough`` shows instead the BYOC walkthrough on VGG-11 with the demo rules,
pass by pass.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from relaykit.backends import target_key
from relaykit.backends.status import AVAILABLE, PREFERRED, best_available, describe
from relaykit.byoc import (
    AnnotateTarget,
    MergeCompilerRegions,
    MergeComposite,
    PartitionGraph,
    region_functions,
    scoped_registries,
)
from relaykit.byoc.choose import is_host_target
from relaykit.cli._common import (
    IMAGE_SIZE,
    Progress,
    SubParsers,
    artifact_signature,
    check_output_path,
    plural,
)
from relaykit.cli._models import (
    DEMO_TARGET,
    demo_patterns,
    format_breakdown,
    main_breakdown,
    prepare_model,
    report_partition,
)
from relaykit.cli.bench import measure, relaykit_engine
from relaykit.cli.compile import build_prepared, check_targets, region_counts
from relaykit.cli.run import positive_int, random_inputs
from relaykit.errors import UsageError
from relaykit.execution.build_module import build
from relaykit.execution.interpreter import create_executor
from relaykit.ir import Call, IRModule, Op, post_order
from relaykit.ir.op import register_op_attr
from relaykit.testing import vgg
from relaykit.transform import InferType

__all__ = [
    "register",
    "run",
    "walkthrough",
    "best_target",
    "faster_extra",
    "slower_reason",
    "report_path",
]

EPILOG = """\
examples:
  relaykit demo                                  # ResNet-18 on dnnl (else ccompiler, host)
  relaykit demo --model mobilenet --target ccompiler --image-size 96
  relaykit demo --report-dir reports            # the placement report in reports/
  relaykit demo --target host                    # no backend: the host alone
  relaykit demo --walkthrough                    # the four BYOC passes, one by one
"""

#: The name of the placement report in ``--report-dir``.
REPORT_NAME = "placement.txt"

#: Why a backend can be slower than the host build, by backend.
_SLOWER_BECAUSE = {
    "ccompiler": "ccompiler compiles plain C loops, while the host runs vectorised kernels",
    "jsonref": "jsonref is a reference interpreter of its regions, written for clarity",
    "dnnl": "the machine is busy, or the regions are too small to gain from oneDNN",
}


def register(sub: SubParsers) -> None:
    demo = sub.add_parser(
        "demo",
        help="partition, build, run and time a model on a real backend, end to end",
        description=(
            "Partition a built-in model for the fastest backend installed (dnnl if "
            "available, else ccompiler, else the host alone), write the placement report "
            "to a file (in a new temporary directory unless --report-dir or --report says "
            "where), build, run, check the result against the host build and time both."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument(
        "--model", default="resnet18", help="a built-in workload or a model file (resnet18)"
    )
    demo.add_argument(
        "--target",
        default=None,
        help="the backend (default: dnnl, else ccompiler, else host: no backend)",
    )
    demo.add_argument("--image-size", type=IMAGE_SIZE, default=224, help="input height and width")
    demo.add_argument(
        "--report-dir",
        metavar="DIR",
        help=f"write the placement report to DIR/{REPORT_NAME} (default: a new temporary "
        "directory)",
    )
    demo.add_argument("--report", metavar="FILE", help="write the placement report to FILE")
    demo.add_argument(
        "--runs", type=positive_int, default=3, help="timed runs per burst (default 3)"
    )
    demo.add_argument(
        "--walkthrough",
        action="store_true",
        help="show the BYOC walkthrough on VGG-11 with the demo rules instead",
    )
    demo.set_defaults(func=run)


def best_target() -> tuple[str, str]:
    """The first available backend of :data:`PREFERRED` (``host`` when none is), and why
    the others were passed."""
    name, passed = best_available(PREFERRED)
    return name or "host", "; ".join(passed)


def faster_extra(target: str) -> str | None:
    """One line saying what would make the demo faster when it does not run on dnnl
    because dnnl is not installed; ``None`` otherwise."""
    if target == PREFERRED[0]:
        return None
    row = describe(PREFERRED[0])
    if row.status == AVAILABLE:
        return None
    install = row.install or "pip install 'relaykit[dnnl]'"
    return f"dnnl (oneDNN) is not installed; {install} makes this model run faster"


def slower_reason(target: str) -> str:
    """Why ``target`` can run slower than the host build."""
    reason = _SLOWER_BECAUSE.get(target, f"{target}'s regions cost more than the host's kernels")
    hint = faster_extra(target)
    return f"{reason}; {hint}" if hint else reason


def _compare(target: str, fast: float, slow: float) -> str:
    if fast <= 0 or slow <= 0:
        return "too fast to compare"
    if fast <= slow:
        return f"{slow / fast:.1f}x faster than the host"
    return f"SLOWER than the host, {fast / slow:.1f}x: {slower_reason(target)}"


def _write_report(path: Path, text: str) -> None:
    check_output_path(path, "report file").write_text(text, encoding="utf-8")


def report_path(args: argparse.Namespace) -> Path:
    """Where the placement report goes: ``--report FILE``, else ``placement.txt`` in
    ``--report-dir`` (created), else in a new temporary directory."""
    if args.report:
        return Path(args.report)
    if args.report_dir:
        directory = Path(args.report_dir)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise UsageError(
                f"--report-dir {args.report_dir!r}: cannot create it ({err.strerror or err})"
            ) from None
    else:
        directory = Path(tempfile.mkdtemp(prefix="relaykit-demo-"))
    return directory / REPORT_NAME


def run(args: argparse.Namespace) -> int:
    if args.walkthrough:
        return walkthrough(args)
    if args.target:
        target, skipped = args.target, ""
    else:
        target, skipped = best_target()
    targets = [] if is_host_target(target) else [target]
    if not targets:
        target = "host"
    check_targets(targets)
    progress = Progress()
    t0 = time.perf_counter()
    # one pipeline: the report below describes the module that is built and timed
    model = prepare_model(args.model, targets, image_size=args.image_size)
    prepared = model.prepared
    ops = sum(main_breakdown(prepared.optimized).values())
    print(f"1. model: {model.what}, {ops} operators ({time.perf_counter() - t0:.1f} s)")
    note = f" ({skipped})" if skipped else ""
    print(f"2. backend: {target}{note}" if targets else f"2. backend: none, the host only{note}")
    hint = faster_extra(target) if not args.target else None
    if hint:
        print(f"   {hint}")
    report, summary = report_partition(model, args.model)
    if targets:
        t = summary.targets[target]
        print(
            f"3. partition: {plural(len(t.functions), 'region')} on {target} with "
            f"{plural(t.operators, 'operator')}, "
            f"{plural(summary.host_operators, 'operator')} left on the host"
        )
    else:
        print(f"3. partition: none, {plural(summary.host_operators, 'operator')} on the host")
    path = report_path(args)
    _write_report(path, f"{summary}\n\n{report}\n")
    print(f"   where every operator went and why: {path}")
    t1 = time.perf_counter()
    lib = build_prepared(prepared, progress)
    host = build(prepared.source, target="llvm") if targets else lib
    regions = region_counts(prepared.partitioned)
    built = (
        f"{plural(regions.get(target, 0), 'region')} compiled by {target}, the rest planned "
        "for the host"
        if targets
        else "everything planned for the host"
    )
    print(f"4. build: {built} ({time.perf_counter() - t1:.1f} s)")
    specs, _ = artifact_signature(lib)
    inputs = random_inputs(specs, 0)
    engines = [relaykit_engine(target, lib, inputs)]
    if targets:
        engines.append(relaykit_engine("host", host, inputs))
    reference = engines[-1].outputs
    diff = max(
        float(np.max(np.abs(a - b))) for a, b in zip(engines[0].outputs, reference, strict=True)
    )
    scale = max(float(np.max(np.abs(o))) for o in reference)
    ok = diff <= 1e-4 * max(1.0, scale)
    checked = f"max abs difference from the host build {diff:.2g}" if targets else "computed"
    print(
        f"5. run: {', '.join(str(s) for s in specs)} (random); {checked}"
        + ("" if ok else "  MISMATCH")
    )
    measure(engines, bursts=2, runs=max(1, args.runs), pause=0.2)
    runs = f"median of {len(engines[0].times)} runs"
    if targets:
        fast, slow = engines[0].median_ms, engines[-1].median_ms
        compared = _compare(target, fast, slow)
        print(f"6. time: {target} {fast:.2f} ms, host {slow:.2f} ms ({runs}): {compared}")
    else:
        print(f"6. time: host {engines[0].median_ms:.2f} ms ({runs})")
    print(
        "\nnext: relaykit compile model.onnx --target "
        f"{target} -o model.rkmod && relaykit run model.rkmod --print-time"
    )
    return 0 if ok else 1


def _step(title: str, mod: IRModule) -> None:
    print(f"\n== {title}")
    print(format_breakdown(main_breakdown(mod)))


def walkthrough(args: argparse.Namespace) -> int:
    """The BYOC walkthrough on VGG-11 with the demo rules, pass by pass."""
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
