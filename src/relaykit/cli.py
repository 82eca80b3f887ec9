"""The ``relaykit`` command.

``relaykit demo`` runs the BYOC walkthrough on VGG-11: rules and patterns for a
target named ``byoc-target``, the four partitioning passes with the operator
breakdown after each, the partitioned functions, and the partitioned model
evaluated against the original.

``relaykit partition MODEL --target X`` partitions a built-in workload or a
text-format file and prints, per target, its functions, operators, MACs and
parameter bytes, and the operator breakdown before and after.

``relaykit backends`` lists the backends relaykit knows (built in, or installed
through the ``relaykit.backends`` entry-point group) with their version, whether
they can run here (or what to install), and what each supports.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .backends import target_key
from .backends.status import describe_all, format_table
from .byoc.targets import activate_targets
from .errors import RelayKitError
from .ir import Call, Function, IRModule, Op, post_order

__all__ = [
    "main",
    "op_breakdown",
    "format_breakdown",
    "load_model",
    "DEMO_TARGET",
    "register_demo_target",
]

#: The target of the BYOC walkthrough; ``relaykit partition`` gives it the demo rules.
DEMO_TARGET = "byoc-target"


def op_breakdown(func: Function | IRModule) -> Counter[str]:
    """How many calls of each operator (or of each called function kind) ``func`` holds."""
    roots = [f for _, f in func.items()] if isinstance(func, IRModule) else [func]
    counts: Counter[str] = Counter()
    for root in roots:
        for node in post_order(root):
            if isinstance(node, Call):
                op = node.op
                if isinstance(op, Op):
                    counts[op.name] += 1
                elif isinstance(op, Function) and "Composite" in op.attrs:
                    counts[f"composite {op.attrs['Composite']}"] += 1
                else:
                    counts[f"call {type(op).__name__}"] += 1
    return counts


def format_breakdown(counts: Counter[str], indent: str = "  ") -> str:
    total = sum(counts.values())
    width = max((len(k) for k in counts), default=10)
    lines = [f"{indent}{name:<{width}}  {n:>5}" for name, n in counts.most_common()]
    lines.append(f"{indent}{'total':<{width}}  {total:>5}")
    return "\n".join(lines)


def _main_breakdown(mod: IRModule) -> Counter[str]:
    """The breakdown of ``main``, naming calls of globals by name as the walkthrough does."""
    counts: Counter[str] = Counter()
    for node in post_order(mod["main"]):
        if isinstance(node, Call):
            op = node.op
            if isinstance(op, Op):
                counts[op.name] += 1
            elif isinstance(op, Function) and "Composite" in op.attrs:
                counts[f"composite {op.attrs['Composite']}"] += 1
            elif hasattr(op, "name_hint"):
                counts[f"@{op.name_hint}"] += 1
            else:
                counts[f"call {type(op).__name__}"] += 1
    return counts


# -- the demo target ------------------------------------------------------------------------
def demo_patterns() -> list[tuple[str, Any]]:
    """The walkthrough's conv2d(+bias_add)+relu patterns for ``byoc-target``."""
    from .dataflow_pattern import is_op, wildcard

    def make_pattern(with_bias: bool = True) -> Any:
        data, weight, bias = wildcard(), wildcard(), wildcard()
        conv = is_op("nn.conv2d")(data, weight)
        conv_out = is_op("nn.bias_add")(conv, bias) if with_bias else conv
        return is_op("nn.relu")(conv_out)

    return [
        (f"{DEMO_TARGET}.conv2d_relu_with_bias", make_pattern(with_bias=True)),
        (f"{DEMO_TARGET}.conv2d_relu_wo_bias", make_pattern(with_bias=False)),
    ]


def register_demo_target() -> None:
    """Register the walkthrough's rules for ``byoc-target``: ``nn.dense`` and the
    conv2d(+bias_add)+relu pattern table. Use inside ``scoped_registries()``."""
    from .ir.op import default_registry, register_op_attr
    from .op.contrib import register_pattern_table

    if default_registry.get_attr("nn.dense", target_key(DEMO_TARGET)) is None:
        register_op_attr("nn.dense", target_key(DEMO_TARGET), lambda expr: True)
    register_pattern_table(DEMO_TARGET, demo_patterns)


