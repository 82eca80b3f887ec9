"""``relaykit run FILE``: run a compiled artifact on inputs from an ``.npz`` file.

Inputs come from ``--inputs`` (an ``.npz`` whose array names are the model's input
names, read without pickle and within the size limit); without it, random inputs are
used and the command says so. ``--outputs`` writes the outputs into an ``.npz``, by the
model's output names (an ONNX model's) or as ``output_0``, ``output_1``...;
``--print-time`` times ``--repeat`` runs and prints mean, median, max, min and standard
deviation in milliseconds, as tvmc does.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from relaykit.cli._common import (
    SubParsers,
    TensorSpec,
    add_file_limit,
    artifact_signature,
    check_file,
    check_output_path,
    load_npz,
    plural,
)
from relaykit.contrib.graph_executor import GraphModule
from relaykit.errors import UsageError
from relaykit.runtime import load_module

__all__ = [
    "register",
    "run",
    "random_inputs",
    "fill_inputs",
    "check_inputs",
    "time_runs",
    "format_times",
]

EPILOG = """\
examples:
  relaykit run model.rkmod --inputs in.npz --outputs out.npz
  relaykit run model.rkmod --print-time --repeat 50      # random inputs, timed
  relaykit run model.rkmod --fill-mode ones --outputs out.npz
  relaykit run model.rkmod --inputs img.npz --print-top 5
"""


def register(sub: SubParsers) -> None:
    parser = sub.add_parser(
        "run",
        help="run a compiled artifact on inputs from an .npz file",
        description=(
            "Load an artifact written by 'relaykit compile' (or export_library), set its "
            "inputs from an .npz file (random ones when none is given), run it, and save, "
            "print or time the outputs. An artifact that carries native code is code: run "
            "only files you trust, or pass --no-native."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", metavar="FILE", help="the artifact to run")
    parser.add_argument(
        "--inputs",
        metavar="NPZ",
        help="an .npz file with one array per input, named as the inputs (see the names "
        "'relaykit compile' prints); random inputs without it",
    )
    parser.add_argument(
        "--outputs",
        metavar="NPZ",
        help="write the outputs to this .npz file, by the model's output names (output_0, "
        "... when it has none)",
    )
    parser.add_argument(
        "--print-time", action="store_true", help="time the runs and print the latency summary"
    )
    parser.add_argument(
        "--repeat",
        type=positive_int,
        default=None,
        metavar="N",
        help="timed runs (default 10 with --print-time, else 1)",
    )
    parser.add_argument(
        "--number",
        type=positive_int,
        default=1,
        metavar="N",
        help="runs averaged into each timing (default 1)",
    )
    parser.add_argument(
        "--print-top",
        type=positive_int,
        default=None,
        metavar="K",
        help="print the K largest values of each output and their indices",
    )
    parser.add_argument(
        "--fill-mode",
        choices=("random", "zeros", "ones"),
        default="random",
        help="what inputs hold without --inputs (default random)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument(
        "--no-native",
        action="store_true",
        help="load no native code from the file (load_module(..., allow_native=False))",
    )
    add_file_limit(parser)
    parser.set_defaults(func=run)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def random_inputs(specs: list[TensorSpec], seed: int = 0) -> dict[str, np.ndarray]:
    """Random values for ``specs``: standard normal floats, integers in [0, 10), booleans."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for spec in specs:
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            out[spec.name] = rng.standard_normal(spec.shape).astype(dtype)
        elif dtype.kind == "b":
            out[spec.name] = rng.integers(0, 2, spec.shape).astype(bool)
        else:
            out[spec.name] = rng.integers(0, 10, spec.shape).astype(dtype)
    return out


