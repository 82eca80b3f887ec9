"""Ahead-of-time C against relaykit's host path and onnxruntime, side by side.

Each model (an MLP, ResNet-18 and a BERT-like encoder, written in torch and exported
to ONNX) is imported once, built three ways on the same inputs, and timed in
interleaved bursts (each engine in turn, alternating order):

- ``aot``: ``relay.build(..., executor=Executor("aot"))``, exported as Model Library
  Format, compiled with ``cc -O2`` and a ``main.c`` that times ``tvmgen_default_run``
  (one thread: the generated C is sequential);
- ``host``: relaykit's graph executor (``relay.build(..., target="llvm")``);
- ``ort``: onnxruntime on the ONNX file.

It prints median milliseconds per run (wall clock, and the CPU time each engine's process
used, which a machine shared with other work distorts less), the ratios aot/host and
aot/ort, whether the outputs agree, and the sizes the AOT build reports: code (the
compiled object's text), constants and workspace.

    python benchmarks/aot.py                    # all models
    python benchmarks/aot.py --models resnet18 --bursts 5 --threads 1
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

MAIN = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include "tvmgen_default.h"
static uint64_t in0[%(in_words)d], out0[%(out_words)d];
int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 10;
  FILE *f = fopen("in0.bin", "rb");
  if (!f || fread(in0, 1, %(in_bytes)d, f) != %(in_bytes)d) return 1;
  fclose(f);
  struct tvmgen_default_inputs in = { in0 };
  struct tvmgen_default_outputs out = { out0 };
  if (tvmgen_default_run(&in, &out)) return 2;
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
  f = fopen("out0.bin", "wb");
  fwrite(out0, 1, %(out_bytes)d, f);
  fclose(f);
  return 0;
}
"""


def _models():
    import torch

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(
                torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256),
                torch.nn.ReLU(), torch.nn.Linear(256, 10),
            )  # fmt: skip

        def forward(self, x):
            return self.net(x)

    class Block(torch.nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = torch.nn.BatchNorm2d(cout)
            self.c2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = torch.nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = torch.nn.Sequential(
                    torch.nn.Conv2d(cin, cout, 1, stride, bias=False), torch.nn.BatchNorm2d(cout)
                )

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class ResNet18(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Sequential(
                torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False), torch.nn.BatchNorm2d(64),
                torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1),
            )  # fmt: skip
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
                cin = cout
            self.layers = torch.nn.Sequential(*layers)
            self.fc = torch.nn.Linear(512, 1000)

        def forward(self, x):
            y = self.layers(self.stem(x))
            return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = torch.nn.TransformerEncoder(
                torch.nn.TransformerEncoderLayer(
                    256, 4, 1024, dropout=0.0, activation="gelu", batch_first=True
                ),
                num_layers=4,
                enable_nested_tensor=False,
            )

        def forward(self, x):
            return self.enc(x)

    return {
        "mlp": (MLP, (1, 784)),
        "resnet18": (ResNet18, (1, 3, 224, 224)),
        "bert_like": (Encoder, (1, 128, 256)),
    }


def _onnx(name: str) -> tuple[bytes, np.ndarray]:
    import torch

    cls, shape = _models()[name]
    torch.manual_seed(0)
    model = cls().eval()
    x = torch.randn(*shape)
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, input_names=["x"], output_names=["y"], opset_version=17,
                      dynamo=False)  # fmt: skip
    return buf.getvalue(), x.numpy()


def _aot_binary(lib, x: np.ndarray, out_shape, work: Path) -> tuple[Path, int]:
    import relaykit as tvm

    tar = work / "model.tar"
    tvm.micro.export_model_library_format(lib, tar)
    with tarfile.open(tar) as t:
        t.extractall(work / "mlf", filter="data")
    out_bytes = int(np.prod(out_shape)) * 4
    (work / "main.c").write_text(MAIN % {
        "in_words": x.nbytes // 8 + 1, "out_words": out_bytes // 8 + 1,
        "in_bytes": x.nbytes, "out_bytes": out_bytes,
    })  # fmt: skip
    (work / "in0.bin").write_bytes(x.tobytes())
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    src = sorted(str(p) for p in (work / "mlf/codegen/host/src").glob("*.c"))
    inc = str(work / "mlf/codegen/host/include")
    lib1 = work / "mlf/codegen/host/src/default_lib1.c"
    subprocess.run([cc, "-O2", "-std=c99", "-c", "-I", inc, str(lib1), "-o", str(work / "lib1.o")],
                   check=True)  # fmt: skip
    size = subprocess.run(["size", str(work / "lib1.o")], capture_output=True, text=True).stdout
    text = int(size.splitlines()[1].split()[0]) if size else -1
    exe = work / "model"
    subprocess.run([cc, "-O2", "-std=c99", "-I", inc, *src, str(work / "main.c"), "-o", str(exe),
                    "-lm"], check=True)  # fmt: skip
    return exe, text