# -- models ---------------------------------------------------------------------------------
_WORKLOADS = (
    "vgg11",
    "vgg13",
    "vgg16",
    "vgg19",
    "resnet18",
    "resnet34",
    "resnet50",
    "resnet101",
    "resnet152",
    "mobilenet",
    "mlp",
)


def load_model(name: str, batch: int = 1, image_size: int = 224) -> tuple[IRModule, set[str]]:
    """A built-in workload by name, an ONNX file or a text-format file; and the names of
    its weights (for workloads and text files, every input of ``main`` but the first)."""
    from .testing import mlp, mobilenet, resnet, vgg

    key = name.lower().replace("-", "").replace("_", "")
    shape = (3, image_size, image_size)
    net: Function
    if key.startswith("vgg") and key[3:].isdigit():
        net = vgg.get_net(batch, shape, 1000, "float32", num_layers=int(key[3:]))
    elif key.startswith("resnet") and key[6:].isdigit():
        net = resnet.get_net(batch, 1000, num_layers=int(key[6:]), image_shape=shape)
    elif key == "mobilenet":
        net = mobilenet.mobile_net(1000, (batch, *shape))
    elif key == "mlp":
        net = mlp.get_net(batch)
    else:
        path = Path(name)
        if not path.exists():
            raise RelayKitError(
                f"unknown model {name!r}: give a built-in workload ({', '.join(_WORKLOADS)}), "
                "an ONNX file or the path of a Relay text file"
            )
        if path.suffix.lower() == ".onnx":
            from .frontend import load_model as load_onnx

            onnx_mod, params = load_onnx(str(path), freeze_params=False)
            return onnx_mod, set(params)
        from .text.parser import parse

        parsed = parse(path.read_text(), source_name=str(path))
        mod = parsed if isinstance(parsed, IRModule) else IRModule.from_expr(parsed)
        main = mod["main"]
        return mod, {p.name_hint for p in main.params[1:]}
    mod = IRModule.from_expr(net)
    return mod, {p.name_hint for p in net.params[1:]}


# -- relaykit partition ---------------------------------------------------------------------
def _bind_weights(
    mod: IRModule, weights: set[str], model: str, targets: list[str]
) -> tuple[IRModule, set[str]]:
    """Bind the weights as constants (generated for built-in workloads, the file's
    initializers for ONNX) and run each target's optimize hook, as a build would."""
    from .backend.codegen.registry import run_optimize_hook
    from .testing.init import create_workload
    from .transform.bind import bind_params_by_name

    if Path(model).suffix.lower() == ".onnx":
        from .frontend import load_model as load_onnx

        mod, params = load_onnx(model, freeze_params=True)
    else:
        mod, params = create_workload(mod)
        mod = mod.copy()
        mod["main"] = bind_params_by_name(mod["main"], {k: params[k] for k in weights})
    for t in targets:
        mod = run_optimize_hook(mod, t, None)
    return mod, set()


def _partition(args: argparse.Namespace) -> int:
    from .byoc import configure_target, explain, pin, scoped_registries
    from .byoc.summary import summarize
    from .ir.op import default_registry
    from .op.contrib import get_pattern_table

    targets = args.target
    mod, weights = load_model(args.model, args.batch, args.image_size)
    activate_targets(targets)  # built-in and installed backends load by name
    if args.bind_params:
        mod, weights = _bind_weights(mod, weights, args.model, targets)
    with scoped_registries():
        notes = []
        for t in targets:
            has_rules = any(
                default_registry.get_attr(n, target_key(t)) is not None
                for n in default_registry.names()
            )
            if t == DEMO_TARGET and not has_rules and not get_pattern_table(t):
                register_demo_target()
                notes.append(
                    f"{t}: using the built-in demo rules (nn.dense, "
                    "conv2d(+bias_add)+relu patterns)"
                )
            elif not has_rules and not get_pattern_table(t):
                notes.append(f"{t}: no rules or patterns registered; nothing will be offloaded")
            if args.min_ops is not None or args.min_macs is not None:
                configure_target(t, min_region_ops=args.min_ops, min_region_macs=args.min_macs)
        pins = [pin(name) for name in args.pin or ()]
        summary = summarize(mod, targets, pin=pins, param_names=weights, model=args.model)
        report = explain(mod, targets, pin=pins) if args.explain else None
    if args.json:
        import json

        data = summary.to_dict()
        data["notes"] = notes
        if report is not None:
            data["explain"] = report.to_dict()
        print(json.dumps(data, indent=2))
        return 0
    for note in notes:
        print(f"note: {note}")
    print(summary)
    if report is not None:
        print()
        print(report)
    return 0


