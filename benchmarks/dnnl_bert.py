"""A BERT-like encoder on relaykit + oneDNN against ONNX Runtime (issue 13's model).

    OPENBLAS_NUM_THREADS=1 python benchmarks/dnnl_bert.py --threads 2
    OPENBLAS_NUM_THREADS=1 python benchmarks/dnnl_bert.py --threads 1 --host

The encoder: 4 layers, hidden 256, 4 heads, FFN 1024, GELU (erf), sequence 128,
batch 1, token and position embeddings; defined in plain PyTorch with random
weights and exported to ONNX opset 17 (TorchScript exporter), so the graph is
what an exporter writes: MatMul + Add, Reshape/Transpose around the heads, a
masked Softmax, LayerNormalization, Erf-based GELU. Without torch, pass
``--onnx model.onnx`` (inputs ``ids`` int64 [1, 128] and ``mask`` float [1, 128]).

Both engines run in this one process on the same inputs with the same thread
count; runs are timed in bursts after pauses, alternating which engine goes
first, and the medians and the ratio relaykit / onnxruntime are printed, with
the partitioning (regions, operators left on the host) and the largest error.
``--host`` also times relaykit's host path. Set ``OPENBLAS_NUM_THREADS=1``
until the process-wide thread policy lands (NumPy's BLAS pool and oneDNN's
OpenMP pool otherwise fight over the cores).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter

import numpy as np

SEQ, VOCAB = 128, 1000


def export_bert(path: str, layers: int = 4, hidden: int = 256, heads: int = 4, ffn: int = 1024):
    import torch
    from torch import nn

    torch.manual_seed(0)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden) for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.f1, self.f2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)

        def forward(self, x, mask):
            b, s, h = x.shape
            d = h // heads

            def split(t):
                return t.view(b, s, heads, d).transpose(1, 2)

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            att = (q @ k.transpose(-1, -2) / d**0.5 + mask).softmax(-1)
            ctx = (att @ v).transpose(1, 2).reshape(b, s, h)
            x = self.ln1(x + self.o(ctx))
            return self.ln2(x + self.f2(nn.functional.gelu(self.f1(x))))

    class Bert(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb, self.pos = nn.Embedding(VOCAB, hidden), nn.Embedding(SEQ, hidden)
            self.ln = nn.LayerNorm(hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))

        def forward(self, ids, mask):
            x = self.ln(self.emb(ids) + self.pos.weight[None, : ids.shape[1]])
            m = (1.0 - mask[:, None, None, :]) * -10000.0
            for layer in self.layers:
                x = layer(x, m)
            return x

    ids = torch.randint(0, VOCAB, (1, SEQ))
    torch.onnx.export(
        Bert().eval(), (ids, torch.ones(1, SEQ)), path, opset_version=17,
        input_names=["ids", "mask"], output_names=["out"], dynamo=False,
    )  # fmt: skip


def build(path: str, threads: int, dnnl: bool):
    import onnx

    import relaykit as tvm
    from relaykit import relay
    from relaykit.backends.dnnl import OPTIONS_KEY, partition_for_dnnl
    from relaykit.contrib import graph_executor
    from relaykit.ir.expr import Call
    from relaykit.ir.functor import post_order
    from relaykit.ir.op import Op

    mod, params = relay.frontend.from_onnx(
        onnx.load(path), shape={"ids": (1, SEQ), "mask": (1, SEQ)}
    )
    t = time.perf_counter()
    if dnnl:
        mod = partition_for_dnnl(mod, params)
        params = {}
    host = Counter(
        n.op.name for n in post_order(mod["main"].body) if type(n) is Call and type(n.op) is Op
    )
    regions = sum(1 for gv in mod.get_global_vars() if gv.name_hint != "main")
    config = {OPTIONS_KEY: {"num_threads": threads}} if dnnl else {}
    with tvm.transform.PassContext(opt_level=3, config=config):
        lib = relay.build(mod, target="llvm", params=params)
    build_s = time.perf_counter() - t
    return graph_executor.GraphModule(lib["default"](tvm.cpu())), regions, host, build_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bursts", type=int, default=10)
    parser.add_argument("--burst", type=int, default=5, help="timed runs per burst")
    parser.add_argument("--gap", type=float, default=0.3, help="pause before a burst (s)")
    parser.add_argument("--onnx", help="an exported model (default: export one with torch)")
    parser.add_argument("--host", action="store_true", help="also time the host path")
    parser.add_argument(
        "--ort-no-spin", action="store_true", help="also time onnxruntime without spinning"
    )
    args = parser.parse_args(argv)
    import onnxruntime as ort

    path = args.onnx
    if path is None:
        # torch loads its libgomp, which oneDNN then shares: bound its spinning as relaykit
        # would have (docs/threads.md), unless the user chose a policy
        if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
            os.environ["GOMP_SPINCOUNT"] = "10000"
        path = os.path.join(tempfile.mkdtemp(), "bert.onnx")
        try:
            export_bert(path)
        except ImportError:
            print("torch is not installed: pass --onnx model.onnx", file=sys.stderr)
            return 2
    rng = np.random.default_rng(0)
    feeds = {"ids": rng.integers(0, VOCAB, (1, SEQ)).astype("int64"),
             "mask": np.ones((1, SEQ), "float32")}  # fmt: skip
    feeds["mask"][0, 100:] = 0

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.log_severity_level = 3
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)[0]
    engines = {"onnxruntime": lambda: sess.run(None, feeds)[0]}
    if args.ort_no_spin:  # onnxruntime with its threads sleeping when idle, as oneDNN's do
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        quiet = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        engines["ort (no spin)"] = lambda: quiet.run(None, feeds)[0]
    for name, dnnl in (("relaykit+dnnl", True), ("relaykit host", False))[: 2 if args.host else 1]:
        gm, regions, host, build_s = build(path, args.threads, dnnl)
        for k, v in feeds.items():
            gm.set_input(k, v)

        def run(gm=gm):
            gm.run()
            return gm.get_output(0).numpy()

        got = run()
        err = float(np.max(np.abs(got - want)))
        close = np.allclose(got, want, rtol=1e-4, atol=1e-5)
        print(f"{name}: {regions} region(s), host ops {dict(host)}, build {build_s:.1f} s, "
              f"max |error| {err:.1e}, allclose(rtol=1e-4, atol=1e-5): {close}")  # fmt: skip
        engines[name] = run
    times: dict[str, list[float]] = {k: [] for k in engines}
    names = list(engines)
    for i in range(args.bursts):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            time.sleep(args.gap)
            engines[name]()
            for _ in range(args.burst):
                t = time.perf_counter()
                engines[name]()
                times[name].append(time.perf_counter() - t)
    ref = statistics.median(times["onnxruntime"])
    print(f"threads {args.threads}, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    for name in names:
        med = statistics.median(times[name])
        print(f"  {name:>14}: {med * 1e3:8.2f} ms  ({med / ref:.2f}x onnxruntime)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
