"""The ``tvmc`` command line: ``compile``, ``tune`` and ``run`` (TVM's options, the
ones relaykit can honour).

    python -m relaykit.driver.tvmc compile --target llvm --output m.rkmod model.onnx
    python -m relaykit.driver.tvmc tune --target llvm --output records.json model.onnx
    python -m relaykit.driver.tvmc run --inputs in.npz --output out.npz --print-time m.rkmod
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from relaykit.errors import RelayKitError

from .api import compile, load, run, tune

__all__ = ["main"]


def _shapes(text: str | None) -> dict[str, list[int]] | None:
    """``--input-shapes "data:[1,3,224,224] mask:[1,10]"``."""
    if not text:
        return None
    shapes = {}
    for item in text.split():
        name, _, dims = item.rpartition(":")
        shapes[name] = [int(d) for d in dims.strip("[]").split(",") if d]
    return shapes


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tvmc", description="TVM's tvmc, on relaykit")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("compile", "tune"):
        p = sub.add_parser(name)
        p.add_argument("FILE")
        p.add_argument("--target", default="llvm")
        p.add_argument("--model-format", default=None)
        p.add_argument("--input-shapes", default=None)
        p.add_argument("-o", "--output", default=None)
    sub.choices["compile"].add_argument("--tuning-records", default=None)
    sub.choices["compile"].add_argument("-O", "--opt-level", type=int, default=3)
    sub.choices["tune"].add_argument("--trials", type=int, default=10000)
    sub.choices["tune"].add_argument("--number", type=int, default=10)
    sub.choices["tune"].add_argument("--repeat", type=int, default=1)
    sub.choices["tune"].add_argument("--tuner", default="xgb")
    p = sub.add_parser("run")
    p.add_argument("FILE")
    p.add_argument("--device", default="cpu")
    p.add_argument("--inputs", default=None)
    p.add_argument("--fill-mode", default="random")
    p.add_argument("-o", "--output", default=None)
    p.add_argument("--print-time", action="store_true")
    p.add_argument("--print-top", type=int, default=None)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--number", type=int, default=10)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command in ("compile", "tune"):
            model = load(args.FILE, args.model_format, _shapes(args.input_shapes))
            if args.command == "compile":
                out = args.output or "module.rkmod"
                compile(model, args.target, args.opt_level, args.tuning_records, out)
            else:
                out = tune(
                    model,
                    args.target,
                    args.output,
                    trials=args.trials,
                    number=args.number,
                    repeat=args.repeat,
                    tuner=args.tuner,
                )
            print(out)
            return 0
        inputs = dict(np.load(args.inputs)) if args.inputs else None
        result = run(
            args.FILE,
            args.device,
            inputs,
            args.fill_mode,
            args.print_time,
            args.repeat,
            args.number,
        )
        if args.output:
            result.save(args.output)
        if args.print_time:
            print(result.format_times())
        if args.print_top:
            scores = np.asarray(result.get_output("output_0")).reshape(-1)
            top = np.argsort(scores)[::-1][: args.print_top]
            print(
                f"class='{list(map(int, top))}' with probability={[float(scores[i]) for i in top]}"
            )
        return 0
    except RelayKitError as exc:
        print(f"tvmc: error: {exc}", file=sys.stderr)
        return 2