def bench(name: str, bursts: int, runs: int, threads: int) -> None:
    import onnx
    import onnxruntime as ort

    from relaykit import relay
    from relaykit.contrib import graph_executor
    from relaykit.relay.backend import Executor, Runtime

    import relaykit as tvm

    blob, x = _onnx(name)
    mod, params = relay.frontend.from_onnx(onnx.load_from_string(blob), {"x": x.shape})
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(blob, opts)
    want = sess.run(None, {"x": x})[0]

    t0 = time.perf_counter()
    host = relay.build(mod, target="llvm", params=params)
    gm = graph_executor.GraphModule(host["default"](tvm.cpu()))
    gm.set_input("x", x)
    t1 = time.perf_counter()
    lib = relay.build(mod, target="c", executor=Executor("aot", {"interface-api": "c"}),
                      runtime=Runtime("crt"), params=params)  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="relaykit-aot-bench-"))
    exe, code_bytes = _aot_binary(lib, x, want.shape, work)
    t2 = time.perf_counter()

    times: dict[str, list[float]] = {"aot": [], "host": [], "ort": []}
    cpu: dict[str, list[float]] = {"aot": [], "host": [], "ort": []}

    def run_aot() -> None:
        out = subprocess.run([str(exe), str(runs)], cwd=work, capture_output=True, text=True,
                             check=True).stdout  # fmt: skip
        pairs = [line.split() for line in out.splitlines()]
        times["aot"] += [float(w) for w, _ in pairs]
        cpu["aot"] += [float(c) for _, c in pairs]

    def timed(key: str, fn) -> None:
        fn()
        for _ in range(runs):
            a, ca = time.perf_counter(), time.process_time()
            fn()
            cpu[key].append(1e3 * (time.process_time() - ca))
            times[key].append(1e3 * (time.perf_counter() - a))

    engines = [run_aot, lambda: timed("host", gm.run), lambda: timed("ort", lambda: sess.run(None, {"x": x}))]
    for b in range(bursts):
        for fn in engines if b % 2 == 0 else engines[::-1]:
            time.sleep(0.2)
            fn()
    got = np.fromfile(work / "out0.bin", dtype="float32").reshape(want.shape)
    gm.run()
    err_aot = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    err_host = float(np.max(np.abs(gm.get_output(0).numpy() - want)) / np.max(np.abs(want)))
    med = {k: statistics.median(v) for k, v in times.items()}
    cmed = {k: statistics.median(v) for k, v in cpu.items()}
    meta = json.loads((work / "mlf/metadata.json").read_text())["modules"]["default"]
    print(f"\n{name}: build host {t1 - t0:.1f}s, aot (generate + cc) {t2 - t1:.1f}s")
    for k in ("aot", "host", "ort"):
        print(f"  {k:5s} {med[k]:9.3f} ms   (CPU time {cmed[k]:9.3f} ms)")
    print(f"  aot/host {med['aot'] / med['host']:.2f}x   aot/ort {med['aot'] / med['ort']:.2f}x")
    print(f"  CPU time: aot/host {cmed['aot'] / cmed['host']:.2f}x   "
          f"aot/ort {cmed['aot'] / cmed['ort']:.2f}x")  # fmt: skip
    print(f"  max rel. error vs ort: aot {err_aot:.2e}, host {err_host:.2e}")
    print(f"  code {code_bytes} B (operators' object text), constants "
          f"{meta['constants_size_bytes']} B, workspace {meta['workspace_size_bytes']} B")  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="*", default=["mlp", "resnet18", "bert_like"])
    ap.add_argument("--bursts", type=int, default=4)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="host and onnxruntime threads")
    args = ap.parse_args(argv)
    os.environ.setdefault("RELAYKIT_NUM_THREADS", str(args.threads))
    for name in args.models:
        bench(name, args.bursts, args.runs, args.threads)


if __name__ == "__main__":
    sys.exit(main())
