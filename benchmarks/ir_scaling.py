"""How printing, type inference, interpretation and structural hashing scale with
graph size: chains of 1k, 10k and 100k operators.

Prints the time per op at each size and the growth exponent between sizes
(1.0 = linear). Run: python benchmarks/ir_scaling.py
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from relaykit import op
from relaykit.execution.interpreter import create_executor
from relaykit.ir import (
    ExprMutator,
    Function,
    IRModule,
    TensorType,
    Var,
    post_order,
    structural_equal,
    structural_hash,
)
from relaykit.transform import infer_type


def chain(n: int) -> Function:
    x = Var("x", TensorType((1, 8)))
    y = x
    for i in range(n):
        y = op.nn.relu(y) if i % 2 else op.add(y, y)
    return Function([x], y)


class _Rename(ExprMutator):
    """Rebuilds every node above the parameter (a mutator that changes a leaf)."""

    def visit_var(self, var: Var) -> Var:
        return Var(var.name_hint + "_", var.type_annotation)


def _count(f: Function) -> int:
    return sum(1 for _ in post_order(f))


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    sizes = [1_000, 10_000, 100_000]
    rows: dict[str, list[float]] = {}
    for n in sizes:
        f, g = chain(n), chain(n)
        data = np.zeros((1, 8), "float32")
        run = create_executor("debug", mod=IRModule()).evaluate(f)
        stages: dict[str, Callable[[], object]] = {
            "build": partial(chain, n),
            "infer_type": partial(infer_type, f),
            "print": f.astext,
            "structural_hash": partial(structural_hash, f),
            "structural_eq": partial(structural_equal, f, g),
            "post_order": partial(_count, f),
            "mutator": partial(_Rename().visit, f),
            "interpret": partial(run, data),
        }
        for stage, fn in stages.items():
            rows.setdefault(stage, []).append(timed(fn))
    print(f"{'stage':<16}" + "".join(f"{n:>12,} ops" for n in sizes) + "   exponent 10k->100k")
    for stage, times in rows.items():
        per_op = "".join(f"{t / n * 1e6:>11.2f}us" for t, n in zip(times, sizes, strict=True))
        exp = math.log(times[2] / times[1]) / math.log(sizes[2] / sizes[1])
        print(f"{stage:<16}{per_op}   {exp:.2f}")


if __name__ == "__main__":
    main()
