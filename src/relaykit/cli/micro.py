"""``relaykit micro build|run``: build a Model Library Format tar and run it.

``relaykit micro build model.tar --platform host -o DIR`` extracts the tar into DIR,
writes a ``main.c`` (inputs from ``<input>.bin``, outputs to ``<output>.bin``) and builds
it with the platform's toolchain; ``relaykit micro run DIR --inputs in.npz`` runs a host
build and prints its outputs and the memory report of ``metadata.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from relaykit.cli._common import SubParsers, add_file_limit, format_size, load_npz
from relaykit.errors import ArgumentError
from relaykit.execution.aot.platforms import PLATFORMS, build_mlf, read_metadata, run_host

__all__ = ["register", "run_build", "run_run"]

EPILOG = """\
examples:
  relaykit compile model.onnx --executor aot -o model.tar
  relaykit micro build model.tar --platform host -o build
  relaykit micro run build --inputs in.npz --outputs out.npz
"""


def register(sub: SubParsers) -> None:
    parser = sub.add_parser(
        "micro",
        help="build and run ahead-of-time C (Model Library Format)",
        description="Build a Model Library Format tar for a platform, and run host builds.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    msub = parser.add_subparsers(dest="micro_command", required=True, metavar="ACTION")
    build = msub.add_parser("build", help="extract the tar, write main.c and build it")
    build.add_argument("tar", help="the Model Library Format tar (relaykit compile --executor aot)")
    build.add_argument("--platform", choices=tuple(PLATFORMS), default="host")
    build.add_argument("-o", "--output", metavar="DIR", help="build directory (default: build)")
    build.set_defaults(func=run_build)
    run = msub.add_parser("run", help="run a host build on inputs from an .npz")
    run.add_argument("build_dir", metavar="DIR", help="a directory made by 'micro build'")
    run.add_argument("--inputs", required=True, metavar="FILE", help=".npz of the inputs")
    run.add_argument("--outputs", metavar="FILE", help="write the outputs to this .npz")
    add_file_limit(run)
    run.set_defaults(func=run_run)


def _memory_report(meta: dict[str, Any]) -> str:
    main = meta["memory"]["functions"]["main"][0]
    ws, consts, io = (main[k] for k in ("workspace_size_bytes", "constants_size_bytes",
                                         "io_size_bytes"))  # fmt: skip
    return (
        f"memory: workspace {format_size(ws)} ({ws} bytes), constants {format_size(consts)} "
        f"({consts} bytes), inputs and outputs {format_size(io)} ({io} bytes)"
    )


def run_build(args: argparse.Namespace) -> int:
    tar = Path(args.tar)
    if not tar.is_file():
        raise ArgumentError(f"{tar} is not a file; write one with relaykit compile --executor aot")
    out = Path(args.output or "build")
    exe = build_mlf(tar, out, args.platform)
    print(f"built {exe} for {args.platform}")
    print(_memory_report(read_metadata(out / "mlf")))
    return 0


def run_run(args: argparse.Namespace) -> int:
    build_dir = Path(args.build_dir)
    if not (build_dir / "model").is_file():
        raise ArgumentError(f"{build_dir} has no host build; run 'relaykit micro build' first")
    inputs = load_npz(args.inputs, "inputs file", args.max_file_size)
    outputs = run_host(build_dir, inputs)
    for name, arr in outputs.items():
        flat = np.asarray(arr).ravel()
        head = ", ".join(f"{v:.6g}" for v in flat[:6]) + (", ..." if flat.size > 6 else "")
        print(f"  {name}: {arr.dtype}{list(arr.shape)} [{head}]")
    print(_memory_report(read_metadata(build_dir / "mlf")))
    if args.outputs:
        arrays: dict[str, Any] = dict(outputs)
        np.savez(args.outputs, **arrays)
    return 0
