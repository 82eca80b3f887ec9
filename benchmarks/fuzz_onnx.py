"""Fuzz the ONNX importer: only relaykit errors may escape.

Mutants of real models -- ONNX's own node tests (``onnx.backend.test``, built
in memory) and the light models shipped with onnx -- are imported with
``from_onnx``; those with small inputs are also built and run on the graph
executor. Each mutant applies one to three mutations at the protobuf level
(dims, attributes, element types, input/output names, initializer data,
opsets, op types, node removal) or flips bits of the serialized model.

Every mutant runs in a worker process with an address-space limit and a time
limit, so a mutant that allocates gigabytes or loops forever is reported (as a
``MemoryError`` or a timeout) instead of stopping the run. Exceptions that are
not :class:`relaykit.errors.RelayKitError` are printed grouped by the code site
that raised them (the innermost relaykit frame, and the innermost frame).

Run: python benchmarks/fuzz_onnx.py [--n 40000] [--seed 0] [--workers 2]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import multiprocessing as mp
import os
import random
import resource
import signal
import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper

from relaykit.errors import RelayKitError

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")

#: numbers that break naive code: zero, negatives, int32/int64 edges, huge values
NASTY_INTS = [0, -1, -2, 1, 2, 3, 7, 255, 2**15, 2**31 - 1, 2**31, 2**32, 2**40, 2**62,
              2**63 - 1, -(2**31), -(2**63)]  # fmt: skip
NASTY_FLOATS = [0.0, -0.0, -1.0, 1e-30, 1e30, float("inf"), float("-inf"), float("nan"), 0.5]
NASTY_STRINGS = [b"", b"\xff\xfe", b"NOTSET", b"SAME_UPPER", b"VALID", b"linear", b"x" * 40]


@dataclass
class Seed:
    name: str
    model: onnx.ModelProto
    inputs: list[np.ndarray] | None  # the test's inputs, when known (node tests)


def load_seeds(light: bool = True) -> list[Seed]:
    from onnx.backend.test.runner import _normalize_tensor

    from relaykit.frontend.onnx.backend import node_test_cases

    seeds = []
    for case in node_test_cases():
        ins = None
        if case.data_sets:
            ins = [_normalize_tensor(t) for t in case.data_sets[0][0]]
        seeds.append(Seed(case.name, case.model, ins))
    if light and os.path.isdir(LIGHT):
        for f in sorted(os.listdir(LIGHT)):
            if f.endswith(".onnx"):
                seeds.append(Seed(f, onnx.load(os.path.join(LIGHT, f)), None))
    return seeds


# -- mutations -----------------------------------------------------------------------------


def _graphs(g: Any) -> list[Any]:
    """``g`` and its subgraphs (control-flow bodies)."""
    out, stack = [], [g]
    while stack:
        x = stack.pop()
        out.append(x)
        for n in x.node:
            for a in n.attribute:
                if a.type == AttributeProto.GRAPH:
                    stack.append(a.g)
                stack.extend(a.graphs)
    return out


def _nasty_int(rng: random.Random, old: int) -> int:
    r = rng.random()
    if r < 0.5:
        return rng.choice(NASTY_INTS)
    if r < 0.8:
        return old ^ (1 << rng.randrange(63)) if old >= 0 else -old
    return old + rng.choice([-1, 1, -old - 1, old])


def _clamp64(v: int) -> int:
    return max(-(2**63), min(2**63 - 1, v))


def mut_dim(m: Any, rng: random.Random) -> bool:
    g = rng.choice(_graphs(m.graph))
    vis = list(g.input) + list(g.output) + list(g.value_info)
    dims = [
        d for vi in vis if vi.type.HasField("tensor_type") for d in vi.type.tensor_type.shape.dim
    ]
    inits = [t for t in g.initializer if t.dims]
    if dims and (not inits or rng.random() < 0.6):
        d = rng.choice(dims)
        if rng.random() < 0.1:
            d.dim_param = "N"
        else:
            d.dim_value = _clamp64(_nasty_int(rng, d.dim_value))
        return True
    if inits:
        t = rng.choice(inits)
        k = rng.randrange(len(t.dims))
        t.dims[k] = _clamp64(_nasty_int(rng, t.dims[k]))
        return True
    return False


def _mutate_tensor(t: Any, rng: random.Random) -> None:
    r = rng.random()
    if r < 0.3 and t.dims:
        k = rng.randrange(len(t.dims))
        t.dims[k] = _clamp64(_nasty_int(rng, t.dims[k]))
    elif r < 0.5:
        t.data_type = rng.randrange(0, 27)
    elif t.raw_data and r < 0.8:
        raw = bytearray(t.raw_data)
        if rng.random() < 0.5 and raw:
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        else:
            raw = raw[: rng.randrange(len(raw) + 1)]
        t.raw_data = bytes(raw)
    elif t.int64_data:
        k = rng.randrange(len(t.int64_data))
        t.int64_data[k] = _clamp64(_nasty_int(rng, t.int64_data[k]))
    elif t.raw_data and t.data_type == TensorProto.INT64:
        arr = np.frombuffer(t.raw_data, "<i8").copy()
        if arr.size:
            arr[rng.randrange(arr.size)] = _clamp64(_nasty_int(rng, 0))
            t.raw_data = arr.tobytes()
    else:
        t.float_data.append(rng.choice(NASTY_FLOATS))


def mut_attribute(m: Any, rng: random.Random) -> bool:  # noqa: PLR0912 - a branch per kind
    nodes = [n for g in _graphs(m.graph) for n in g.node if n.attribute]
    if not nodes:
        return False
    a = rng.choice(rng.choice(nodes).attribute)
    r = rng.random()
    if r < 0.08:
        a.type = rng.randrange(0, 15)
    elif a.type == AttributeProto.INT:
        a.i = _clamp64(_nasty_int(rng, a.i))
    elif a.type == AttributeProto.INTS:
        if a.ints and rng.random() < 0.7:
            k = rng.randrange(len(a.ints))
            a.ints[k] = _clamp64(_nasty_int(rng, a.ints[k]))
        elif a.ints and rng.random() < 0.5:
            del a.ints[rng.randrange(len(a.ints))]
        else:
            a.ints.append(rng.choice(NASTY_INTS))
    elif a.type == AttributeProto.FLOAT:
        a.f = rng.choice(NASTY_FLOATS)
    elif a.type == AttributeProto.FLOATS:
        if a.floats:
            a.floats[rng.randrange(len(a.floats))] = rng.choice(NASTY_FLOATS)
        else:
            a.floats.append(rng.choice(NASTY_FLOATS))
    elif a.type == AttributeProto.STRING:
        a.s = rng.choice(NASTY_STRINGS)
    elif a.type == AttributeProto.STRINGS and a.strings:
        a.strings[rng.randrange(len(a.strings))] = rng.choice(NASTY_STRINGS)
    elif a.type == AttributeProto.TENSOR:
        _mutate_tensor(a.t, rng)
    elif a.type == AttributeProto.GRAPH:
        sub = onnx.ModelProto()
        sub.graph.CopyFrom(a.g)
        rng.choice(GRAPH_MUTATIONS)(sub, rng)
        a.g.CopyFrom(sub.graph)
    else:
        a.name = rng.choice(["axis", "axes", "perm", "shape", "to", "value", "bogus"])
    return True


def mut_attr_add_drop(m: Any, rng: random.Random) -> bool:
    nodes = [n for g in _graphs(m.graph) for n in g.node]
    if not nodes:
        return False
    n = rng.choice(nodes)
    if n.attribute and rng.random() < 0.5:
        del n.attribute[rng.randrange(len(n.attribute))]
        return True
    name = rng.choice(["axis", "axes", "perm", "to", "keepdims", "group", "mode", "alpha"])
    value: Any = rng.choice(
        [rng.choice(NASTY_INTS), [rng.choice(NASTY_INTS)], rng.choice(NASTY_FLOATS), "x"]
    )
    n.attribute.append(helper.make_attribute(name, value))
    return True


def mut_dtype(m: Any, rng: random.Random) -> bool:
    g = rng.choice(_graphs(m.graph))
    choices = [vi.type.tensor_type for vi in list(g.input) + list(g.output)
               if vi.type.HasField("tensor_type")]  # fmt: skip
    choices += list(g.initializer)
    if not choices:
        return False
    c = rng.choice(choices)
    if isinstance(c, TensorProto):
        c.data_type = rng.randrange(0, 27)
    else:
        c.elem_type = rng.randrange(0, 27)
    return True


def mut_input_name(m: Any, rng: random.Random) -> bool:
    g = rng.choice(_graphs(m.graph))
    if not g.node:
        return False
    names = [vi.name for vi in g.input] + [t.name for t in g.initializer]
    names += [o for n in g.node for o in n.output]
    n = rng.choice(g.node)
    r = rng.random()
    if n.input and r < 0.5:
        n.input[rng.randrange(len(n.input))] = rng.choice([*names, "", "nowhere"])
    elif n.input and r < 0.7:
        del n.input[rng.randrange(len(n.input))]
    elif r < 0.85:
        n.input.append(rng.choice([*names, ""]))
    elif n.output:
        n.output[rng.randrange(len(n.output))] = rng.choice([*names, "", "fresh"])
    else:
        return False
    return True


def mut_init_data(m: Any, rng: random.Random) -> bool:
    g = rng.choice(_graphs(m.graph))
    tensors = list(g.initializer)
    tensors += [a.t for n in g.node for a in n.attribute if a.type == AttributeProto.TENSOR]
    if not tensors:
        return False
    _mutate_tensor(rng.choice(tensors), rng)
    return True


def mut_opset(m: Any, rng: random.Random) -> bool:
    if not m.opset_import:
        return False
    o = rng.choice(m.opset_import)
    o.version = rng.choice([1, 6, 7, 9, 11, 13, 17, 21, 23, 24, 99, o.version - 1, o.version + 1])
    return True


def mut_op_type(m: Any, rng: random.Random) -> bool:
    nodes = [n for g in _graphs(m.graph) for n in g.node]
    if not nodes:
        return False
    rng.choice(nodes).op_type = rng.choice(OP_TYPES)
    return True


def mut_node(m: Any, rng: random.Random) -> bool:
    g = rng.choice(_graphs(m.graph))
    if not g.node:
        return False
    k = rng.randrange(len(g.node))
    if rng.random() < 0.5:
        del g.node[k]
    else:
        g.node.append(copy.deepcopy(g.node[k]))
    return True


GRAPH_MUTATIONS = [mut_dim, mut_attribute, mut_dtype, mut_input_name, mut_init_data]
MUTATIONS = [
    (mut_dim, 4),
    (mut_attribute, 5),
    (mut_attr_add_drop, 1),
    (mut_dtype, 2),
    (mut_input_name, 2),
    (mut_init_data, 3),
    (mut_opset, 1),
    (mut_op_type, 1),
    (mut_node, 1),
]
OP_TYPES: list[str] = []


def make_mutant(seeds: list[Seed], seed: int, i: int) -> tuple[Seed, Any, str]:
    """Mutant ``i``: its seed model, the mutant (a ModelProto, or bytes for bit flips)
    and the names of the mutations applied."""
    rng = random.Random(seed * 1_000_003 + i)
    s = seeds[rng.randrange(len(seeds))]
    if rng.random() < 0.12:
        raw = bytearray(s.model.SerializeToString())
        for _ in range(rng.randint(1, 3)):
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        return s, bytes(raw), "bitflip"
    m = copy.deepcopy(s.model)
    names = []
    funcs, weights = zip(*MUTATIONS, strict=True)
    for _ in range(rng.choice([1, 1, 2, 3])):
        f = rng.choices(funcs, weights)[0]
        if f(m, rng):
            names.append(f.__name__[4:])
    return s, m, "+".join(names) or "none"


# -- running one mutant --------------------------------------------------------------------


class Timeout(BaseException):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Timeout


CHEAP_ELEMENTS = 100_000


def _cheap_inputs(mod: Any, seed: Seed, rng: np.random.Generator) -> list[np.ndarray] | None:
    """Inputs for ``main`` when they are small: the seed's own when they fit, else random."""
    from relaykit.ir.expr import checked_type_or_none
    from relaykit.ir.functor import post_order
    from relaykit.ir.types import TensorType

    params = mod["main"].params
    tys = [p.type_annotation for p in params]
    if not all(isinstance(t, TensorType) for t in tys):
        return None
    if sum(t.size for t in tys) > CHEAP_ELEMENTS or any(
        d > CHEAP_ELEMENTS for t in tys for d in t.shape
    ):
        return None
    # every value the program computes must be small too (running allocates them all)
    for node in post_order(mod["main"]):
        ty = checked_type_or_none(node)
        if isinstance(ty, TensorType) and ty.size > CHEAP_ELEMENTS:
            return None
    own = seed.inputs or []
    out = []
    for k, t in enumerate(tys):
        if k < len(own) and isinstance(own[k], np.ndarray) and own[k].shape == t.shape \
                and own[k].dtype.name == t.dtype:  # fmt: skip
            out.append(own[k])
        elif t.dtype.startswith(("float", "bfloat")):
            out.append(rng.standard_normal(t.shape).astype(t.dtype))
        elif t.dtype == "bool":
            out.append(rng.random(t.shape) < 0.5)
        else:
            out.append(rng.integers(0, 3, t.shape).astype(t.dtype))
    return out


