"""The Relay VM against the graph executor: per-instruction overhead on real models.

For ResNet-18 (``relay.testing.resnet``, batch 1, 224x224 unless ``--image``
says otherwise) and the MLP, both compiled from the same module with the same
parameters, in this one process: ``relay.build`` + the graph executor, and
``relay.vm.compile`` + the VM. Timing is in interleaved bursts after pauses
(benchmarks/_bench.py). It prints each median, the VM/graph ratio (issue 12
asks at most 1.10 on ResNet-18 batch 1), the VM's instruction count, and the
largest relative difference of the outputs. A chain of tiny operators and a
10,000-deep recursion show the dispatch cost per instruction.

    python benchmarks/vm.py
    python benchmarks/vm.py --models resnet18 --runs 20 --image 112
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from _bench import Engine, rel_error, time_engines  # noqa: E402

import relaykit as tvm  # noqa: E402
from relaykit import relay  # noqa: E402
from relaykit.contrib import graph_executor  # noqa: E402
from relaykit.runtime.vm import VirtualMachine  # noqa: E402
from relaykit.testing import mlp, resnet  # noqa: E402


def workload(name: str, image: int) -> tuple[Any, dict[str, Any], tuple[int, ...]]:
    if name == "mlp":
        mod, params = mlp.get_workload(batch_size=1)
        return mod, params, (1, 1, 28, 28)
    mod, params = resnet.get_workload(1, 1000, num_layers=18, image_shape=(3, image, image))
    return mod, params, (1, 3, image, image)


def engines_for(mod: Any, params: dict[str, Any], data: np.ndarray) -> tuple[list[Engine], int]:
    t = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    graph_build = time.perf_counter() - t

    def run_graph() -> list[np.ndarray]:
        gmod.set_input("data", data)
        gmod.run()
        return [gmod.get_output(0).numpy()]

    t = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm", params=params)
    vm = VirtualMachine(exe, tvm.cpu())
    vm_build = time.perf_counter() - t

    def run_vm() -> list[np.ndarray]:
        return [vm.invoke("main", data).numpy()]

    count = sum(len(f.code) for f in exe.mod.functions)
    return [
        Engine("graph executor", run_graph, graph_build),
        Engine("vm", run_vm, vm_build),
    ], count


def dispatch(n: int = 2000) -> None:
    """Per-instruction cost: a chain of ``n`` tiny adds, and a recursion of 10,000 calls."""
    x = relay.var("x", shape=(4,))
    y = x
    for _ in range(n):
        y = relay.add(y, relay.const(1.0))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    lib = relay.build(mod, target="llvm")
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    vm = VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    data = np.zeros(4, "float32")

    def run_graph() -> list[np.ndarray]:
        gmod.set_input("x", data)
        gmod.run()
        return [gmod.get_output(0).numpy()]

    engines = [Engine("graph", run_graph), Engine("vm", lambda: [vm.invoke("main", data).numpy()])]
    time_engines(engines, runs=10, burst=5, gap=0.05)
    g, v = (e.median_ms * 1e3 / n for e in engines)
    print(f"chain of {n} adds: graph {g:.2f} us/op, vm {v:.2f} us/op, ratio {v / g:.2f}")

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
    ap.add_argument("--image", type=int, default=224)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--burst", type=int, default=5)
    ap.add_argument("--gap", type=float, default=0.2)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    for name in args.models.split(","):
        mod, params, shape = workload(name, args.image)
        data = rng.standard_normal(shape).astype("float32")
        engines, count = engines_for(mod, params, data)
        err = rel_error(engines[1].run(), engines[0].run())
        time_engines(engines, args.runs, args.burst, args.gap)
        g, v = engines
        print(
            f"{name}: graph {g.median_ms:.2f} ms (build {g.build_s:.1f} s), "
            f"vm {v.median_ms:.2f} ms (build {v.build_s:.1f} s, {count} instructions), "
            f"vm/graph {v.median_ms / g.median_ms:.3f} (best runs {v.min_ms / g.min_ms:.3f}), "
            f"max rel diff {err:.1e}"
        )
    dispatch()


if __name__ == "__main__":
    main()
