"""What a dnnl region costs per call, and from what size a region beats the host.

    OPENBLAS_NUM_THREADS=1 python benchmarks/dnnl_overhead.py            # 2 threads
    OPENBLAS_NUM_THREADS=1 python benchmarks/dnnl_overhead.py --threads 1

Three measurements, each in one process, in bursts with pauses, medians printed:

1. **Call overhead**: a one-step region (relu of 16 floats) called in a loop through
   the bound call an executor uses (``DnnlRegion.bind``), and the raw native call;
   what is left is ctypes, the context's argument arrays and one oneDNN execute.
2. **Tiny model**: the MLP workload (``relaykit.testing.mlp``, batch 1) run by the
   graph executor with dnnl regions and on the host path; the ratio dnnl / host.
3. **Break-even**: ``dense + bias + relu`` of growing sizes, dnnl region vs host
   kernels, to place ``min_region_macs`` (the dnnl Backend record's default).

Until the process-wide thread policy lands, set ``OPENBLAS_NUM_THREADS=1`` so that
NumPy's BLAS pool and oneDNN's OpenMP pool do not fight over the cores.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np


def _median_us(fn: Callable[[], object], calls: int, bursts: int, gap: float) -> float:
    """Median per-call time (µs) over ``bursts`` bursts of ``calls`` calls, after pauses."""
    per_call: list[float] = []
    for _ in range(bursts):
        time.sleep(gap)
        fn()  # wake the engine's threads
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        per_call.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(per_call)


def call_overhead(threads: int, bursts: int, gap: float) -> None:
    from relaykit.backends.dnnl.run.program import Node, Program
    from relaykit.backends.dnnl.run.region import DnnlRegion

    p = Program()
    x = p.add_input((1, 16))
    y = p.new_tensor((1, 16))
    p.nodes.append(Node("eltwise", [x], y, {"alg": "relu"}))
    p.outputs.append(y)
    region = DnnlRegion.from_program(p, name="tiny", num_threads=threads)
    data = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16)
    out = np.empty_like(data)
    bound = region.bind([data], [out])
    run = region._runtime.dll.rkdnnl_run
    handle, ctx, ins, ots = region._handle, bound._ctx, bound._ins, bound._ots

    def raw() -> None:
        run(handle, ctx, ins, ots)

    def host() -> None:
        np.maximum(data, 0, out=out)

    b = _median_us(bound, 2000, bursts, gap)
    r = _median_us(raw, 2000, bursts, gap)
    h = _median_us(host, 2000, bursts, gap)
    print(f"1. one-step region ({region.num_threads} thread(s)): bound call {b:.1f} µs, "
          f"native call {r:.1f} µs, NumPy relu {h:.1f} µs")  # fmt: skip


def _executor(mod, params, dnnl: bool, threads: int):
    import relaykit as tvm
    from relaykit import relay
    from relaykit.backends.dnnl import OPTIONS_KEY, partition_for_dnnl
    from relaykit.contrib import graph_executor

    if dnnl:
        with tvm.transform.PassContext(config={}):
            mod = partition_for_dnnl(mod, params)
    config = {OPTIONS_KEY: {"num_threads": threads}} if dnnl else {}
    with tvm.transform.PassContext(opt_level=3, config=config):
        lib = relay.build(mod, target="llvm", params=params)
    return graph_executor.GraphModule(lib["default"](tvm.cpu()))


def _pair(mod, params, inputs: dict[str, np.ndarray], threads: int, bursts: int, gap: float):
    """(dnnl µs, host µs, max abs difference) of one module."""
    ours = _executor(mod, params, True, threads)
    host = _executor(mod, params, False, threads)
    for m in (ours, host):
        for k, v in inputs.items():
            m.set_input(k, v)
    ours.run()
    host.run()
    diff = float(np.abs(ours.get_output(0).numpy() - host.get_output(0).numpy()).max())
    t_ours: list[float] = []
    t_host: list[float] = []
    for i in range(bursts):  # alternate who goes first
        for m, acc in ((ours, t_ours), (host, t_host))[:: 1 if i % 2 == 0 else -1]:
            acc.append(_median_us(m.run, 20, 1, gap))
    return statistics.median(t_ours), statistics.median(t_host), diff


def tiny_model(threads: int, bursts: int, gap: float) -> None:
    from relaykit.testing import mlp

    mod, params = mlp.get_workload(batch_size=1)
    x = np.random.default_rng(0).random((1, 1, 28, 28), dtype=np.float32)
    d, h, diff = _pair(mod, params, {"data": x}, threads, bursts, gap)
    print(f"2. MLP workload: dnnl {d:.1f} µs, host {h:.1f} µs, ratio {d / h:.2f} "
          f"(max |diff| {diff:.1e})")  # fmt: skip


def break_even(threads: int, bursts: int, gap: float) -> None:
    import relaykit as tvm
    from relaykit import relay

    rng = np.random.default_rng(0)
    print("3. dense+bias+relu, dnnl region vs host:")
    print(f"   {'M x K x N':>16} {'MACs':>10} {'dnnl µs':>9} {'host µs':>9} {'ratio':>6}")
    for m, k, n in ((1, 16, 16), (1, 64, 64), (4, 128, 128), (16, 256, 256), (64, 256, 256),
                    (128, 256, 1024), (128, 1024, 1024)):  # fmt: skip
        x = relay.var("x", shape=(m, k))
        w = relay.const(rng.standard_normal((n, k)).astype("float32") * 0.1)
        b = relay.const(rng.standard_normal(n).astype("float32"))
        body = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w), b))
        mod = tvm.IRModule.from_expr(relay.Function([x], body))
        data = rng.standard_normal((m, k)).astype("float32")
        d, h, _ = _pair(mod, {}, {"x": data}, threads, bursts, gap)
        print(f"   {f'{m}x{k}x{n}':>16} {m * k * n:>10} {d:>9.1f} {h:>9.1f} {d / h:>6.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bursts", type=int, default=7)
    parser.add_argument("--gap", type=float, default=0.1, help="pause before a burst (s)")
    args = parser.parse_args(argv)
    call_overhead(args.threads, args.bursts, args.gap)
    tiny_model(args.threads, args.bursts, args.gap)
    break_even(args.threads, args.bursts, args.gap)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
