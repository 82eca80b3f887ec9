"""The deployment check of ahead-of-time C on full-size models no test uses.

For each model (an MLP, ResNet-18, MobileNetV2, a BERT-like encoder with an embedding
gather, and a CNN whose convolutions and dense layers are ccompiler regions), written
in plain torch with random weights and exported to ONNX:

1. import it, ``relay.build(..., target="c", executor=Executor("aot"))``, write the
   Model Library Format with ``tvm.micro.export_model_library_format`` and untar it;
2. write a ``main.c`` of this script (it reads the inputs from files, prints every
   output value, and optionally times ``tvmgen_default_run``) and compile with exactly
   ``cc -O2 -std=c99 -I codegen/host/include codegen/host/src/*.c main.c -lm``;
3. compare the printed outputs with onnxruntime (max relative error, scaled by the
   largest reference value), list the binary's symbols with ``nm`` and look for any
   Python or relaykit one, and check that ``metadata.json``'s workspace size equals the
   size of the one static workspace array in the C;
4. with ``--wasm``, build the same tar for wasm32-wasi and run it under wasmtime;
5. time the binary against relaykit's host path (graph executor, same process, one
   thread) in interleaved bursts and print the latency ratio (wall clock, and the CPU
   time of each process, which a machine shared with other work distorts less).

    python benchmarks/aot_models.py                       # all models
    python benchmarks/aot_models.py --models resnet18 mobilenet_v2 --bursts 3
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _torch_models import mobilenetv2, resnet18

MAIN = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include "tvmgen_default.h"
%(buffers)s
static int rd(const char *p, void *b, size_t n) {
  FILE *f = fopen(p, "rb"); if (!f) return 1;
  size_t k = fread(b, 1, n, f); fclose(f); return k != n;
}
int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 0;
  struct tvmgen_default_inputs in;
  struct tvmgen_default_outputs out;
%(fill)s
  if (tvmgen_default_run(&in, &out) != 0) return 3;
  if (runs == 0) {
%(print)s
  }
  for (int r = 0; r < runs; ++r) {
    struct timespec a, b, ca, cb;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
    tvmgen_default_run(&in, &out);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%%.6f %%.6f\n", (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6,
           (cb.tv_sec - ca.tv_sec) * 1e3 + (cb.tv_nsec - ca.tv_nsec) / 1e6);
  }
  return 0;
}
"""

_PRINT_FMT = {"float32": ("float", "%.9g", "(double)"), "int64": ("int64_t", "%lld", "(long long)")}


