"""``relaykit compile MODEL --target dnnl[,ccompiler,...]``: a model to one artifact file.

The model (an ONNX file, a Relay text file or a built-in workload) is imported,
partitioned for the targets (highest priority first), each region compiled by its
backend, the rest planned for the host, and everything written into one file
(``export_library``) that ``relaykit run`` and ``relaykit.runtime.load_module`` read.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from relaykit.byoc import region_functions
from relaykit.byoc.pipeline import Prepared, prepare
from relaykit.cli._common import (
    BATCH,
    IMAGE_SIZE,
    Progress,
    SubParsers,
    add_file_limit,
    artifact_signature,
    check_output_path,
    format_size,
    parse_pins,
    parse_shapes,
    split_targets,
    targets_label,
)
from relaykit.cli._models import MODEL_HELP, PreparedModel, load_for_build, prepare_model
from relaykit.cli.mlf import parse_size, write_mlf
from relaykit.errors import ArgumentError, PlacementError, UsageError
from relaykit.execution.build_module import build
from relaykit.execution.codegen.registry import (
    CodegenInfo,
    get_codegen,
    register_codegen,
    scoped_codegens,
)
from relaykit.ir import IRModule
from relaykit.runtime.module import Module
from relaykit.tuning import MeasuredCost, TuningLog, check_placement_targets, place

__all__ = [
    "register",
    "run",
    "compile_model",
    "build_prepared",
    "check_targets",
    "region_counts",
    "add_target_options",
]

EPILOG = """\
examples:
  relaykit compile model.onnx --target dnnl -o model.rkmod
  relaykit compile model.onnx --target dnnl,ccompiler --input-shapes data:1x3x224x224
  relaykit compile resnet18 --target ccompiler --pin nn.softmax --min-ops 2
  relaykit compile mlp --target dnnl --dump-relay mlp.relay   # see what dnnl got
  relaykit run model.rkmod --inputs in.npz --print-time     # then run it
  relaykit compile model.onnx --executor aot -o model.tar   # C (Model Library Format)
