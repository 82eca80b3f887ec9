"""``relaykit partition MODEL --target X``: partition a model and summarise the result.

Per target: its functions, operators, MACs and parameter bytes, and the operator
breakdown before and after; ``--explain`` says where every operator went and why.
"""

from __future__ import annotations

import argparse
import json

from relaykit.backends import target_key
from relaykit.byoc import scoped_registries
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
    prepare_model,
    register_demo_target,
    report_partition,
)
from relaykit.ir.op import default_registry
from relaykit.op.contrib import get_pattern_table

__all__ = ["register", "run", "add_bind_params"]

EPILOG = """\
examples:
  relaykit partition resnet50 --target dnnl
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
            "operator breakdown before and after. The model goes through the same steps "
            "as 'relaykit compile' (weights bound, each target's optimize hook, --pin and "
            "--min-ops), so the regions listed are the regions the artifact holds."
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
    add_bind_params(part)
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


def add_bind_params(parser: argparse.ArgumentParser) -> None:
    """``--bind-params``: what every command now does (weights bound as a build binds
    them); accepted so that older scripts keep working."""
    parser.add_argument(
        "--bind-params",
        action="store_true",
        help="accepted for older scripts: the weights are always bound and each target's "
        "optimize hook run, as 'relaykit compile' does",
    )


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
    with scoped_registries():
        notes = _target_notes(targets)
        model = prepare_model(
            args.model,
            targets,
            batch=args.batch,
            image_size=args.image_size,
            shapes=shapes or None,
            limit=args.max_file_size,
            pins=parse_pins(args.pin, targets),
            min_ops=args.min_ops,
            min_macs=args.min_macs,
        )
        report, summary = report_partition(model, args.model, explain=args.explain)
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