def run_one(seeds: list[Seed], seed: int, i: int, build: bool) -> tuple[str, str, str, str]:
    """``(status, exception type, site, message)``; status is ``ok`` (imported), ``ran``
    (imported, built and run), ``typed`` (a relaykit error), ``untyped`` or ``timeout``."""
    from relaykit import relay
    from relaykit.frontend import from_onnx

    s, mutant, how = make_mutant(seeds, seed, i)
    stage = "import"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod, _ = from_onnx(mutant)
            if build and not s.name.startswith("light_"):
                args = _cheap_inputs(mod, s, np.random.default_rng(i))
                if args is not None:
                    stage = "build"
                    fn = relay.create_executor("graph", mod=mod).evaluate()
                    stage = "run"
                    fn(*args)
                    return "ran", "", "", ""
        return "ok", "", "", ""
    except RelayKitError:
        return "typed", "", "", ""
    except Timeout:
        return "timeout", "Timeout", f"{stage} {s.name}", how
    except BaseException as err:  # the findings
        if isinstance(err, KeyboardInterrupt):
            raise
        tb = traceback.extract_tb(err.__traceback__)
        ours = [f for f in tb if "relaykit" in f.filename]

        def where(f: Any) -> str:
            path = f.filename.split("src/", 1)[-1] if "src/" in f.filename else f.filename
            return f"{path}:{f.lineno} ({f.name})"

        site = where(ours[-1]) if ours else "?"
        if tb and tb[-1] is not (ours[-1] if ours else None):
            site += f" -> {where(tb[-1])}"
        msg = f"{stage} of {s.name} [{how}]: {str(err)[:160]}"
        return "untyped", type(err).__name__, site, msg


