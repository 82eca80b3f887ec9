"""How printing, type inference, interpretation and structural hashing scale with
graph size: chains of 1k, 10k and 100k operators.

Prints the time per op at each size and the growth exponent between sizes
(1.0 = linear). Run: python benchmarks/ir_scaling.py
"""

from __future__ import annotations

import math
import time

import numpy as np

from relaykit import op
from relaykit.backend.interpreter import create_executor
from relaykit.ir import Function, IRModule, TensorType, Var, structural_hash
from relaykit.transform import infer_type


def chain(n: int) -> Function:
    x = Var("x", TensorType((1, 8)))
    y = x
    for i in range(n):
        y = op.nn.relu(y) if i % 2 else op.add(y, y)
    return Function([x], y)


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    sizes = [1_000, 10_000, 100_000]
    rows: dict[str, list[float]] = {}
    for n in sizes:
        f = chain(n)
        rows.setdefault("build", []).append(timed(lambda: chain(n)))
        rows.setdefault("infer_type", []).append(timed(lambda: infer_type(f)))
        rows.setdefault("print", []).append(timed(lambda: f.astext()))
        rows.setdefault("structural_hash", []).append(timed(lambda: structural_hash(f)))
        data = np.zeros((1, 8), "float32")
        run = create_executor("debug", mod=IRModule()).evaluate(f)
        rows.setdefault("interpret", []).append(timed(lambda: run(data)))
    print(f"{'stage':<16}" + "".join(f"{n:>12,} ops" for n in sizes) + "   exponent 10k->100k")
    for stage, times in rows.items():
        per_op = "".join(f"{t / n * 1e6:>11.2f}us" for t, n in zip(times, sizes))
        exp = math.log(times[2] / times[1]) / math.log(sizes[2] / sizes[1])
        print(f"{stage:<16}{per_op}   {exp:.2f}")


if __name__ == "__main__":
    main()