def _models():
    import torch

    nn = torch.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.GELU(),
                nn.Linear(256, 10), nn.Softmax(-1),
            )  # fmt: skip

        def forward(self, x):
            return self.net(x)

    class Bert(nn.Module):
        def __init__(self, vocab=1000, d=256, layers=4, seq=128):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(seq, d)
            self.ln = nn.LayerNorm(d)
            self.enc = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, activation="gelu",
                                           batch_first=True),
                num_layers=layers, enable_nested_tensor=False,
            )  # fmt: skip
            self.pool = nn.Linear(d, d)
            self.register_buffer("ids", torch.arange(seq)[None])

        def forward(self, x):
            h = self.enc(self.ln(self.tok(x) + self.pos(self.ids)))
            return torch.tanh(self.pool(h[:, 0])), h

    class PartCNN(nn.Module):
        """Convolutions and dense layers the ccompiler takes; pooling, tanh and softmax
        stay on the host."""

        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 32, 3, 1, 1)
            self.c2 = nn.Conv2d(32, 64, 3, 1, 1)
            self.fc1 = nn.Linear(64 * 8 * 8, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            y = nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
            y = nn.functional.max_pool2d(torch.tanh(self.c2(y)), 2)
            y = torch.relu(self.fc1(torch.flatten(y, 1)))
            return torch.softmax(self.fc2(y), -1)

    def ids(shape):
        return torch.randint(0, 1000, shape)

    return {
        "mlp": (MLP, [(1, 784)], None),
        "resnet18": (resnet18, [(1, 3, 224, 224)], None),
        "mobilenet_v2": (mobilenetv2, [(1, 3, 224, 224)], None),
        "bert_like": (Bert, [(1, 128)], ids),
        "ccompiler_cnn": (PartCNN, [(1, 3, 32, 32)], None),
    }


def export(name: str) -> tuple[bytes, list[np.ndarray]]:
    """The model ``name`` as ONNX bytes, and its inputs."""
    import torch

    cls, shapes, make = _models()[name]
    torch.manual_seed(0)
    model = cls().eval()
    with torch.no_grad():
        for m in model.modules():  # non-trivial batch-norm statistics
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    xs = [make(s) if make else torch.randn(*s) for s in shapes]
    names = [f"x{i}" for i in range(len(xs))]
    buf = io.BytesIO()
    torch.onnx.export(model, tuple(xs), buf, input_names=names, opset_version=17,
                      dynamo=False)  # fmt: skip
    return buf.getvalue(), [x.numpy() for x in xs]


def build_binary(lib, inputs: list[np.ndarray], work: Path) -> tuple[Path, dict, str]:
    """MLF of ``lib`` untarred in ``work``, compiled with ``main.c``; binary, metadata, C."""
    import relaykit as tvm

    tar = work / "model.tar"
    tvm.micro.export_model_library_format(lib, tar)
    root = work / "mlf"
    with tarfile.open(tar) as t:
        t.extractall(root, filter="data")
    meta = json.loads((root / "metadata.json").read_text())
    header = (root / "codegen/host/include/tvmgen_default.h").read_text()

    def fields(struct: str) -> list[str]:
        return re.findall(r"void \*(\w+);", header.split(struct)[1].split("};")[0])

    mod_meta = meta["modules"]["default"]
    bufs, fill, prints = [], [], []
    for i, (cname, x) in enumerate(zip(fields("struct tvmgen_default_inputs"), inputs,
                                       strict=True)):  # fmt: skip
        (work / f"in{i}.bin").write_bytes(np.ascontiguousarray(x).tobytes())
        bufs.append(f"static uint64_t ib{i}[{x.nbytes // 8 + 1}];")
        fill += [f"  in.{cname} = ib{i};", f'  if (rd("in{i}.bin", ib{i}, {x.nbytes})) return 1;']
    outs = list(mod_meta["outputs"].values())
    for k, (fname, o) in enumerate(zip(fields("struct tvmgen_default_outputs"), outs,
                                       strict=True)):  # fmt: skip
        n = int(np.prod(o["shape"]))
        ctype, fmt, cast = _PRINT_FMT[o["dtype"]]
        bufs.append(f"static uint64_t ob{k}[{n * np.dtype(o['dtype']).itemsize // 8 + 1}];")
        fill.append(f"  out.{fname} = ob{k};")
        prints.append(f'    for (int i = 0; i < {n}; ++i) printf("{fmt}\\n", '
                      f"{cast}(({ctype} *)ob{k})[i]);")  # fmt: skip
    (work / "main.c").write_text(MAIN % {"buffers": "\n".join(bufs), "fill": "\n".join(fill),
                                         "print": "\n".join(prints)})  # fmt: skip
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    # exactly the deployment command: the tar's C, main.c, libm, nothing else
    cmd = (
        f"{cc} -O2 -std=c99 -I codegen/host/include codegen/host/src/*.c ../main.c -lm -o ../model"
    )
    subprocess.run(cmd, shell=True, cwd=root, check=True)
    c_text = "\n".join(p.read_text() for p in sorted((root / "codegen/host/src").glob("*.c")))
    return work / "model", meta, c_text


def read_outputs(exe: Path, meta: dict) -> list[np.ndarray]:
    text = subprocess.run([str(exe)], cwd=exe.parent, capture_output=True, text=True,
                          check=True).stdout.split()  # fmt: skip
    outs, pos = [], 0
    for o in meta["modules"]["default"]["outputs"].values():
        n = int(np.prod(o["shape"]))
        outs.append(np.array(text[pos : pos + n], dtype=np.float64).reshape(o["shape"]))
        pos += n
    assert pos == len(text), "main.c printed more values than the outputs hold"
    return outs


def foreign_symbols(exe: Path) -> list[str]:
    """Symbols of the binary that name Python or relaykit."""
    nm = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    pat = re.compile(r"(^|[^a-z])(py|python|relaykit|numpy)", re.IGNORECASE)
    return [line for line in nm.splitlines() if pat.search(line.split()[-1])]


def static_workspace_bytes(c_text: str) -> int:
    arrays = re.findall(r"^uint64_t (tvmgen_default_workspace)\[(\d+)\];", c_text, re.MULTILINE)
    assert len(arrays) == 1, f"expected one static workspace array, found {arrays}"
    return int(arrays[0][1]) * 8


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    want = np.asarray(want, dtype=np.float64)
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


def check_wasm(lib, xs: list[np.ndarray], wants: list[np.ndarray], work: Path) -> list[float]:
    """Build the same MLF for wasm32-wasi, run it under wasmtime; relative errors."""
    from relaykit.execution.aot.platforms import build_mlf, run_build

    out_dir = work / "wasm"
    build_mlf(work / "model.tar", out_dir, "wasm")
    names = [n for n, *_ in lib.program.inputs]
    outs = run_build(out_dir, dict(zip(names, xs, strict=True)))
    return [rel_err(np.asarray(g, np.float64), w)
            for g, w in zip(outs.values(), wants, strict=True)]  # fmt: skip


def time_both(exe: Path, gm, bursts: int, runs: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall and CPU milliseconds of the binary and of the host path, timed in
    interleaved bursts."""
    times: dict[str, list[float]] = {"aot": [], "host": []}
    cpu: dict[str, list[float]] = {"aot": [], "host": []}

    def run_aot() -> None:
        out = subprocess.run([str(exe), str(runs)], cwd=exe.parent, capture_output=True, text=True,
                             check=True).stdout  # fmt: skip
        pairs = [line.split() for line in out.splitlines()]
        times["aot"] += [float(w) for w, _ in pairs]
        cpu["aot"] += [float(c) for _, c in pairs]

    def run_host() -> None:
        gm.run()
        for _ in range(runs):
            a, ca = time.perf_counter(), time.process_time()
            gm.run()
            cpu["host"].append(1e3 * (time.process_time() - ca))
            times["host"].append(1e3 * (time.perf_counter() - a))

    for b in range(bursts):
        for fn in (run_aot, run_host) if b % 2 == 0 else (run_host, run_aot):
            time.sleep(0.2)
            fn()
    med = {k: statistics.median(v) for k, v in times.items()}
    cmed = {k: statistics.median(v) for k, v in cpu.items()}
    return med, cmed


def check(name: str, bursts: int, runs: int, wasm: bool = False) -> dict[str, float]:
    import onnx
    import onnxruntime as ort

    import relaykit as tvm
    from relaykit import relay
    from relaykit.byoc import partition_for
    from relaykit.contrib import graph_executor
    from relaykit.relay.backend import Executor, Runtime

    blob, xs = export(name)
    names = [f"x{i}" for i in range(len(xs))]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(blob, opts)
    feed = dict(zip(names, xs, strict=True))
    wants = sess.run(None, feed)
    mod, params = relay.frontend.from_onnx(onnx.load_from_string(blob),
                                           {n: x.shape for n, x in feed.items()})  # fmt: skip
    if name.startswith("ccompiler"):
        mod, params = partition_for(mod, "ccompiler", params), None
        regions = str(mod).count('Compiler="ccompiler"')
        assert regions > 0, "no ccompiler region"
    t0 = time.perf_counter()
    lib = relay.build(mod, target="c",
                      executor=Executor("aot", {"interface-api": "c", "unpacked-api": True}),
                      runtime=Runtime("crt"), params=params)  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix=f"relaykit-aot-{name}-"))
    exe, meta, c_text = build_binary(lib, xs, work)
    t1 = time.perf_counter()
    gots = read_outputs(exe, meta)
    errs = [rel_err(g, w) for g, w in zip(gots, wants, strict=True)]
    foreign = foreign_symbols(exe)
    ws_meta = meta["modules"]["default"]["workspace_size_bytes"]
    ws_c = static_workspace_bytes(c_text)
    wasm_errs = check_wasm(lib, xs, wants, work) if wasm else []

    host = relay.build(mod, target="llvm", params=params)
    gm = graph_executor.GraphModule(host["default"](tvm.cpu()))
    for n, x in feed.items():
        gm.set_input(n, x)
    med, cmed = time_both(exe, gm, bursts, runs)
    funcs = meta["modules"]["default"]["memory"]["functions"]
    code = funcs["main"][0].get("code_size_bytes")
    print(f"\n{name}: aot build (generate + cc) {t1 - t0:.1f}s")
    print(f"  max rel. error vs onnxruntime: {', '.join(f'{e:.2e}' for e in errs)}")
    if wasm:
        print(f"  wasm32-wasi under wasmtime, max rel. error: "
              f"{', '.join(f'{e:.2e}' for e in wasm_errs)}")  # fmt: skip
    print(f"  Python/relaykit symbols in the binary: {len(foreign)} {foreign[:3]}")
    print(f"  workspace: metadata {ws_meta} B, static array {ws_c} B "
          f"({'equal' if ws_meta == ws_c else 'DIFFERENT'})")  # fmt: skip
    print(f"  code {code} B, constants {funcs['main'][0]['constants_size_bytes']} B")
    print(f"  aot {med['aot']:.3f} ms, host {med['host']:.3f} ms, "
          f"aot/host {med['aot'] / med['host']:.2f}x; CPU time aot {cmed['aot']:.3f} ms, "
          f"host {cmed['host']:.3f} ms, aot/host {cmed['aot'] / cmed['host']:.2f}x")  # fmt: skip
    ok = max(errs + wasm_errs) < 1e-4 and not foreign and ws_meta == ws_c
    print(f"  {'PASS' if ok else 'FAIL'}")
    shutil.rmtree(work, ignore_errors=True)
    return {"err": max(errs), "ratio": med["aot"] / med["host"], "ok": float(ok)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--models",
        nargs="*",
        default=["mlp", "resnet18", "mobilenet_v2", "bert_like", "ccompiler_cnn"],
    )
    ap.add_argument("--bursts", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--wasm", action="store_true", help="also build for wasm32-wasi and run "
                    "under wasmtime")  # fmt: skip
    args = ap.parse_args(argv)
    os.environ.setdefault("RELAYKIT_NUM_THREADS", "1")
    results = {n: check(n, args.bursts, args.runs, args.wasm) for n in args.models}
    return 0 if all(r["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