def _worker(conn: Any, seeds: list[Seed], seed: int, mem: int, timeout: float, build: bool) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    limit = _vm_bytes() + mem
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _alarm)
    while True:
        i = conn.recv()
        if i is None:
            return
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            res = run_one(seeds, seed, i, build)
        except Timeout:
            res = ("timeout", "Timeout", "?", f"mutant {i}")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        conn.send((i, *res))


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


class Pool:
    """Worker processes fed one mutant index at a time; a worker that dies or stops
    answering (a mutant stuck in native code) is replaced and the mutant reported."""

    def __init__(self, n: int, args: tuple, hard_timeout: float) -> None:
        self.ctx = mp.get_context("fork")
        self.args = args
        self.hard = hard_timeout
        self.workers = [self._start() for _ in range(n)]

    def _start(self) -> list[Any]:
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=_worker, args=(child, *self.args), daemon=True)
        p.start()
        return [p, parent, None, 0.0]  # process, pipe, current index, started

    def run(self, indices: list[int]) -> Any:
        todo = collections.deque(indices)
        busy = 0
        while todo or busy:
            for w in self.workers:
                if w[2] is None and todo:
                    w[2], w[3] = todo.popleft(), time.monotonic()
                    w[1].send(w[2])
                    busy += 1
            conns = [w[1] for w in self.workers if w[2] is not None]
            ready = mp.connection.wait(conns, timeout=1.0)
            for w in self.workers:
                if w[2] is None:
                    continue
                if w[1] in ready:
                    try:
                        res = w[1].recv()
                    except EOFError:
                        res = (w[2], "crash", "Crash", "worker died", f"mutant {w[2]}")
                    w[2] = None
                    busy -= 1
                    yield res
                    if res[1] == "crash":
                        self._replace(w)
                elif time.monotonic() - w[3] > self.hard or not w[0].is_alive():
                    i = w[2]
                    self._replace(w)
                    busy -= 1
                    yield (i, "timeout", "Hang", "stuck in native code", f"mutant {i}")

    def _replace(self, w: list[Any]) -> None:
        with contextlib.suppress(Exception):
            w[0].kill()
            w[0].join(1)
        w[:] = self._start()

    def close(self) -> None:
        for w in self.workers:
            with contextlib.suppress(Exception):
                w[1].send(None)
                w[0].join(2)
                w[0].kill()