def fill_inputs(specs: list[TensorSpec], mode: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs for ``specs`` when none are given: ``random`` (see :func:`random_inputs`),
    ``zeros`` or ``ones``."""
    if mode == "random":
        return random_inputs(specs, seed)
    fill = np.zeros if mode == "zeros" else np.ones
    return {s.name: fill(s.shape, s.dtype) for s in specs}


def check_inputs(
    arrays: dict[str, np.ndarray], specs: list[TensorSpec], where: str
) -> dict[str, np.ndarray]:
    """The arrays for ``specs``, each checked for name, shape and dtype; a mismatch is a
    UsageError saying what the model expects."""
    expected = ", ".join(str(s) for s in specs) or "none"
    names = {s.name for s in specs}
    missing = [s.name for s in specs if s.name not in arrays]
    unknown = sorted(set(arrays) - names)
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"no array for input {', '.join(map(repr, missing))}")
        if unknown:
            parts.append(f"arrays {', '.join(map(repr, unknown))} match no input")
        raise UsageError(f"{where}: {'; '.join(parts)}. The model's inputs are: {expected}")
    out = {}
    for spec in specs:
        arr = arrays[spec.name]
        if tuple(arr.shape) != spec.shape:
            raise UsageError(
                f"{where}: input {spec.name!r} is {arr.dtype}{list(arr.shape)}, the model "
                f"expects {spec.dtype}{list(spec.shape)}"
            )
        if arr.dtype != np.dtype(spec.dtype) and not np.can_cast(
            arr.dtype, spec.dtype, "same_kind"
        ):
            raise UsageError(
                f"{where}: input {spec.name!r} has dtype {arr.dtype}, the model expects "
                f"{spec.dtype}"
            )
        out[spec.name] = arr.astype(spec.dtype, copy=False)
    return out


def time_runs(module: GraphModule, repeat: int, number: int = 1) -> list[float]:
    """Seconds per run, ``repeat`` timings each averaged over ``number`` runs, after one
    untimed warm-up run."""
    module.run()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            module.run()
        times.append((time.perf_counter() - t0) / number)
    return times


def format_times(times: list[float]) -> str:
    """tvmc's summary: mean, median, max, min and std of the latency, in milliseconds."""
    ms = np.asarray(times) * 1000.0
    header = ["mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)"]
    values = [ms.mean(), np.median(ms), ms.max(), ms.min(), ms.std()]
    return (
        "Execution time summary:\n"
        + " ".join(f"{h:^12}" for h in header)
        + "\n"
        + " ".join(f"{v:^12.4f}" for v in values)
    )


def format_top(name: str, value: np.ndarray, k: int) -> str:
    """The ``k`` largest values of ``value`` (flattened) with their indices."""
    flat = value.reshape(-1)
    k = min(k, flat.size)
    top = np.argsort(-flat, kind="stable")[:k]
    if value.ndim > 1:
        where = [str(tuple(int(i) for i in np.unravel_index(t, value.shape))) for t in top]
    else:
        where = [str(int(t)) for t in top]
    rows = [f"  {w}: {flat[t]:.6g}" for w, t in zip(where, top, strict=True)]
    return f"{name}: top {k}\n" + "\n".join(rows)


def _summary(name: str, value: np.ndarray) -> str:
    if value.size == 0:
        return f"{name}: {value.dtype}{list(value.shape)} (empty)"
    flat = value.astype(np.float64, copy=False) if value.dtype.kind in "biu" else value
    return (
        f"{name}: {value.dtype}{list(value.shape)}  min {np.min(flat):.6g}  "
        f"max {np.max(flat):.6g}  mean {np.mean(flat):.6g}"
    )


def _save_outputs(path: Path, outputs: dict[str, np.ndarray]) -> None:
    arrays: dict[str, Any] = dict(outputs)
    with path.open("wb") as f:  # np.savez would add .npz to a name without it
        np.savez(f, **arrays)


def load_artifact(path: str, limit: int, allow_native: bool = True) -> Any:
    """The module of the artifact at ``path``, checked as a regular file within ``limit``."""
    check_file(path, "artifact", limit)
    return load_module(path, allow_native=allow_native)


def run(args: argparse.Namespace) -> int:
    limit = args.max_file_size
    out_path = check_output_path(args.outputs, "outputs file") if args.outputs else None
    factory = load_artifact(args.file, limit, allow_native=not args.no_native)
    inputs, outputs = artifact_signature(factory, repr(args.file))
    if args.inputs:
        values = check_inputs(load_npz(args.inputs, "inputs file", limit), inputs, args.inputs)
    else:
        values = fill_inputs(inputs, args.fill_mode, args.seed)
        if inputs:
            what = (
                f"random inputs (seed {args.seed})"
                if args.fill_mode == "random"
                else f"inputs of {args.fill_mode}"
            )
            print(
                f"note: no --inputs given: running on {what} for "
                + ", ".join(str(s) for s in inputs),
                file=sys.stderr,
            )
    module = GraphModule(factory["default"]())
    if values:
        module.set_input(**values)
    module.run()
    results = {s.name: module.get_output(i).numpy() for i, s in enumerate(outputs)}
    if out_path is not None:
        _save_outputs(out_path, results)
        print(f"wrote {plural(len(results), 'output')} ({', '.join(results)}) to {args.outputs}")
    if args.print_top:
        for name, value in results.items():
            print(format_top(name, value, args.print_top))
    elif not args.outputs:
        for name, value in results.items():
            print(_summary(name, value))
    if args.print_time or args.repeat:
        repeat = args.repeat or (10 if args.print_time else 1)
        times = time_runs(module, repeat, args.number)
        if args.print_time:
            print(format_times(times))
    return 0
