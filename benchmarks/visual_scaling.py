"""How the partition pictures scale: BERT-like encoders of growing depth, and ResNet-50.

For each model: operators, values (inputs, weights, constants, outputs: nodes too),
the time of explain+summarize, of the layout (operators and values), of the HTML
(layout included) and DOT writers, the page's size, and (when Chromium is installed)
how long a headless Chromium takes to load the page and run its script. The time per
node should stay flat as the model grows (every step is linear or n log n).

    python benchmarks/visual_scaling.py [--layers 6 12 24 48] [--html-dir /tmp]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import scoped_registries
from relaykit.byoc.report.visual import analyse, graph_layout, render_dot, render_html
from relaykit.testing import resnet

HIDDEN, HEADS, SEQ = 64, 4, 16


def encoder_layer(x: relay.Expr, mask: relay.Expr, k: int) -> relay.Expr:
    """One BERT encoder layer (attention, residual, layer norm, GELU MLP)."""

    def w(name: str, shape: tuple[int, ...]) -> relay.Var:
        return relay.var(f"l{k}_{name}", shape=shape)

    def dense(v: relay.Expr, name: str, units: int, inp: int = HIDDEN) -> relay.Expr:
        return relay.nn.bias_add(
            relay.nn.dense(v, w(name + "_w", (units, inp))), w(name + "_b", (units,))
        )

    def heads(v: relay.Expr) -> relay.Expr:
        v = relay.reshape(v, (1, SEQ, HEADS, HIDDEN // HEADS))
        return relay.reshape(relay.transpose(v, (0, 2, 1, 3)), (HEADS, SEQ, HIDDEN // HEADS))

    q, key, v = (heads(dense(x, n, HIDDEN)) for n in ("q", "k", "v"))
    scores = relay.nn.batch_matmul(q, key) / relay.const((HIDDEN // HEADS) ** 0.5)
    probs = relay.nn.softmax(scores + mask)
    ctx = relay.nn.batch_matmul(probs, relay.transpose(v, (0, 2, 1)))
    ctx = relay.reshape(
        relay.transpose(relay.reshape(ctx, (1, HEADS, SEQ, -1)), (0, 2, 1, 3)), (SEQ, HIDDEN)
    )
    h = relay.nn.layer_norm(
        dense(ctx, "o", HIDDEN) + x, w("ln1_g", (HIDDEN,)), w("ln1_b", (HIDDEN,))
    )
    up = dense(h, "up", 4 * HIDDEN)
    gelu = up * relay.const(0.5) * (relay.const(1.0) + relay.erf(up * relay.const(0.7071)))
    out = dense(gelu, "down", HIDDEN, 4 * HIDDEN) + h
    return relay.nn.layer_norm(out, w("ln2_g", (HIDDEN,)), w("ln2_b", (HIDDEN,)))


def bert_like(layers: int) -> tuple[tvm.IRModule, set[str]]:
    x = relay.var("x", shape=(SEQ, HIDDEN))
    mask = relay.var("mask", shape=(HEADS, SEQ, SEQ))
    # BERT's extended attention mask: computed once, read by every layer
    bias = (relay.const(1.0) - mask) * relay.const(-10000.0)
    h = x
    for k in range(layers):
        h = encoder_layer(h, bias, k)
    fn = relay.Function(relay.analysis.free_vars(h), h)
    return tvm.IRModule.from_expr(fn), {p.name_hint for p in fn.params} - {"x", "mask"}


def chromium_seconds(page: Path) -> float | None:
    exe = shutil.which("chromium")
    if exe is None:
        return None
    with tempfile.TemporaryDirectory() as profile:
        t = time.perf_counter()
        subprocess.run(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
            capture_output=True, timeout=300, check=True,
        )  # fmt: skip
        return time.perf_counter() - t


def measure(name: str, mod: tvm.IRModule, weights: set[str], out: Path) -> None:
    with scoped_registries():
        for op in ("nn.dense", "nn.bias_add", "nn.batch_matmul", "nn.softmax", "nn.conv2d"):
            tvm.ir.register_op_attr(op, "target.gemm", True)
        for op in ("add", "multiply", "erf", "nn.relu", "nn.layer_norm", "nn.batch_norm"):
            tvm.ir.register_op_attr(op, "target.vec", True)
        t0 = time.perf_counter()
        report, summary = analyse(mod, ["gemm", "vec"], params=weights, model=name)
        t1 = time.perf_counter()
    lay = graph_layout(report, values=True)
    t2 = time.perf_counter()
    page = render_html(report, summary)
    t3 = time.perf_counter()
    render_dot(report, summary)
    t4 = time.perf_counter()
    path = out / f"{name}.html"
    path.write_text(page)
    browser = chromium_seconds(path)
    n, nodes = len(report.ops), len(lay.boxes)
    print(
        f"{name:>12} {n:>6} ops {nodes - n:>6} values {len(lay.edges):>6} edges | "
        f"explain {t1 - t0:6.2f} s | layout {t2 - t1:6.2f} s "
        f"({(t2 - t1) / nodes * 1e6:4.0f} us/node) | html {t3 - t2:5.2f} s "
        f"{len(page) / 2**20:5.1f} MB | dot {t4 - t3:5.2f} s | "
        + ("chromium -" if browser is None else f"chromium {browser:5.2f} s")
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, nargs="+", default=[6, 12, 24, 48])
    ap.add_argument("--html-dir", type=Path, default=Path(tempfile.gettempdir()))
    args = ap.parse_args()
    net = resnet.get_net(1, 1000, num_layers=50, image_shape=(3, 224, 224))
    measure(
        "resnet50",
        tvm.IRModule.from_expr(net),
        {p.name_hint for p in net.params[1:]},
        args.html_dir,
    )
    for layers in args.layers:
        mod, weights = bert_like(layers)
        measure(f"bert{layers}", mod, weights, args.html_dir)
        time.sleep(0.5)


if __name__ == "__main__":
    main()
