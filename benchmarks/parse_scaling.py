"""Parse, print and type-check times for chains of 1k, 10k and 100k operators.

Run: ``python benchmarks/parse_scaling.py [--sizes 1000,10000,100000] [--repeat 3]``.

Two programs per size:

- a chain of ``%n = op(%n-1);`` bindings (how graphs are printed);
- a chain of ``let %vN = add(%vN-1, %x);`` bindings: each let opens a scope and
  every value also uses the parameter ``%x`` bound outside all of them (the
  parser once searched the scopes one by one: 100,000 lets took minutes).

Each stage is timed ``--repeat`` times in bursts with pauses (the best time is
kept). Linear work shows as a flat time per binding and a growth ratio near 10
for 10x the bindings; quadratic work shows as a ratio near 100.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

from relaykit.ir import Function, IRModule, Let, TensorType, Var
from relaykit.op import make_call
from relaykit.text import astext, parse
from relaykit.transform.infer_type import infer_module


def chain_text(n: int) -> str:
    x = Var("x", TensorType((1, 16)))
    out = x
    for i in range(n):
        out = make_call("negative" if i % 2 else "nn.relu", [out])
    return astext(IRModule({"main": Function([x], out)}))


def let_chain(n: int) -> IRModule:
    x = Var("x", TensorType((1, 16)))
    bound, cur = [], x
    for i in range(n):
        v = Var(f"v{i}")
        bound.append((v, make_call("add", [cur, x])))
        cur = v
    body: Any = cur
    for v, value in reversed(bound):
        body = Let(v, value, body)
    return IRModule({"main": Function([x], body)})


def best_time(fn: Callable[[], Any], repeat: int, pause: float = 0.2) -> float:
    """The best of ``repeat`` runs, each after a pause and a full collection."""
    best = float("inf")
    for _ in range(repeat):
        time.sleep(pause)
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def growth(times: list[float], i: int) -> str:
    return "" if i == 0 else f"x{times[i] / times[i - 1]:.1f}"


def ops_table(sizes: list[int], repeat: int) -> None:
    print("chains of %n = op(...) bindings")
    print(f"{'ops':>8} {'chars':>10} {'parse s':>9} {'us/op':>7} {'typed s':>9} {'us/op':>7}")
    for n in sizes:
        text = chain_text(n)
        untyped = best_time(lambda text=text: parse(text, infer_types=False), repeat)
        typed = best_time(lambda text=text: parse(text), repeat)
        print(
            f"{n:>8} {len(text):>10} {untyped:>9.3f} {untyped / n * 1e6:>7.1f} "
            f"{typed:>9.3f} {typed / n * 1e6:>7.1f}"
        )


def let_table(sizes: list[int], repeat: int) -> None:
    print("\nchains of let bindings (each value also uses the outermost parameter)")
    header = f"{'lets':>8} {'chars':>10}"
    for stage in ("parse", "print", "infer", "parse+infer"):
        header += f" {stage + ' s':>13} {'growth':>7}"
    print(header)
    rows: dict[str, list[float]] = {"parse": [], "print": [], "infer": [], "parse+infer": []}
    for i, n in enumerate(sizes):
        mod = let_chain(n)
        text = astext(mod)
        typed_mod = parse(text, infer_types=False)
        infer_module(typed_mod)
        rows["parse"].append(best_time(lambda t=text: parse(t, infer_types=False), repeat))
        rows["print"].append(best_time(lambda m=typed_mod: astext(m), repeat))
        rows["infer"].append(
            best_time(lambda t=text: infer_module(parse(t, infer_types=False)), repeat)
            - rows["parse"][-1]
        )
        rows["parse+infer"].append(best_time(lambda t=text: parse(t), repeat))
        line = f"{n:>8} {len(text):>10}"
        for times in rows.values():
            line += f" {times[-1]:>13.3f} {growth(times, i):>7}"
        print(line, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["ops", "lets"], default=None)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.only != "lets":
        ops_table(sizes, args.repeat)
    if args.only != "ops":
        let_table(sizes, args.repeat)


if __name__ == "__main__":
    main()
