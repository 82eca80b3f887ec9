"""``relaykit partition MODEL --target X``: partition a model and summarise the result.

Per target: its functions, operators, MACs and parameter bytes, and the operator
breakdown before and after; ``--explain`` says where every operator went and why.
"""

from __future__ import annotations

import argparse
import json

from relaykit.backends import target_key
from relaykit.byoc import configure_target, explain, run_optimize_hook, scoped_registries
from relaykit.byoc.report.summary import summarize
from relaykit.cli._common import (
    BATCH,
    IMAGE_SIZE,
    SubParsers,
    add_file_limit,
    parse_pins,
    parse_shapes,
    split_targets,
)
from relaykit.cli._models import (
    DEMO_TARGET,
    MODEL_HELP,
    bind_weights_for_partition,
    load_model,
    register_demo_target,
)
from relaykit.ir.op import default_registry
from relaykit.op.contrib import get_pattern_table

__all__ = ["register", "run"]

EPILOG = """\
examples:
  relaykit partition resnet50 --target dnnl --bind-params
  relaykit partition model.onnx --target ccompiler --explain --json
  relaykit partition vgg11 --target byoc-target --min-ops 4 --pin nn.dense
"""


def register(sub: SubParsers) -> None:
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
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    part.add_argument("model", help=MODEL_HELP)
    part.add_argument(
        "--target",
        action="append",
        required=True,
        help="a target, highest priority first (repeatable, or comma-separated; host: none)",
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
        "--pin",
        action="append",
        metavar="OP[=TARGET]",
        help="keep operator OP on the host, or on TARGET (repeatable)",
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
    part.add_argument(
        "--input-shapes",
        action="append",
        metavar="NAME:SHAPE",
        help="static shapes of ONNX inputs, e.g. data:1x3x224x224 (repeatable; checked "
        "against the model's inputs)",
    )
    part.add_argument("--batch", type=BATCH, default=1, help="batch size of built-in workloads")
    part.add_argument(
        "--image-size",
        type=IMAGE_SIZE,
        default=224,
        help="input height and width of built-in image workloads",
    )
    add_file_limit(part)
    part.set_defaults(func=run)


def _target_notes(targets: list[str]) -> list[str]:
    """Register the demo rules for the demo target when it has none; say which targets
    have nothing registered. Call inside ``scoped_registries()``."""
    notes = []
    for t in targets:
        has_rules = any(
            default_registry.get_attr(n, target_key(t)) is not None
            for n in default_registry.names()
        )
        if t == DEMO_TARGET and not has_rules and not get_pattern_table(t):
            register_demo_target()
            notes.append(
                f"{t}: using the built-in demo rules (nn.dense, conv2d(+bias_add)+relu patterns)"
            )
        elif not has_rules and not get_pattern_table(t):
            notes.append(f"{t}: no rules or patterns registered; nothing will be offloaded")
    return notes


def run(args: argparse.Namespace) -> int:
    targets = split_targets(args.target)
    shapes = parse_shapes(args.input_shapes)
    limit = args.max_file_size
    mod, weights = load_model(
        args.model, args.batch, args.image_size, shapes=shapes or None, limit=limit
    )
    if args.bind_params:
        mod = bind_weights_for_partition(mod, weights, args.model, shapes or None, limit)
        weights = set()
        for t in targets:
            mod = run_optimize_hook(mod, t, None)
    with scoped_registries():
        notes = _target_notes(targets)
        if args.min_ops is not None or args.min_macs is not None:
            for t in targets:
                configure_target(t, min_region_ops=args.min_ops, min_region_macs=args.min_macs)
        pins = parse_pins(args.pin, targets)
        summary = summarize(mod, targets, pin=pins, param_names=weights, model=args.model)
        report = explain(mod, targets, pin=pins) if args.explain else None
    if args.json:
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