# -- relaykit backends ------------------------------------------------------------------------
def _backends(args: argparse.Namespace) -> int:
    rows = describe_all()
    if args.json:
        import json

        print(json.dumps([r.to_dict() for r in rows], indent=2))
    else:
        print(format_table(rows, verbose=args.verbose))
    return 0


# -- relaykit demo --------------------------------------------------------------------------
def _step(title: str, mod: IRModule) -> None:
    print(f"\n== {title}")
    print(format_breakdown(_main_breakdown(mod)))


def _demo(args: argparse.Namespace) -> int:
    from .backend.interpreter import create_executor
    from .byoc import (
        AnnotateTarget,
        MergeCompilerRegions,
        MergeComposite,
        PartitionGraph,
        region_functions,
        scoped_registries,
    )
    from .ir.op import register_op_attr
    from .testing import vgg
    from .transform import InferType

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="relaykit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="the BYOC walkthrough on VGG-11, end to end")
    demo.add_argument("--image-size", type=int, default=224, help="input height and width")
    demo.set_defaults(func=_demo)
    part = sub.add_parser(
        "partition",
        help="partition a model for targets and summarise the result",
        description=(
            "Partition MODEL for the given targets (rules and patterns as registered; the "
            f"target named {DEMO_TARGET!r} gets the walkthrough's demo rules — nn.dense and "
            "conv2d(+bias_add)+relu patterns — when nothing is registered for it) and print, "
            "per target, its functions, operators, MACs and parameter bytes, and the "
            "operator breakdown before and after."
        ),
    )
    part.add_argument(
        "model",
        help=f"a built-in workload ({', '.join(_WORKLOADS)}), an ONNX file or a Relay text file",
    )
    part.add_argument(
        "--target",
        action="append",
        required=True,
        help="a target, highest priority first (repeatable)",
    )
    part.add_argument(
        "--bind-params",
        action="store_true",
        help="bind the weights as constants and run each target's optimize hook "
        "first, as a build does (backends such as dnnl only take constant "
        "weights)",
    )
    part.add_argument("--json", action="store_true", help="print JSON instead of tables")
    part.add_argument(
        "--explain", action="store_true", help="also say, for every operator, where it went and why"
    )
    part.add_argument(
        "--pin", action="append", metavar="OP", help="keep operator OP on the host (repeatable)"
    )
    part.add_argument(
        "--min-ops", type=int, default=None, help="regions with fewer operators go back to the host"
    )
    part.add_argument(
        "--min-macs",
        type=int,
        default=None,
        help="regions with fewer multiply-accumulates go back to the host",
    )
    part.add_argument("--batch", type=int, default=1, help="batch size of built-in workloads")
    part.add_argument(
        "--image-size",
        type=int,
        default=224,
        help="input height and width of built-in image workloads",
    )
    part.set_defaults(func=_partition)
    backends = sub.add_parser(
        "backends",
        help="list the backends: version, status, what each supports",
        description=(
            "List the backends relaykit knows — built in, or installed by a package that "
            "declares a 'relaykit.backends' entry point — with version, status (available, "
            "or what to install) and how many operators and patterns each supports."
        ),
    )
    backends.add_argument("--json", action="store_true", help="print JSON instead of a table")
    backends.add_argument(
        "--verbose", "-v", action="store_true", help="also list the operators and patterns"
    )
    backends.set_defaults(func=_backends)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except RelayKitError as err:
        print(f"relaykit: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
