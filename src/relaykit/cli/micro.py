"""``relaykit micro build|run``: build a Model Library Format tar and run it.

``relaykit micro build model.tar --platform host|wasm|cortex-m -o DIR`` extracts the tar
into DIR, writes a ``main.c`` (inputs from ``<input>.bin``; outputs to ``<output>.bin``,
or printed by semihosting on Cortex-M) and builds it with the platform's toolchain (a
wasm build also writes ``index.html``, which runs the model in a browser);
``relaykit micro run DIR --inputs in.npz`` runs the build (natively, under wasmtime or
Node, or under ``qemu-system-arm``) and prints its outputs and the memory report.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from relaykit.cli._common import SubParsers, add_file_limit, load_npz
from relaykit.errors import ArgumentError
from relaykit.execution.aot.platforms import (
    PLATFORMS,
    build_mlf,
    memory_report,
)
from relaykit.execution.aot.platforms import (
    run_build as run_program,
)

__all__ = ["register", "run_build", "run_run"]

EPILOG = """\
examples:
  relaykit compile model.onnx --executor aot -o model.tar
  relaykit micro build model.tar --platform host -o build
  relaykit micro run build --inputs in.npz --outputs out.npz
  relaykit micro build model.tar --platform wasm -o web      # then open web/index.html
  relaykit micro run web --inputs in.npz --engine node
  relaykit micro build model.tar --platform cortex-m -o m3   # runs under qemu-system-arm
"""


def register(sub: SubParsers) -> None:
    parser = sub.add_parser(
        "micro",
        help="build and run ahead-of-time C (Model Library Format)",
        description="Build a Model Library Format tar for a platform (host, wasm32-wasi, "
        "Cortex-M), and run the build.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    msub = parser.add_subparsers(dest="micro_command", required=True, metavar="ACTION")
    build = msub.add_parser("build", help="extract the tar, write main.c and build it")
    build.add_argument("tar", help="the Model Library Format tar (relaykit compile --executor aot)")
    build.add_argument("--platform", choices=tuple(PLATFORMS), default="host")
    build.add_argument("-o", "--output", metavar="DIR", help="build directory (default: build)")
    build.set_defaults(func=run_build)
    run = msub.add_parser("run", help="run a build on inputs from an .npz")
    run.add_argument("build_dir", metavar="DIR", help="a directory made by 'micro build'")
    run.add_argument("--inputs", required=True, metavar="FILE", help=".npz of the inputs")
    run.add_argument("--outputs", metavar="FILE", help="write the outputs to this .npz")
    run.add_argument(
        "--engine", choices=("wasmtime", "node"), help="how a wasm build runs (default: wasmtime)"
    )
    add_file_limit(run)
    run.set_defaults(func=run_run)


def run_build(args: argparse.Namespace) -> int:
    tar = Path(args.tar)
    if not tar.is_file():
        raise ArgumentError(f"{tar} is not a file; write one with relaykit compile --executor aot")
    out = Path(args.output or "build")
    exe = build_mlf(tar, out, args.platform)
    print(f"built {exe} for {args.platform}")
    if args.platform == "wasm":
        print(f"open {out / 'index.html'} in a browser to run the model there")
    for line in memory_report(out):
        print(line)
    return 0


def run_run(args: argparse.Namespace) -> int:
    build_dir = Path(args.build_dir)
    if not build_dir.is_dir():
        raise ArgumentError(f"{build_dir} is not a directory; run 'relaykit micro build' first")
    inputs = load_npz(args.inputs, "inputs file", args.max_file_size)
    outputs = run_program(build_dir, inputs, args.engine)
    for name, arr in outputs.items():
        flat = np.asarray(arr).ravel()
        head = ", ".join(f"{v:.6g}" for v in flat[:6]) + (", ..." if flat.size > 6 else "")
        print(f"  {name}: {arr.dtype}{list(arr.shape)} [{head}]")
    for line in memory_report(build_dir):
        print(line)
    if args.outputs:
        arrays: dict[str, Any] = dict(outputs)
        np.savez(args.outputs, **arrays)
    return 0
