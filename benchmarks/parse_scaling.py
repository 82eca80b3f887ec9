"""Parse time per operator for printed chains of 1k, 10k and 100k operators.

Run: ``python benchmarks/parse_scaling.py``. Linear parsing shows as a flat
time per op; the chain is printed as flat ``%n = ...;`` bindings.
"""

from __future__ import annotations

import time

from relaykit.ir import Function, IRModule, TensorType, Var
from relaykit.op import make_call
from relaykit.text import astext, parse


def chain_text(n: int) -> str:
    x = Var("x", TensorType((1, 16)))
    out = x
    for i in range(n):
        out = make_call("negative" if i % 2 else "nn.relu", [out])
    return astext(IRModule({"main": Function([x], out)}))


def main() -> None:
    print(f"{'ops':>8} {'chars':>10} {'parse s':>9} {'us/op':>8} {'typed s':>9} {'us/op':>8}")
    for n in (1_000, 10_000, 100_000):
        text = chain_text(n)
        start = time.perf_counter()
        parse(text, infer_types=False)
        untyped = time.perf_counter() - start
        start = time.perf_counter()
        parse(text)
        typed = time.perf_counter() - start
        print(
            f"{n:>8} {len(text):>10} {untyped:>9.3f} {untyped / n * 1e6:>8.1f} "
            f"{typed:>9.3f} {typed / n * 1e6:>8.1f}"
        )


if __name__ == "__main__":
    main()
