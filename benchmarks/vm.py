"""The Relay VM against the graph executor: dynamic batch, and per-instruction overhead.

For ResNet-18 (``relay.testing.resnet``, 224x224 unless ``--image`` says
otherwise) and the MLP, all from the same parameters, in this one process:

- ``graph``: ``relay.build`` for the static batch + the graph executor;
- ``vm static``: ``relay.vm.compile`` of the same static-batch module;
- ``vm dynamic``: ONE ``relay.vm.compile`` of the module with batch ``?``
  (``relay.Any()``), run at every batch of ``--batches``.

Timing is in interleaved bursts after pauses (benchmarks/_bench.py). For each
model and batch it prints each median, the VM/graph ratios (issue 12 asks at
most 1.10 for the dynamic VM on ResNet-18 batch 1), the VM's instruction count
and the largest relative difference of the outputs. A chain of tiny operators
(static and dynamic shape) and a 10,000-deep recursion show the dispatch cost
per instruction.

    python benchmarks/vm.py
    python benchmarks/vm.py --models resnet18 --batches 1 --runs 20 --image 112
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from _bench import Engine, rel_error, time_engines

import relaykit as tvm
from relaykit import relay
from relaykit.contrib import graph_executor
from relaykit.runtime.vm import VirtualMachine
from relaykit.testing import mlp, resnet


def workload(name: str, batch: Any, image: int) -> tuple[Any, dict[str, Any], tuple[int, ...]]:
    """The module (batch ``batch``, an int or ``relay.Any()``), its params, the image shape."""
    if name == "mlp":
        mod, params = mlp.get_workload(batch_size=batch)
        return mod, params, (1, 28, 28)
    mod, params = resnet.get_workload(batch, 1000, num_layers=18, image_shape=(3, image, image))
    return mod, params, (3, image, image)


def vm_engine(name: str, mod: Any, params: dict[str, Any], data: np.ndarray) -> Engine:
    t = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm", params=params)
    vm = VirtualMachine(exe, tvm.cpu())
    build = time.perf_counter() - t
    count = sum(len(f.code) for f in exe.mod.functions)
    return Engine(name, lambda: [vm.invoke("main", data).numpy()], build, f"{count} instructions")


def graph_engine(mod: Any, params: dict[str, Any], data: np.ndarray) -> Engine:
    t = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    build = time.perf_counter() - t

    def run() -> list[np.ndarray]:
        gmod.set_input("data", data)
        gmod.run()
        return [gmod.get_output(0).numpy()]

    return Engine("graph", run, build)


def bench_model(name: str, batches: list[int], args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    dyn_mod, params, image = workload(name, relay.Any(), args.image)
    t = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        dyn_exe = relay.vm.compile(dyn_mod, target="llvm", params=params)
    dyn_vm = VirtualMachine(dyn_exe, tvm.cpu())
    dyn_build = time.perf_counter() - t
    count = sum(len(f.code) for f in dyn_exe.mod.functions)
    print(
        f"{name}: one dynamic-batch VM executable, built in {dyn_build:.1f} s, {count} instructions"
    )
    for batch in batches:
        mod, _, _ = workload(name, batch, args.image)
        data = rng.standard_normal((batch, *image)).astype("float32")
        graph = graph_engine(mod, params, data)
        static = vm_engine("vm static", mod, params, data)
        dynamic = Engine("vm dynamic", lambda d=data: [dyn_vm.invoke("main", d).numpy()], dyn_build)
        ref = graph.run()
        err = max(rel_error(e.run(), ref) for e in (static, dynamic))
        engines = [graph, static, dynamic]
        time_engines(engines, args.runs, args.burst, args.gap)
        g = graph
        print(
            f"  batch {batch}: graph {g.median_ms:.2f} ms | vm static {static.median_ms:.2f} ms "
            f"({static.note}) | vm dynamic {dynamic.median_ms:.2f} ms | "
            f"static/graph {static.median_ms / g.median_ms:.3f}, "
            f"dynamic/graph {dynamic.median_ms / g.median_ms:.3f} "
            f"(best runs {dynamic.min_ms / g.min_ms:.3f}) | max rel diff {err:.1e}"
        )


def dispatch(n: int = 2000) -> None:
    """Per-instruction cost: chains of ``n`` tiny adds (static and dynamic shape), and a
    recursion of 10,000 calls."""
    data = np.zeros(4, "float32")
    engines = []
    x = relay.var("x", shape=(4,))
    y = x
    for _ in range(n):
        y = relay.add(y, relay.const(1.0))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    gmod = graph_executor.GraphModule(relay.build(mod, target="llvm")["default"](tvm.cpu()))

    def run_graph() -> list[np.ndarray]:
        gmod.set_input("x", data)
        gmod.run()
        return [gmod.get_output(0).numpy()]

    engines.append(Engine("graph", run_graph))
    vm = VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    engines.append(Engine("vm", lambda: [vm.invoke("main", data).numpy()]))
    xd = relay.var("x", shape=(relay.Any(),))
    yd = xd
    for _ in range(n):
        yd = relay.add(yd, relay.const(1.0))
    dmod = tvm.IRModule.from_expr(relay.Function([xd], yd))
    dvm = VirtualMachine(relay.vm.compile(dmod, target="llvm"), tvm.cpu())
    engines.append(Engine("vm dynamic", lambda: [dvm.invoke("main", data).numpy()]))
    for e in engines[1:]:
        assert rel_error(e.run(), engines[0].run()) == 0
    time_engines(engines, runs=10, burst=5, gap=0.05)
    g, v, d = (e.median_ms * 1e3 / n for e in engines)
    print(
        f"chain of {n} adds: graph {g:.2f} us/op, vm {v:.2f} us/op ({v / g:.2f}x), "
        f"vm dynamic shape {d:.2f} us/op ({d / g:.2f}x)"
    )

    total = relay.GlobalVar("total")
    k = relay.var("k", shape=(), dtype="int32")
    rec = tvm.IRModule()
    rec[total] = relay.Function(
        [k],
        relay.If(relay.equal(k, relay.const(0)), relay.const(0), k + total(k - relay.const(1))),
        relay.TensorType((), "int32"),
    )
    rec["main"] = relay.Function([k], total(k))
    rvm = VirtualMachine(relay.vm.compile(rec, target="llvm"), tvm.cpu())
    t = time.perf_counter()
    out = rvm.invoke("main", np.array(10_000, "int32"))
    dt = time.perf_counter() - t
    assert int(out.numpy()) == sum(range(10_001))
    print(f"recursion 10,000 deep: {dt * 1e3:.1f} ms ({dt / 10_000 * 1e6:.1f} us per call)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet18,mlp")
    ap.add_argument("--batches", default="1,4", help="comma-separated batch sizes")
    ap.add_argument("--image", type=int, default=224)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--burst", type=int, default=5)
    ap.add_argument("--gap", type=float, default=0.2)
    ap.add_argument("--no-dispatch", action="store_true", help="skip the dispatch benchmark")
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    for name in args.models.split(","):
        bench_model(name, batches, args)
    if not args.no_dispatch:
        dispatch()


if __name__ == "__main__":
    main()