"""


def register(sub: SubParsers) -> None:
    parser = sub.add_parser(
        "compile",
        help="compile a model for backends into one artifact file",
        description=(
            "Import MODEL, partition it for the targets (highest priority first), compile "
            "each region with its backend and the rest for the host, and write one artifact "
            "file. On a terminal, the steps are shown as they run."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", help=MODEL_HELP)
    add_target_options(parser, required=False)
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="the artifact to write (default: MODEL's name with .rkmod, here)",
    )
    parser.add_argument(
        "--executor",
        choices=("graph", "aot"),
        default="graph",
        help="graph: one artifact file for relaykit run (default); aot: ahead-of-time C "
        "as a Model Library Format tar (no Python needed to run it)",
    )
    parser.add_argument(
        "--max-workspace",
        type=parse_size,
        default=None,
        metavar="BYTES",
        help="with --executor aot: refuse a model whose static workspace is larger (e.g. 256k)",
    )
    parser.add_argument(
        "--dump-relay",
        metavar="FILE",
        help="also write the partitioned module as Relay text (what each backend got)",
    )
    parser.add_argument(
        "--tuning-log",
        metavar="FILE",
        help="place regions by the measurements of this tuning log ('relaykit tune'), "
        "measuring nothing: candidates it lacks are not considered",
    )
    add_model_options(parser)
    parser.set_defaults(func=run)


def add_target_options(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """``--target``, ``--pin``, ``--min-ops``: shared by ``compile`` and ``bench``."""
    parser.add_argument(
        "--target",
        "--targets",
        dest="target",
        action="append",
        required=required,
        metavar="T[,T...]",
        help="backends to offload to, highest priority first: comma-separated or repeated "
        "(see 'relaykit backends'); host (or llvm) builds for the host only",
    )
    parser.add_argument(
        "--pin",
        action="append",
        metavar="OP[=TARGET]",
        help="keep operator OP on the host, or on TARGET (repeatable)",
    )
    parser.add_argument(
        "--min-ops",
        type=int,
        default=None,
        metavar="N",
        help="regions with fewer than N operators go back to the host",
    )


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """``--input-shapes``, ``--batch``, ``--image-size``, ``--max-file-size``."""
    parser.add_argument(
        "--input-shapes",
        action="append",
        metavar="NAME:SHAPE",
        help="static shapes of ONNX inputs, checked against the model's, e.g. "
        "data:1x3x224x224 or 'a:[1,8] b:[1,4]' "
        "(needed for inputs with symbolic dimensions)",
    )
    parser.add_argument("--batch", type=BATCH, default=1, help="batch size of built-in workloads")
    parser.add_argument(
        "--image-size",
        type=IMAGE_SIZE,
        default=224,
        help="input height and width of built-in image workloads",
    )
    add_file_limit(parser)


@contextlib.contextmanager
def _codegen_progress(targets: list[str], progress: Progress) -> Iterator[None]:
    """Show one progress step per region while the backends compile (terminal only)."""
    if not progress.enabled:
        yield
        return
    with scoped_codegens():
        for target in targets:
            info = get_codegen(target)
            register_codegen(
                target,
                _shown(info, progress),
                optimize=info.optimize,
                per_module=info.per_module,
                override=True,
            )
        yield


def _shown(info: CodegenInfo, progress: Progress) -> Callable[[Any], Module]:
    def compile_one(funcs: Any) -> Module:
        batch = funcs if isinstance(funcs, list) else [funcs]
        names = ", ".join(str(f.attrs.get("global_symbol", "?")) for f in batch)
        with progress.step(f"codegen {info.name}: {names}"):
            return info.compile(funcs)

    return compile_one


def check_targets(targets: list[str]) -> None:
    """An unknown target fails here, before any work."""
    for target in targets:
        get_codegen(target)


def build_prepared(prepared: Prepared, progress: Progress | None = None) -> Any:
    """Build the partitioned module of :func:`relaykit.byoc.pipeline.prepare`: each region
    by its backend, the rest for the host. Returns the built factory module."""
    progress = progress or Progress(enabled=False)
    targets = list(prepared.targets)
    check_targets(targets)
    with progress.step("build"), _codegen_progress(targets, progress):
        return build(prepared.partitioned, target="llvm")


def compile_model(
    mod: IRModule,
    targets: list[str],
    *,
    pins: list[Any] | None = None,
    min_ops: int | None = None,
    progress: Progress | None = None,
) -> tuple[Any, IRModule]:
    """Partition ``mod`` for ``targets`` (:func:`relaykit.byoc.pipeline.prepare`) and build
    it: the built factory module and the partitioned module. No targets (``--target
    host``) builds for the host alone."""
    progress = progress or Progress(enabled=False)
    check_targets(targets)
    with progress.step(f"partition for {targets_label(targets)}"):
        prepared = prepare(mod, targets, pins=pins or None, min_ops=min_ops)
    return build_prepared(prepared, progress), prepared.partitioned


def region_counts(part: IRModule) -> dict[str, int]:
    """How many regions each backend got."""
    counts: dict[str, int] = {}
    for name in region_functions(part):
        compiler = str(part[name].attrs.get("Compiler"))
        counts[compiler] = counts.get(compiler, 0) + 1
    return counts


def write_artifact(lib: Any, out: Path) -> None:
    """``lib.export_library(out)`` through a temporary file beside ``out``, renamed when
    complete: a failed or interrupted write leaves no half-written artifact."""
    partial = out.with_name(f".{out.name}.partial-{os.getpid()}")
    try:
        lib.export_library(str(partial))
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)


def default_output(model: str, executor: str = "graph") -> Path:
    return Path(Path(model).stem + (".tar" if executor == "aot" else ".rkmod"))


def _placed_model(args: argparse.Namespace, targets: list[str], progress: Progress) -> Any:
    """The model placed by measurement, reusing the tuning log ``--tuning-log``."""
    if args.pin or args.min_ops is not None:
        raise UsageError("--tuning-log places every operator by measurement: drop --pin/--min-ops")
    try:
        names = list(check_placement_targets(targets))
    except PlacementError as err:
        raise UsageError(f"--targets: {err}") from err
    with progress.step(f"import {args.model}"):
        mod, what = load_for_build(
            args.model, args.batch, args.image_size, shapes=None, limit=args.max_file_size
        )
    cost = MeasuredCost(TuningLog(args.tuning_log), measure_missing=False)
    with progress.step(f"place by {args.tuning_log}"):
        try:
            result = place(mod, names, cost=cost)
        except PlacementError as err:
            raise PlacementError(
                f"{args.tuning_log} has no measurement for some regions of {args.model} on "
                f"these targets; run 'relaykit tune {args.model} --targets "
                f"{','.join(names)} --log {args.tuning_log}' first"
            ) from err
    prepared = Prepared(mod, result.searched, result.partitioned, tuple(names))
    return PreparedModel(prepared, what, frozenset())


def run(args: argparse.Namespace) -> int:
    aot = args.executor == "aot"
    if args.target is None:
        if not aot:
            raise ArgumentError(
                "relaykit compile needs --target (e.g. --target dnnl, or --target host)"
            )
        args.target = ["host"]
    if args.max_workspace is not None and not aot:
        raise ArgumentError("--max-workspace applies to --executor aot only")
    targets = split_targets(args.target)
    pins = parse_pins(args.pin, targets)
    shapes = parse_shapes(args.input_shapes)
    out = check_output_path(args.output or default_output(args.model, args.executor), "output file")
    dump = check_output_path(args.dump_relay, "Relay text file") if args.dump_relay else None
    progress = Progress()
    check_targets(targets)
    if args.tuning_log:
        model = _placed_model(args, targets, progress)
    else:
        model = prepare_model(
            args.model,
            targets,
            batch=args.batch,
            image_size=args.image_size,
            shapes=shapes or None,
            limit=args.max_file_size,
            pins=pins,
            min_ops=args.min_ops,
            progress=progress,
        )
    if aot:
        return write_mlf(model.prepared.partitioned, out, model.what, args.max_workspace, progress)
    lib = build_prepared(model.prepared, progress)
    part, what = model.prepared.partitioned, model.what
    with progress.step(f"write {out}"):
        write_artifact(lib, out)
    if dump is not None:
        dump.write_text(part.astext(), encoding="utf-8")
    regions = region_counts(part)
    placed = ", ".join(f"{n} on {t}" for t, n in regions.items()) or "none offloaded"
    print(f"compiled {what} for {targets_label(targets)}: regions {placed}")
    inputs, outputs = artifact_signature(lib)
    for spec in inputs:
        print(f"  input  {spec}")
    for spec in outputs:
        print(f"  output {spec}")
    print(f"wrote {out} ({format_size(out.stat().st_size)})")
    return 0
