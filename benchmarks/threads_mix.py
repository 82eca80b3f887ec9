"""Host BLAS steps interleaved with oneDNN regions: the thread policy against oversubscription.

    python benchmarks/threads_mix.py                  # all cores
    python benchmarks/threads_mix.py --threads 2 --layers 8 --runs 30

The model is a chain of ``--layers`` blocks; each block is a oneDNN region
(``nn.dense`` + bias + ReLU, hidden ``--hidden``, ``--tokens`` rows) followed by
host steps that use NumPy's BLAS (``nn.batch_matmul`` pinned to the host, then
``erf`` and ``add``), so every run alternates between oneDNN's OpenMP pool
and OpenBLAS' pool ``2 * layers`` times. One process, three modes, timed in
interleaved bursts with a pause before each:

- ``policy``: relaykit's thread policy (docs/threads.md): BLAS on one
  thread, big host GEMMs cut into blocks run by sleeping host workers,
  OpenMP (waiting passively) has the budget in the regions;
- ``oversubscribed``: the same executor with BLAS forced back to the whole
  budget, as before the policy: both pools spin against each other;
- ``host only``: the same model without oneDNN, BLAS at the whole budget;
- ``host policy``: the same model without oneDNN under the policy (GEMMs and
  depthwise convolutions cut into blocks on the native pool, BLAS on one thread).

It prints medians, ``oversubscribed / policy``, and the largest number of
this process' threads seen runnable at once in each mode (sampled from
``/proc/self/task``, Linux only) against the core count: under the policy it
should not exceed the budget by more than the sampler itself.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

import numpy as np


def build_model(layers: int, hidden: int, tokens: int, heads: int = 4):
    import relaykit as tvm
    from relaykit import relay

    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(tokens, hidden))
    h = x
    d = hidden // heads
    for _ in range(layers):
        w = relay.const(rng.normal(0, hidden**-0.5, (hidden, hidden)).astype("float32"))
        b = relay.const(rng.normal(0, 0.1, hidden).astype("float32"))
        y = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(h, w), b))
        y3 = relay.reshape(y, (heads, tokens, d))
        att = relay.nn.batch_matmul(y3, y3, transpose_b=True)  # (heads, tokens, tokens)
        ctx = relay.nn.batch_matmul(att, y3, transpose_b=False)  # (heads, tokens, d)
        ctx = relay.reshape(ctx, (tokens, hidden)) * relay.const(1.0 / tokens, "float32")
        h = relay.erf(ctx) + h
    return tvm.IRModule.from_expr(relay.Function([x], h))


def build(mod, threads: int, dnnl: bool):
    import relaykit as tvm
    from relaykit import relay
    from relaykit.byoc.pins import pin
    from relaykit.contrib import graph_executor

    note = "host"
    if dnnl:
        from relaykit.backends.dnnl import partition_for_dnnl

        mod = partition_for_dnnl(mod, pin=[pin("nn.batch_matmul", "erf", "add", "reshape")])
        regions = sum(1 for gv in mod.get_global_vars() if gv.name_hint != "main")
        note = f"{regions} dnnl regions"
    with tvm.transform.PassContext(opt_level=3, config={"relay.num_threads": threads}):
        lib = relay.build(mod, target="llvm")
    return graph_executor.GraphModule(lib["default"](tvm.cpu())), note


def runnable_threads(stop: threading.Event, seen: list[int]) -> None:
    """Sample how many of this process' threads are runnable (state R), until ``stop``."""
    task = "/proc/self/task"
    while not stop.is_set():
        n = 0
        for tid in os.listdir(task):
            try:
                with open(f"{task}/{tid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            n += state == "R"
        seen.append(n)
        time.sleep(0.0005)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=20, help="timed runs per mode")
    parser.add_argument("--burst", type=int, default=5)
    parser.add_argument("--gap", type=float, default=0.3, help="pause before each burst (s)")
    parser.add_argument("--threads", type=int, default=None, help="budget (default: all cores)")
    args = parser.parse_args(argv)

    from threadpoolctl import threadpool_limits

    from relaykit.runtime.threads import get_policy, resolve_num_threads

    threads = resolve_num_threads(args.threads)
    mod = build_model(args.layers, args.hidden, args.tokens)
    x = np.random.default_rng(1).standard_normal((args.tokens, args.hidden)).astype("float32")
    host, _ = build(mod, threads, dnnl=False)
    mixed, mixed_note = build(mod, threads, dnnl=True)
    policy = get_policy()

    def run(g):
        g.set_input("x", x)
        g.run()
        return g.get_output(0).numpy()

    def use_policy() -> None:
        policy.apply(force=True)

    def oversubscribe() -> None:
        threadpool_limits(threads, user_api="blas")

    modes = {
        "policy": (mixed, use_policy),
        "oversubscribed": (mixed, oversubscribe),
        "host only": (host, oversubscribe),  # no OpenMP pool: BLAS has the budget
        "host policy": (host, use_policy),  # no OpenMP pool: native pool + host workers
    }
    want = run(host)
    got = run(mixed)
    err = float(np.abs(got - want).max() / np.abs(want).max())
    times: dict[str, list[float]] = {m: [] for m in modes}
    for g, setup in modes.values():
        setup()
        run(g)
    rounds = max(1, -(-args.runs // args.burst))
    for i in range(rounds):
        order = list(modes) if i % 2 == 0 else list(reversed(modes))
        for m in order:
            g, setup = modes[m]
            setup()
            time.sleep(args.gap)
            run(g)
            for _ in range(args.burst):
                t = time.perf_counter()
                run(g)
                times[m].append(time.perf_counter() - t)
    peaks: dict[str, str] = {}
    if os.path.isdir("/proc/self/task"):
        for m, (g, setup) in modes.items():
            setup()
            time.sleep(args.gap)
            stop, seen = threading.Event(), []
            sampler = threading.Thread(target=runnable_threads, args=(stop, seen), daemon=True)
            sampler.start()
            for _ in range(args.burst):
                run(g)
            stop.set()
            sampler.join()
            peaks[m] = f"{max(seen)} (mean {statistics.mean(seen):.1f})" if seen else "-"
    use_policy()

    print(
        f"{args.layers} x [dnnl region: dense {args.tokens}x{args.hidden}x{args.hidden} + relu] "
        f"-> [host: 2 batch_matmul + erf + add]; budget {threads} threads, "
        f"{os.cpu_count()} cores; mixed model: {mixed_note}; max rel diff vs host: {err:.1e}"
    )
    print(f"{'mode':<16}{'median ms':>10}  runnable threads of this process (peak incl. sampler)")
    med = {m: 1e3 * statistics.median(t) for m, t in times.items()}
    for m in modes:
        print(f"{m:<16}{med[m]:>10.2f}  {peaks.get(m, '-')}")
    print(f"oversubscribed / policy: {med['oversubscribed'] / med['policy']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