def fuzz(
    seeds: list[Seed],
    indices: range,
    seed: int = 0,
    workers: int = 2,
    mem: int = 2**30,
    timeout: float = 20.0,
    build: bool = True,
    progress: int = 0,
) -> tuple[collections.Counter[str], dict[tuple[str, str], list[str]]]:
    """Run mutants ``indices``: the count of each status, and the findings (untyped
    exceptions, timeouts, crashes) by ``(exception type, code site)``."""
    OP_TYPES[:] = sorted({n.op_type for s in seeds for n in s.model.graph.node})
    pool = Pool(workers, (seeds, seed, mem, timeout, build), hard_timeout=timeout * 3 + 10)
    counts: collections.Counter[str] = collections.Counter()
    sites: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    t0 = time.perf_counter()
    try:
        for i, status, etype, site, msg in pool.run(list(indices)):
            counts[status] += 1
            if status not in ("ok", "ran", "typed"):
                sites[(etype, site)].append(f"#{i} {msg}")
            done = sum(counts.values())
            if progress and done % progress == 0:
                bad = sum(len(v) for v in sites.values())
                print(f"  {done} mutants, {bad} findings, {time.perf_counter() - t0:.0f} s",
                      flush=True)  # fmt: skip
    finally:
        pool.close()
    return counts, dict(sites)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=40_000, help="number of mutants")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first mutant index")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--mem-mib", type=int, default=1024, help="address space per mutant")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per mutant")
    ap.add_argument("--no-build", action="store_true", help="import only")
    ap.add_argument("--examples", type=int, default=2, help="examples printed per site")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    seeds = load_seeds()
    print(f"{len(seeds)} seed models; {args.n} mutants from seed {args.seed}", flush=True)
    counts, sites = fuzz(
        seeds,
        range(args.start, args.start + args.n),
        args.seed,
        args.workers,
        args.mem_mib * 2**20,
        args.timeout,
        not args.no_build,
        progress=2000,
    )
    done = sum(counts.values())
    bad = sum(len(v) for v in sites.values())
    print(f"\n{done} mutants in {time.perf_counter() - t0:.0f} s: " +
          ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))  # fmt: skip
    print(f"untyped exceptions, timeouts and crashes: {bad} ({100 * bad / max(done, 1):.2f}%) "
          f"at {len(sites)} code sites")  # fmt: skip
    for (etype, site), examples in sorted(sites.items(), key=lambda kv: -len(kv[1])):
        print(f"\n{len(examples):5d}  {etype} at {site}")
        for e in examples[: args.examples]:
            print(f"         {e}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
