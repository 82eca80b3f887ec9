"""Measured placement against every single-backend placement, on models no test uses.

    python benchmarks/placement.py                                  # all models, 2 threads
    python benchmarks/placement.py --models resnet50 --targets dnnl,onnxruntime,ccompiler
    python benchmarks/placement.py --models bert,mixed --image-size 112 --log /tmp/tune.jsonl

For each model: ``relaykit.tuning.place`` tunes it (the log given by ``--log`` is reused
and extended; the tuning time is printed, and the time of a second, log-only tune), then
every engine is built — the measured placement, each target alone by
``partition_for`` (its rules, patterns and priorities, no measurement), and the host
alone — and run in this one process on the same input, in interleaved bursts (each
after a pause and one untimed run, in a new random order each round). Printed: median and best
times, and each single-backend placement's median over the measured placement's
(above 1.0: measured placement is faster), and the largest relative difference of
every engine's output from onnxruntime running the whole model exported to ONNX.

Models: ``resnet50`` and ``mobilenet`` (relay.testing workloads), ``bert`` (a
4-layer BERT-like encoder: dense, batch_matmul, softmax, layer norm, GELU), ``mixed``
(a small segmentation network whose halves only some backends take: dynamic
convolutions, whose kernels are computed from the input, which the dnnl backend
declines, and transposed convolutions, which the onnxruntime backend does not export),
and ``stem_tail`` (a conv stem, then a tail of layer norm over channels, erf, strided
slices and a concatenate, all of which onnxruntime runs well).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.backends.onnxruntime import function_to_onnx
from relaykit.byoc import partition_for
from relaykit.runtime.threads import set_num_threads
from relaykit.testing import mobilenet, resnet
from relaykit.transform import InferType
from relaykit.transform.bind import bind_params_by_name
from relaykit.tuning import MeasuredCost, TuningLog, place

RNG = np.random.default_rng(0)


def _w(*shape: int, scale: float = 0.1) -> relay.Expr:
    return relay.const((RNG.standard_normal(shape) * scale).astype("float32"))


def _bound(mod: tvm.IRModule, params: dict) -> tvm.IRModule:
    mod = mod.copy()
    mod["main"] = bind_params_by_name(mod["main"], params)
    return InferType()(mod)


def resnet50(size: int) -> tvm.IRModule:
    mod, params = resnet.get_workload(num_layers=50, batch_size=1, image_shape=(3, size, size))
    return _bound(mod, params)


def mobilenet_v2ish(size: int) -> tvm.IRModule:
    mod, params = mobilenet.get_workload(batch_size=1, image_shape=(3, size, size))
    return _bound(mod, params)


def bert(
    size: int, layers: int = 4, seq: int = 64, hidden: int = 256, heads: int = 4
) -> tvm.IRModule:
    x = relay.var("data", shape=(seq, hidden))
    h = x
    dh = hidden // heads
    for _ in range(layers):

        def proj(t: relay.Expr) -> relay.Expr:
            return relay.nn.bias_add(relay.nn.dense(t, _w(hidden, hidden)), _w(hidden))

        q, k, v = (
            relay.transpose(relay.reshape(proj(h), (seq, heads, dh)), (1, 0, 2)) for _ in range(3)
        )
        att = relay.nn.softmax(relay.nn.batch_matmul(q, k) * relay.const(1 / dh**0.5))
        ctx = relay.nn.batch_matmul(att, relay.transpose(v, (0, 2, 1)))
        ctx = relay.reshape(relay.transpose(ctx, (1, 0, 2)), (seq, hidden))
        h = relay.nn.layer_norm(h + proj(ctx), _w(hidden, scale=1.0), _w(hidden))
        ff = relay.nn.gelu(
            relay.nn.bias_add(relay.nn.dense(h, _w(4 * hidden, hidden)), _w(4 * hidden))
        )
        ff = relay.nn.bias_add(relay.nn.dense(ff, _w(hidden, 4 * hidden)), _w(hidden))
        h = relay.nn.layer_norm(h + ff, _w(hidden, scale=1.0), _w(hidden))
    return InferType()(tvm.IRModule.from_expr(relay.Function([x], h)))


def stem_tail(size: int) -> tvm.IRModule:
    """A conv stem, then a tail whose operators only some backends take (layer norm over
    channels, erf, strided slices, a concatenate): onnxruntime runs all of it well."""
    x = relay.var("data", shape=(1, 3, size, size))
    y = relay.nn.relu(relay.nn.conv2d(x, _w(32, 3, 3, 3), padding=(1, 1), strides=(2, 2)))
    y = relay.nn.relu(relay.nn.conv2d(y, _w(32, 32, 3, 3), padding=(1, 1)))
    y = relay.nn.layer_norm(y, _w(32, scale=1.0), _w(32), axis=1)
    y = y * relay.erf(y)
    a = relay.strided_slice(y, [0, 0], [1, 16])
    b = relay.strided_slice(y, [0, 16], [1, 32])
    y = relay.concatenate([relay.nn.relu(a), relay.sigmoid(b)], axis=1)
    y = relay.nn.conv2d(y, _w(64, 32, 3, 3), padding=(1, 1), strides=(2, 2))
    y = relay.nn.global_avg_pool2d(relay.nn.relu(y))
    y = relay.nn.softmax(relay.nn.dense(relay.nn.batch_flatten(y), _w(10, 64)))
    return InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))


def _conv(x: relay.Expr, cin: int, cout: int, k: int, stride: int = 1) -> relay.Expr:
    y = relay.nn.conv2d(x, _w(cout, cin, k, k), padding=(k // 2, k // 2), strides=(stride, stride))
    return relay.nn.relu(relay.nn.bias_add(y, _w(cout)))


def _dynamic_conv(x: relay.Expr, cin: int, cout: int, k: int = 3, experts: int = 4) -> relay.Expr:
    """Dynamic convolution (attention over ``experts`` kernels, as in Chen et al., CVPR
    2020): the input's pooled features weigh the experts, and the convolution runs with
    the kernel so mixed, a tensor computed at run time, not a constant."""
    pooled = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(x))
    attention = relay.sigmoid(relay.nn.dense(pooled, _w(experts, cin)))
    kernel = relay.nn.dense(attention, _w(cout * cin * k * k, experts))
    kernel = relay.reshape(kernel, (cout, cin, k, k))
    return relay.nn.relu(relay.nn.conv2d(x, kernel, padding=(k // 2, k // 2)))


def _upconv(x: relay.Expr, cin: int, cout: int) -> relay.Expr:
    """A learned 2x upsampling: a 4x4 transposed convolution, stride 2."""
    y = relay.nn.conv2d_transpose(
        x, _w(cin, cout, 4, 4), strides=(2, 2), padding=(1, 1), kernel_size=(4, 4), channels=cout
    )
    return relay.nn.relu(relay.nn.bias_add(y, _w(cout)))


def mixed(size: int) -> tvm.IRModule:
    """A small segmentation network: a dynamic-convolution encoder (kernels computed from
    the input) and a transposed-convolution decoder, 8 classes per pixel at half the
    input's resolution. The dnnl backend takes no convolution whose kernel is not a
    constant, and the onnxruntime backend exports no transposed convolution: each
    single backend leaves one half to the host."""
    x = relay.var("data", shape=(1, 3, size, size))
    y = _conv(x, 3, 32, 3, 2)
    y = relay.nn.max_pool2d(_dynamic_conv(y, 32, 64), (2, 2), (2, 2))
    y = relay.nn.max_pool2d(_dynamic_conv(y, 64, 128), (2, 2), (2, 2))
    y = _dynamic_conv(y, 128, 128)
    y = _upconv(_upconv(y, 128, 64), 64, 32)
    y = relay.nn.softmax(relay.nn.conv2d(y, _w(8, 32, 1, 1)), axis=1)
    return InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))


MODELS: dict[str, Callable[[int], tvm.IRModule]] = {
    "resnet50": resnet50,
    "mobilenet": mobilenet_v2ish,
    "bert": bert,
    "mixed": mixed,
    "stem_tail": stem_tail,
}


def _runner(part: tvm.IRModule, x: np.ndarray) -> Callable[[], np.ndarray]:
    lib = relay.build(part, target="llvm")
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    name = part["main"].params[0].name_hint
    m.set_input(name, x)

    def run() -> np.ndarray:
        m.run()
        return m.get_output(0).numpy()

    return run


def _conv_transpose(b: Any, call: Any, ins: list[str]) -> list[str]:
    a = call.attrs
    kernel = [int(d) for d in call.args[1].checked_type.shape[2:]]
    pads = [int(p) for p in a.padding]
    return [
        b.one(
            "ConvTranspose",
            ins,
            kernel_shape=kernel,
            strides=[int(v) for v in a.strides],
            dilations=[int(v) for v in a.dilation],
            pads=pads if len(pads) == 4 else pads * 2,
            output_padding=[int(v) for v in a.output_padding],
            group=int(a.groups),
        )
    ]


@contextlib.contextmanager
def _reference_converters() -> Iterator[None]:
    """ONNX converters the onnxruntime backend does not have (transposed convolution),
    for the whole-model reference only: added after every engine is built, then removed,
    so that no placement sees them."""
    from relaykit.backends.onnxruntime.export.converters import CONVERTERS

    extra = {"nn.conv2d_transpose": (_conv_transpose, lambda call: True)}
    saved = {k: CONVERTERS[k] for k in extra if k in CONVERTERS}
    CONVERTERS.update({k: v for k, v in extra.items() if k not in saved})
    try:
        yield
    finally:
        for k in extra:
            CONVERTERS.pop(k, None)
        CONVERTERS.update(saved)


def _ort_reference(mod: tvm.IRModule, x: np.ndarray, threads: int) -> np.ndarray:
    import onnxruntime as ort

    func = mod["main"].with_attr("global_symbol", "whole")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    with _reference_converters():
        model = function_to_onnx(func)
    sess = ort.InferenceSession(model.SerializeToString(), opts)
    return sess.run(None, {"in0": x})[0]


def bench(name: str, args: argparse.Namespace, log_path: Path) -> None:
    mod = MODELS[name](args.image_size)
    shape = [int(d) for d in mod["main"].params[0].checked_type.shape]
    x = RNG.standard_normal(shape).astype("float32")
    targets = [t for t in args.targets.split(",") if t]
    t0 = time.perf_counter()
    cost = MeasuredCost(TuningLog(log_path))
    try:
        res = place(
            mod, targets, cost=cost, max_units=args.max_units, host_max_units=args.host_max_units
        )
    finally:
        cost.close()
    tune_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = MeasuredCost(TuningLog(log_path), measure_missing=False)
    place(mod, targets, cost=again, max_units=args.max_units, host_max_units=args.host_max_units)
    retune_s = time.perf_counter() - t0
    same = "" if res.chosen.startswith("measured") else f" (the same module as {res.chosen} alone)"
    print(f"built: {res.chosen}{same}; end to end while tuning (ms): ", end="")
    print(", ".join(f"{k} {v * 1e3:.2f}" for k, v in res.whole.items()))
    print(
        f"\n{name}: {len(res.graph.units)} units; tune {tune_s:.1f} s "
        f"({cost.measurements} measured, {cost.reused} reused, {len(cost.failures)} failed); "
        f"re-tune from the log {retune_s:.1f} s ({again.measurements} measured)"
    )
    engines: dict[str, Callable[[], np.ndarray]] = {"measured": _runner(res.partitioned, x)}
    compare = targets if args.compare is None else [t for t in args.compare.split(",") if t]
    for t in (t for t in compare if t != "host"):
        engines[t] = _runner(partition_for(mod, t), x)
    if args.compare is None or "host" in compare:
        engines["host"] = _runner(mod, x)
    ref = _ort_reference(mod, x, args.threads)
    times: dict[str, list[float]] = {k: [] for k in engines}
    names = list(engines)
    shuffle = np.random.default_rng(1)
    for _ in range(args.bursts):
        order = [names[k] for k in shuffle.permutation(len(names))]
        for k in order:
            time.sleep(args.gap)
            engines[k]()  # untimed: wakes the engine's threads
            for _ in range(args.burst):
                start = time.perf_counter()
                engines[k]()
                times[k].append(time.perf_counter() - start)
    base = statistics.median(times["measured"])
    head = ("engine", "median ms", "best ms", "vs measured", "rel err vs ort")
    print(f"{head[0]:<12} {head[1]:>10} {head[2]:>9} {head[3]:>12} {head[4]:>15}")
    for k in names:
        med = statistics.median(times[k])
        err = float(np.abs(engines[k]() - ref).max() / max(np.abs(ref).max(), 1e-30))
        best = min(times[k]) * 1e3
        print(f"{k:<12} {med * 1e3:>10.3f} {best:>9.3f} {med / base:>11.2f}x {err:>15.2e}")
    singles = {k: statistics.median(v) for k, v in times.items() if k != "measured"}
    if singles:
        top = min(singles, key=lambda k: singles[k])
        print(
            f"best single-backend placement: {top}; it over measured: "
            f"{singles[top] / base:.2f}x (medians)"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--targets", default="dnnl,onnxruntime,ccompiler")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--log", default=None, help="tuning log (default: a temporary file)")
    p.add_argument("--max-units", type=int, default=8)
    p.add_argument("--host-max-units", type=int, default=4)
    p.add_argument(
        "--compare",
        default=None,
        help="single-target engines to time against (default: every target and the host)",
    )
    p.add_argument("--bursts", type=int, default=6)
    p.add_argument("--burst", type=int, default=5)
    p.add_argument("--gap", type=float, default=0.2)
    args = p.parse_args(argv)
    set_num_threads(args.threads)
    log_path = Path(args.log) if args.log else Path(tempfile.mkdtemp()) / "tune.jsonl"
    for name in args.models.split(","):
        if name not in MODELS:
            print(f"unknown model {name!r}; models: {', '.join(MODELS)}", file=sys.stderr)
            return 2
        bench(name, args, log_path)
    print(f"\ntuning log: {log_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
