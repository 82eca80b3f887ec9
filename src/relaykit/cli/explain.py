"""``relaykit explain MODEL --target T[,T2]``: where every operator went, and why.

Writes the partition as a self-contained HTML page (``--html``: the graph drawn
top-down with the model's inputs, weights and outputs as nodes, tensor types on
the edges and each target's regions coloured and outlined; the placement, reasons,
attributes and inputs of each operator on hover and click; a summary above the
graph, per-region operators, MACs and parameter bytes, and the summary tables), as
Graphviz DOT (``--dot``) and as JSON (``--json``); ``-`` writes to standard output.
With none of them it prints the tables.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from relaykit.byoc import scoped_registries
from relaykit.byoc.report.explain import Report
from relaykit.byoc.report.summary import Summary
from relaykit.byoc.report.visual import render_dot, render_html
from relaykit.cli._common import (
    BATCH,
    EXIT_OK,
    IMAGE_SIZE,
    SubParsers,
    add_file_limit,
    check_output_path,
    int_range,
    parse_pins,
    parse_shapes,
    split_targets,
)
from relaykit.cli._models import MODEL_HELP, load_for_build, prepare_model, report_partition
from relaykit.cli.partition import _target_notes, add_bind_params
from relaykit.errors import PlacementError, UsageError
from relaykit.tuning import (
    MeasuredCost,
    TuningLog,
    check_placement_targets,
    place,
    placement_table,
)

__all__ = ["register", "run"]

EPILOG = """\
examples:
  relaykit explain resnet50 --target dnnl --html resnet50.html
  relaykit explain model.onnx --target dnnl,ccompiler --html report.html --dot report.dot
  relaykit explain vgg11 --target byoc-target --dot vgg11.dot  # dot -Tsvg vgg11.dot > vgg11.svg
  relaykit explain mlp --target ccompiler --json report.json

The model goes through the same steps as 'relaykit compile' (weights bound as
constants, each target's optimize hook, then partitioning with --pin and --min-ops),
so the regions shown are the regions the artifact holds.
The HTML page needs no network: open it in any browser (drag to pan, wheel to zoom,
click an operator for its placement, the answer of every target and its attributes).
exit status: 0 ok, 1 failure, 2 usage error.
"""


#: Minimum region sizes: counts, >= 0.
_COUNT = int_range(0, 2**62)


def register(sub: SubParsers) -> None:
    p = sub.add_parser(
        "explain",
        help="draw a model's partition (HTML, DOT) and say where each operator went and why",
        description=(
            "Partition MODEL for the targets as a build would, and report for every operator\n"
            "where it went and, per target, why: as an HTML page with the graph drawn and\n"
            "each target's regions coloured (--html), as Graphviz DOT (--dot), as JSON\n"
            "(--json), or as tables on standard output."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", help=MODEL_HELP)
    p.add_argument(
        "--target",
        action="append",
        required=True,
        help="a target, highest priority first (repeatable, or comma-separated; host: none)",
    )
    p.add_argument("--html", metavar="FILE", help="write the HTML report to FILE ('-': stdout)")
    p.add_argument("--dot", metavar="FILE", help="write Graphviz DOT to FILE ('-': stdout)")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON to FILE ('-': stdout)")
    p.add_argument("--title", help="the report's title (default: the model's name)")
    add_bind_params(p)
    p.add_argument(
        "--pin",
        action="append",
        metavar="OP[=TARGET]",
        help="keep operator OP on the host, or on TARGET (repeatable)",
    )
    p.add_argument(
        "--min-ops",
        type=_COUNT,
        metavar="N",
        help="regions with fewer operators go back to the host",
    )
    p.add_argument(
        "--min-macs",
        type=_COUNT,
        metavar="N",
        help="regions with fewer multiply-accumulates go back to the host",
    )
    p.add_argument(
        "--input-shapes",
        action="append",
        metavar="NAME:SHAPE",
        help="static shapes of ONNX inputs, e.g. data:1x3x224x224 (repeatable; checked "
        "against the model's inputs)",
    )
    p.add_argument(
        "--batch", type=BATCH, default=1, metavar="N", help="batch size of built-in workloads"
    )
    p.add_argument(
        "--image-size",
        type=IMAGE_SIZE,
        default=224,
        metavar="N",
        help="input height and width of image workloads",
    )
    p.add_argument(
        "--tuning-log",
        metavar="FILE",
        help="also show the measured placement this tuning log gives ('relaykit tune'): "
        "each region's time on every target and why the winner won",
    )
    add_file_limit(p)
    p.set_defaults(func=run)


def _measured(args: argparse.Namespace, targets: list[str]) -> str:
    """The measured placement of ``args.model`` by the log ``args.tuning_log`` (nothing
    is measured)."""
    try:
        names = list(check_placement_targets(targets))
    except PlacementError as err:
        raise UsageError(f"--target: {err}") from err
    mod, _ = load_for_build(args.model, args.batch, args.image_size, limit=args.max_file_size)
    cost = MeasuredCost(TuningLog(args.tuning_log), measure_missing=False)
    result = place(mod, names, cost=cost)
    return f"measured placement ({args.tuning_log}):\n" + placement_table(result)


def _write(path: str, text: str, what: str) -> None:
    if path == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    Path(path).write_text(text, encoding="utf-8")
    print(f"wrote {what} to {path}", file=sys.stderr)


def _json(report: Report, summary: Summary, notes: list[str]) -> str:
    data = {"notes": notes, "summary": summary.to_dict(), "explain": report.to_dict()}
    return json.dumps(data, indent=2)


def run(args: argparse.Namespace) -> int:
    targets = split_targets(args.target)
    for value, option in ((args.html, "--html"), (args.dot, "--dot"), (args.json, "--json")):
        if value is not None and value != "-":
            check_output_path(value, option)
    if sum(v == "-" for v in (args.html, args.dot, args.json)) > 1:
        raise UsageError("only one of --html, --dot and --json can write to standard output")
    shapes = parse_shapes(args.input_shapes)
    title = args.title or Path(args.model).name
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
        report, summary = report_partition(model, title)
    assert report is not None  # explain=True
    quiet = "-" in (args.html, args.dot, args.json)
    for note in notes:
        print(f"note: {note}", file=sys.stderr if quiet else sys.stdout)
    if args.html:
        _write(args.html, render_html(report, summary, title=title), "the HTML report")
    if args.dot:
        _write(args.dot, render_dot(report, summary, title=title), "Graphviz DOT")
    if args.json:
        _write(args.json, _json(report, summary, notes), "JSON")
    if not (args.html or args.dot or args.json):
        print(summary)
        print()
        print(report)
        if args.tuning_log:
            print()
            print(_measured(args, targets))
    return EXIT_OK
