"""Run TVM's tutorials cell by cell with ``import tvm`` aliased to relaykit.

    python benchmarks/tutorials/run.py GALLERY_DIR_OR_FILES... [--out DIR] [--deps DIR]

Each script runs in its own process, in a scratch directory, offline: its
downloads are served by local stand-ins (``standins.py``: same architectures,
random weights) through TVM's test-data cache. Its code cells (``cells.py``)
run in order in one namespace; a failing cell is recorded (exception type and
last line) and the next cell still runs. ``--deps`` puts a folder of extra
packages (torchvision, pillow) on the path. Writes ``<out>/summary.md`` and
``<out>/results.json``: cells that ran / cells with code, per tutorial.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from types import FrameType

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cells import split_cells  # noqa: E402
from standins import SUBSTITUTIONS, populate  # noqa: E402


class CellTimeout(Exception):
    """A cell ran longer than the per-cell limit."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise CellTimeout("cell exceeded the time limit")


def run_one(path: str, cache: str, timeout: int) -> dict:
    """Run the cells of one tutorial in this process; one record per code cell."""
    import relaykit

    relaykit.use_as_tvm()
    name = os.path.basename(path)
    with open(path) as f:
        source = f.read()
    for old, new in SUBSTITUTIONS.get(name, []):
        source = source.replace(old, new)
    os.environ["RELAYKIT_TEST_DATA"] = cache
    os.environ["RELAYKIT_OFFLINE"] = "1"
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.chdir(tempfile.mkdtemp(prefix="tutorial-"))
    script = os.path.abspath(path)
    namespace: dict = {"__name__": "__main__", "__file__": script}
    records = []
    signal.signal(signal.SIGALRM, _alarm)
    for cell in split_cells(source):
        if not cell.has_code:
            continue
        start = time.perf_counter()
        error = None
        signal.alarm(timeout)
        try:
            # compiled under the script's own path and line numbers, as sphinx-gallery does:
            # scripts find files beside them (inspect.getfile, __file__) and tracebacks
            # point at the script's lines
            code = "\n" * (cell.line - 1) + cell.code
            exec(compile(code, script, "exec"), namespace)
        except BaseException as exc:  # a cell's failure is the result being recorded
            if isinstance(exc, KeyboardInterrupt):
                raise
            tb = traceback.extract_tb(exc.__traceback__)
            where = ""
            if tb:
                where = tb[-1].filename if tb[-1].filename != script else name
                where = f"{where}:{tb[-1].lineno}"
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            error = f"{error[:300]} [{where}]"
        finally:
            signal.alarm(0)
        records.append(
            {
                "cell": cell.index,
                "line": cell.line,
                "ok": error is None,
                "error": error,
                "seconds": round(time.perf_counter() - start, 2),
            }
        )
    return {"tutorial": name, "cells": records}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="tutorial .py files or folders of them")
    parser.add_argument("--out", default="tutorial-results")
    parser.add_argument("--deps", default=None, help="extra packages folder (torchvision)")
    parser.add_argument("--cache", default=None, help="stand-in data folder (default: temp)")
    parser.add_argument("--cell-timeout", type=int, default=600)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.deps:
        sys.path.insert(0, args.deps)
    if args.one:
        result = run_one(args.paths[0], args.cache, args.cell_timeout)
        with open(os.path.join(args.out, result["tutorial"] + ".json"), "w") as f:
            json.dump(result, f, indent=1)
        return 0
    files: list[str] = []
    for p in args.paths:
        files += (
            sorted(glob.glob(os.path.join(p, "**", "*.py"), recursive=True))
            if os.path.isdir(p)
            else [p]
        )
    os.makedirs(args.out, exist_ok=True)
    cache = args.cache or tempfile.mkdtemp(prefix="tutorial-data-")
    for problem in populate(cache):
        print("stand-in not made:", problem)
    env = dict(os.environ)
    if args.deps:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), args.deps]))
    results = []
    for path in files:
        name = os.path.basename(path)
        cmd = [
            sys.executable,
            __file__,
            os.path.abspath(path),
            "--one",
            "--out",
            os.path.abspath(args.out),
            "--cache",
            cache,
            "--cell-timeout",
            str(args.cell_timeout),
        ]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        out = os.path.join(args.out, name + ".json")
        with open(os.path.join(args.out, name + ".log"), "w") as f:
            f.write(proc.stdout + proc.stderr)
        if proc.returncode or not os.path.exists(out):
            results.append({"tutorial": name, "cells": [], "crash": proc.stderr[-500:]})
        else:
            with open(out) as f:
                results.append(json.load(f))
        r = results[-1]
        ok = sum(c["ok"] for c in r["cells"])
        print(f"{name}: {ok}/{len(r['cells'])}", flush=True)
    lines = ["| tutorial | cells run | first failures |", "| --- | --- | --- |"]
    total_ok = total = 0
    for r in results:
        ok = sum(c["ok"] for c in r["cells"])
        total_ok, total = total_ok + ok, total + len(r["cells"])
        fails = "; ".join(f"cell {c['cell']}: {c['error']}" for c in r["cells"] if not c["ok"])[
            :600
        ]
        lines.append(
            f"| {r['tutorial']} | {ok}/{len(r['cells'])} | {fails or r.get('crash', '')} |"
        )
    lines.append(f"| **total** | **{total_ok}/{total}** | |")
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"total: {total_ok}/{total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
