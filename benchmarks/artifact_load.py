"""Time of ``load_module`` on ResNet-18 artifacts, before/after, and the byte-flip sweep.

    python benchmarks/artifact_load.py                        # this tree only
    python benchmarks/artifact_load.py --before /work/main/src  # and another tree, side by side
    python benchmarks/artifact_load.py --sweep                # flip every byte of a small file

Each tree runs in its own process (the file format differs between versions), built and
exported once per tree; the processes take turns, each timing a burst of loads, with a
pause in between, and the best burst median is shown. Variants: the host-only build,
ccompiler (``allow_native=True``: the file's library, after its signatures were checked
against the graph; ``allow_native=False``: the library rebuilt from the graph, compiled
once per process, so the first load pays the compile: shown separately) and jsonref.

``--sweep`` flips each byte of a small ccompiler artifact in turn and checks that every
change gives a typed error or changes nothing (a ZIP timestamp); it prints the counts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler
from relaykit.contrib import graph_executor
from relaykit.errors import RelayKitError

_CHILD = r"""
import json, os, statistics, sys, time
import numpy as np
import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler, jsonref
from relaykit.contrib import graph_executor
from relaykit.testing import resnet

out_dir, bursts, per_burst = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mod, params = resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 224, 224))
builds = {
    "host": lambda: relay.build(mod, target="llvm", params=params),
    "ccompiler": lambda: relay.build(ccompiler.partition_for_ccompiler(mod, params), target="llvm"),
    "jsonref": lambda: relay.build(jsonref.partition_for_jsonref(mod, params), target="llvm"),
}
paths = {}
for name, build in builds.items():
    paths[name] = os.path.join(out_dir, name + ".rkmod")
    if not os.path.exists(paths[name]):
        build().export_library(paths[name])
variants = [("host", {}), ("ccompiler", {}), ("jsonref", {})]
variants.append(("ccompiler", {"allow_native": False}))
first = {}
for name, kw in list(variants):
    key = name + ("/no-native" if kw else "")
    t0 = time.perf_counter()
    try:
        tvm.runtime.load_module(paths[name], **kw)
    except Exception:  # before this change, allow_native=False refused the file
        variants.remove((name, kw))
        continue
    first[key] = time.perf_counter() - t0
result = {"first": first, "median": {}}
for name, kw in variants:
    key = name + ("/no-native" if kw else "")
    medians = []
    for _ in range(bursts):
        ts = []
        for _ in range(per_burst):
            t0 = time.perf_counter()
            tvm.runtime.load_module(paths[name], **kw)
            ts.append(time.perf_counter() - t0)
        medians.append(statistics.median(ts))
        time.sleep(0.2)
    result["median"][key] = min(medians)
result["size_mb"] = {n: os.path.getsize(p) / 1e6 for n, p in paths.items()}
print("RESULT " + json.dumps(result))
"""


def _child(src: str | None, out_dir: str, bursts: int, per_burst: int) -> dict:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, out_dir, str(bursts), str(per_burst)],
        capture_output=True, text=True, env=env, timeout=1800, check=False,
    )  # fmt: skip
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"benchmark child failed:\n{proc.stderr[-3000:]}")


def compare(before: str | None, rounds: int, bursts: int, per_burst: int) -> None:
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    trees = {"after": os.path.abspath(here)}
    if before:
        trees["before"] = before
    dirs = {k: tempfile.mkdtemp(prefix=f"rk-bench-{k}-") for k in trees}
    best: dict[str, dict[str, float]] = {k: {} for k in trees}
    first: dict[str, dict[str, float]] = {k: {} for k in trees}
    for _ in range(rounds):
        for k, src in trees.items():
            res = _child(src, dirs[k], bursts, per_burst)
            for v, t in res["median"].items():
                best[k][v] = min(best[k].get(v, t), t)
            for v, t in res["first"].items():
                first[k][v] = min(first[k].get(v, t), t)
            time.sleep(1.0)
    print(f"load_module on ResNet-18 (224x224), best burst median of {rounds}x{bursts}x{per_burst}")
    head = f"{'variant':24s} {'before ms':>10s} {'after ms':>10s} {'after/before':>13s}"
    print(head + "  first load (after)")
    for v in best["after"]:
        a = best["after"][v] * 1e3
        b = best.get("before", {}).get(v)
        ratio = f"{a / (b * 1e3):13.2f}" if b else f"{'-':>13s}"
        bs = f"{b * 1e3:10.1f}" if b else f"{'-':>10s}"
        print(f"{v:24s} {bs} {a:10.1f} {ratio}  {first['after'][v] * 1e3:8.1f} ms")


def sweep() -> None:
    x = relay.var("data", shape=(2, 4))
    w = relay.const(np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4))
    y = relay.nn.relu(relay.nn.dense(relay.add(x, x), w))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.softmax(y)))
    path = os.path.join(tempfile.mkdtemp(), "m.rkmod")
    relay.build(ccompiler.partition_for_ccompiler(mod), target="llvm").export_library(path)
    data = open(path, "rb").read()  # noqa: SIM115
    data_in = np.arange(8, dtype="float32").reshape(2, 4)

    def run(lib):
        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        m.run(data=data_in)
        return m.get_output(0).numpy()

    expected = run(tvm.runtime.load_module(path))
    counts = {"typed error": 0, "no effect": 0}
    t0 = time.perf_counter()
    for offset in range(len(data)):
        flipped = bytearray(data)
        flipped[offset] ^= 0x01
        with open(path, "wb") as fh:
            fh.write(flipped)
        try:
            got = run(tvm.runtime.load_module(path))
        except RelayKitError:
            counts["typed error"] += 1
            continue
        if not np.array_equal(got, expected):
            raise SystemExit(f"byte {offset}: loaded and computed something else")
        counts["no effect"] += 1
    print(f"{len(data)} bytes flipped in {time.perf_counter() - t0:.1f} s: {counts}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", help="the src directory of the tree to compare against")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--bursts", type=int, default=3)
    ap.add_argument("--per-burst", type=int, default=5)
    ap.add_argument("--sweep", action="store_true", help="flip every byte of a small file")
    args = ap.parse_args()
    if args.sweep:
        sweep()
    else:
        compare(args.before, args.rounds, args.bursts, args.per_burst)


if __name__ == "__main__":
    main()
