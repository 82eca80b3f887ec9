"""Mutational fuzzer for the Relay text parser: only relaykit errors may escape.

Run: ``python benchmarks/fuzz_parser.py [N] [--seed S] [--show K]`` (N defaults to
20,000). Every input is a real Relay text (the golden files, printed workloads,
a program using every node kind, metadata and attributes) mutated one to three
times: byte flips, byte insertions and deletions, token deletions, duplications,
swaps and replacements, number mutations (huge, negative, overflowing,
non-finite), absurd shapes, metadata edits and deep nesting. Each input goes
through ``parse`` (with type inference) and ``parse_expr``. The script prints
how many inputs raised an exception that is not a :class:`relaykit.errors.RelayKitError`,
grouped by the code site that raised it (the innermost relaykit frame), with
one example input per site, and the slowest inputs.

The seed is fixed, so a run is reproducible; ``tests/text/test_fuzz.py`` runs
a few hundred inputs of the same fuzzer as a regular test.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from relaykit.errors import RelayKitError
from relaykit.ir import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
)
from relaykit.ir.op import default_registry
from relaykit.op import make_call
from relaykit.testing import mlp, mobilenet, resnet
from relaykit.text import astext, parse, parse_expr
from relaykit.transform.infer_type import infer_module

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "text" / "golden"

_TOKEN = re.compile(
    r"%[A-Za-z0-9_.]+|@[A-Za-z0-9_.]+|-?[0-9][A-Za-z0-9_.]*|\"(?:[^\"\\\n]|\\.)*\""
    r"|[A-Za-z_][A-Za-z0-9_.]*|->|/\*.*?\*/|//[^\n]*|\S"
)
_NUMBER = re.compile(r"-?[0-9][A-Za-z0-9_.]*")
_DIMS = re.compile(r"Tensor\[\(([0-9, ]*)\)")
_SNIPPETS = [
    "%", "@", '"', "/*", "*/", "//", "(", ")", "[", "]", "{", "}", ",", ";", "=", ":", "?",
    ".", "->", "fn", "def", "let", "if", "else", "free_var", "meta", "True", "False", "None",
    "Tensor", "float32", "int8", "bool", "uint64", "1f", "-1", "16i64", "1e-05f", "inff",
    "-nanf", "%0", "%x", "%x.0", "%0.1.2", "@main", "nn.relu", "add", "nn.conv2d",
    "reshape", "concatenate", "strided_slice", "take", "zeros", "full", "broadcast_to",
    "meta[relay.Constant][0]", "meta[relay.Constant][7]", "meta[relay.Constant][99999999999]",
    '#[version = "0.0.5"]', "#[metadata]", "v0.0.4", "\n", " ", "\t", "99999999999999999999",
    "0.5.1", "1e999f", "1e999", "-0", "0x10", "1_000", "\\", '"\\x"', '"\\q"', "\x00", "é",
    "\U0001f600", "Tensor[(1000000000000, 1000000000000), float32]", "Tensor[(), bool]",
    "(,)", "()", "[]", "{}", "{\"a\": 1}", "axis=99999999999999999999", "newshape=[-1, -1]",
]  # fmt: skip
_NUMBERS = [
    "0", "1", "-1", "2", "3", "7", "-7", "255", "256", "-129", "32767", "65536", "2147483647",
    "2147483648", "-2147483649", "4294967296", "9223372036854775807", "9223372036854775808",
    "18446744073709551616", "1000000000000000000000000000000", "10" + "0" * 400, "1e30",
    "1e308", "1e309", "1e-400", "-0.0", "0.5", "3.4e38", "3.5e38", "65504", "65520",
    "inf", "nan", "1.5e", "1..2", "00", "-", "1.", ".5",
]  # fmt: skip
_SUFFIXES = ["", "", "f", "f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16",
             "u32", "u64", "q", "i"]  # fmt: skip
_DIM_VALUES = [0, 1, 2, 3, 7, 1000, 2**31, 2**32, 2**63, 2**64, 10**30, 10**100, -1]


# -- seed programs ----------------------------------------------------------------------
def _feature_program() -> str:
    """A module that uses every node kind, attributes, closures, globals and metadata."""
    x = Var("x", TensorType((2, 3)))
    y = Var("y", TensorType((2, 3)))
    c = Var("c", TensorType((), "bool"))
    a = Var("a")
    w = Constant(np.arange(6, dtype="float32").reshape(2, 3))
    idx = Constant(np.array([1, 0], dtype="int64"))
    added = make_call("add", [x, y])
    body = Let(
        a,
        added,
        If(
            c,
            Tuple([TupleGetItem(Tuple([a, y]), 0), make_call("multiply", [a, w])]),
            Tuple([make_call("clip", [a], a_min=-1.0, a_max=2.0), make_call("negative", [w])]),
        ),
    )
    p = Var("p", TensorType((2, 3)))
    inner = Function([p], make_call("nn.relu", [p]))
    helper = GlobalVar("helper")
    shaped = make_call("reshape", [Call(helper, [x])], newshape=(3, 2))
    sliced = make_call("strided_slice", [shaped], begin=(0, 0), end=(2, 2), strides=(1, 1))
    taken = make_call("take", [x, idx], axis=1)
    cat = make_call("concatenate", [Tuple([x, y])], axis=0)
    main = Function(
        [c, x, y],
        Tuple([body, Call(inner, [x]), sliced, taken, cat, make_call("sum", [x], axis=(1,))]),
    )
    z = Var("z", TensorType((2, 3)))
    mod = IRModule({"main": main, helper: Function([z], make_call("negative", [z]))})
    return astext(infer_module(mod))


def _workload_texts() -> list[str]:
    out = []
    for get, kwargs in (
        (mlp.get_workload, {"batch_size": 1, "image_shape": (1, 8, 8)}),
        (resnet.get_workload, {"num_layers": 18, "image_shape": (3, 32, 32), "num_classes": 10}),
        (mobilenet.get_workload, {"image_shape": (3, 32, 32), "num_classes": 10}),
    ):
        mod, _ = get(**kwargs)
        out.append(astext(mod))
    return out


def seed_texts(workloads: bool = True) -> list[tuple[str, int]]:
    """(text, weight) pairs: small programs are picked more often (they parse faster)."""
    seeds = [(_feature_program(), 8)]
    seeds.extend((path.read_text(), 2) for path in sorted(GOLDEN.glob("*.txt")))
    seeds.append(("free_var %x: Tensor[(2), float32];\nlet %y = add(%x, 1f);\n(%y, %y.0)", 3))
    seeds.append(("fn (%x: Tensor[(2), int8]) { if (True) { %x } else { negative(%x) } }", 3))
    if workloads:
        seeds.extend((text, 1) for text in _workload_texts())
    return seeds


# -- mutations --------------------------------------------------------------------------
def _tokens(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _random_number(rng: random.Random) -> str:
    return (
        rng.choice(["", "-"]) * (rng.random() < 0.2) + rng.choice(_NUMBERS) + rng.choice(_SUFFIXES)
    )


def _mutate_token(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    if not toks:
        return text
    start, end = rng.choice(toks)
    op = rng.randrange(4)
    if op == 0:  # delete
        return text[:start] + text[end:]
    if op == 1:  # duplicate
        return text[:end] + rng.choice(["", " "]) + text[start:end] + text[end:]
    if op == 2:  # replace
        return text[:start] + rng.choice(_SNIPPETS) + text[end:]
    s2, e2 = rng.choice(toks)  # swap
    if s2 < start:
        start, end, s2, e2 = s2, e2, start, end
    if end > s2:
        return text
    return text[:start] + text[s2:e2] + text[end:s2] + text[start:end] + text[e2:]


def _mutate_byte(text: str, rng: random.Random) -> str:
    pos = rng.randrange(len(text) + 1)
    op = rng.randrange(4)
    if op == 0 and pos < len(text):  # flip a bit of a character
        ch = chr((ord(text[pos]) ^ (1 << rng.randrange(8))) or 1)
        return text[:pos] + ch + text[pos + 1 :]
    if op == 1:
        return text[:pos] + chr(rng.randrange(1, 256)) + text[pos:]
    if op == 2:
        return text[:pos] + text[pos + 1 :]
    return text[:pos] + rng.choice(_SNIPPETS) + text[pos:]


def _mutate_number(text: str, rng: random.Random) -> str:
    found = [(m.start(), m.end()) for m in _NUMBER.finditer(text)]
    if not found:
        return _mutate_byte(text, rng)
    start, end = rng.choice(found)
    return text[:start] + _random_number(rng) + text[end:]


def _mutate_shape(text: str, rng: random.Random) -> str:
    found = list(_DIMS.finditer(text))
    if not found:
        return _mutate_number(text, rng)
    m = rng.choice(found)
    dims = [rng.choice(_DIM_VALUES) for _ in range(rng.randrange(0, 6))]
    if rng.random() < 0.1:
        dims = [1] * rng.choice([40, 100, 1000])
    new = ", ".join(str(d) for d in dims)
    return text[: m.start(1)] + new + text[m.end(1) :]


def _mutate_metadata(text: str, rng: random.Random) -> str:
    head, sep, meta = text.partition("#[metadata]")
    if not sep:
        return _mutate_shape(text, rng)
    try:
        doc = json.loads(meta)
        entries = doc["relay.Constant"]
        entry = rng.choice(entries)
        if not isinstance(entry, dict) or not isinstance(entry.get("data"), str):
            raise TypeError("not an entry")
        base64.b64decode(entry["data"], validate=True)
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return head + sep + _mutate_byte(meta, rng)
    op = rng.randrange(7)
    if op == 0:
        entry["shape"] = [rng.choice(_DIM_VALUES) for _ in range(rng.randrange(0, 5))]
    elif op == 1:
        entry["dtype"] = rng.choice(["float32", "int8", "bool", "uint64", "float16", "x", 3, None])
    elif op == 2:
        raw = bytearray(base64.b64decode(entry["data"]))
        cut = rng.randrange(len(raw) + 1)
        entry["data"] = base64.b64encode(bytes(raw[:cut])).decode()
    elif op == 3:
        entry["data"] = rng.choice(["!!", "", "AAAA" * 3, 5, None, "=" * 5])
    elif op == 4:
        entry[rng.choice(["shape", "dtype", "data"])] = rng.choice([None, [], {}, "", 1e30, True])
    elif op == 5:
        doc = rng.choice([[], {"relay.Constant": {}}, {"relay.Constant": [1]}, "x", None])
    else:
        depth = rng.choice([100, 1000, 100000])
        doc["relay.Constant"].append(json.loads("[" * 50 + "]" * 50) if depth < 1000 else [])
        return head + sep + "[" * depth + "]" * depth
    return head + sep + json.dumps(doc)


def _nest(text: str, rng: random.Random) -> str:
    """Deep nesting: parentheses, tuples, functions, ifs, lets, types or attribute lists
    around a part of the text (depths around and far beyond Python's recursion limit)."""
    depth = rng.choice([10, 100, 150, 200, 250, 300, 400, 500, 1000, 3000, 20000])
    kind = rng.randrange(7)
    if kind == 5:  # a tuple type
        found = list(re.finditer(r"Tensor\[[^\]]*\]|float32|bool", text))
        if found:
            m = rng.choice(found)
            new = "(" * depth + m.group() + ",)" * depth
            return text[: m.start()] + new + text[m.end() :]
    if kind == 6:  # an attribute value
        found = list(_ATTR.finditer(text))
        if found:
            m = rng.choice(found)
            new = "[" * depth + m.group(2) + "]" * depth
            return text[: m.start(2)] + new + text[m.end(2) :]
    toks = [t for t in _tokens(text) if text[t[0]] in "%-0123456789"]
    if not toks:
        return "(" * depth + text + ")" * depth
    start, end = rng.choice(toks)
    atom = text[start:end]
    if kind == 0:
        new = "(" * depth + atom + ")" * depth
    elif kind == 1:
        new = "(" * depth + atom + ",)" * depth
    elif kind == 2:
        new = "fn () {" * depth + atom + "}" * depth
    elif kind == 3:
        new = "if (True) {" * depth + atom + "} else {" + atom + "}" * depth
    else:
        new = "(let %q = " * depth + atom + "; %q)" * depth
    return text[:start] + new + text[end:]


_ATTR = re.compile(r"\b([a-z_]+)=(\[[^\]=]*\]|\"[^\"]*\"|[^,)\s]+)")
_OP_CALL = re.compile(r"\b([a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)*)\(")
_ATTR_VALUES = [
    "0", "1", "-1", "2", "-2", "3", "99", "-99", "2147483648", "10" + "0" * 30, "0.5f",
    "1e30f", "nanf", "inff", "True", "False", "None", '""', '"NCHW"', '"NHWC"', '"x"',
    '"float32"', '"int8"', '"bool"', "[]", "[0]", "[1, 1]", "[-1]", "[0, 0, 0, 0]",
    "[1, 2, 3, 4, 5, 6]", "[-1, -1]", "[[1, 2], [3, 4]]", "[None]", '["a"]', "[1.5f]",
    "[2147483648]", "[0, 0]", "{}", '{"a": 1}', "[3, 2]", "[1, -1]", "[10000000000000000000000]",
]  # fmt: skip


def _mutate_attr(text: str, rng: random.Random) -> str:
    found = list(_ATTR.finditer(text))
    if not found:
        return _mutate_number(text, rng)
    m = rng.choice(found)
    return text[: m.start(2)] + rng.choice(_ATTR_VALUES) + text[m.end(2) :]


def _mutate_op(text: str, rng: random.Random) -> str:
    found = [m for m in _OP_CALL.finditer(text) if m.group(1) not in ("fn", "if")]
    if not found:
        return _mutate_token(text, rng)
    m = rng.choice(found)
    name = rng.choice(_op_names()) if rng.random() < 0.5 else rng.choice(found).group(1)
    return text[: m.start(1)] + name + text[m.end(1) :]


def _op_names() -> list[str]:
    if not _OP_NAMES:
        _OP_NAMES.extend(sorted(default_registry.names()))
    return _OP_NAMES


_OP_NAMES: list[str] = []


_MUTATORS: list[tuple[Callable[[str, random.Random], str], int]] = [
    (_mutate_token, 6),
    (_mutate_byte, 3),
    (_mutate_number, 4),
    (_mutate_shape, 4),
    (_mutate_attr, 5),
    (_mutate_op, 4),
    (_mutate_metadata, 2),
    (_nest, 2),
]


def inputs(n: int, seed: int = 0, workloads: bool = True) -> Iterator[str]:
    """``n`` mutated texts, the same for the same seed."""
    rng = random.Random(seed)
    seeds = seed_texts(workloads)
    texts = [t for t, _ in seeds]
    weights = [w for _, w in seeds]
    mutators = [m for m, _ in _MUTATORS]
    mweights = [w for _, w in _MUTATORS]
    for _ in range(n):
        text = rng.choices(texts, weights)[0]
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            text = rng.choices(mutators, mweights)[0](text, rng)
        yield text


# -- running ----------------------------------------------------------------------------
@dataclass
class Report:
    runs: int = 0
    typed: int = 0
    untyped: int = 0
    sites: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    slowest: list[tuple[float, str]] = field(default_factory=list)


def _site(err: BaseException) -> str:
    frames = traceback.extract_tb(err.__traceback__)
    mine = [f for f in frames if "relaykit" in f.filename] or frames
    f = mine[-1]
    path = f.filename.split("src/", 1)[-1]
    return f"{type(err).__name__} at {path}:{f.lineno} ({f.name})"


def check(text: str, report: Report) -> None:
    """Run ``text`` through ``parse`` and ``parse_expr``; record what escapes."""
    for fn in (lambda t: parse(t), lambda t: parse_expr(t)):
        start = time.perf_counter()
        try:
            fn(text)
        except RelayKitError:
            report.typed += 1
        except Exception as err:
            report.untyped += 1
            site = _site(err)
            report.sites[site] += 1
            report.examples.setdefault(site, text)
        report.runs += 1
        elapsed = time.perf_counter() - start
        report.slowest.append((elapsed, text[:120]))
        if len(report.slowest) > 64:
            report.slowest = sorted(report.slowest, reverse=True)[:8]


def run(n: int, seed: int = 0, workloads: bool = True) -> Report:
    report = Report()
    for text in inputs(n, seed, workloads):
        check(text, report)
    report.slowest = sorted(report.slowest, reverse=True)[:8]
    return report


def _limit_memory(gib: float) -> None:
    """Cap the address space so an allocation bomb fails instead of swapping the machine."""
    try:
        import resource

        limit = int(gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=20_000, help="number of inputs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", type=int, default=1, help="example inputs shown per site")
    ap.add_argument("--mem-gib", type=float, default=4.0, help="address-space cap")
    args = ap.parse_args()
    _limit_memory(args.mem_gib)
    start = time.perf_counter()
    report = run(args.n, args.seed)
    elapsed = time.perf_counter() - start
    print(
        f"{args.n} inputs, {report.runs} parser calls in {elapsed:.1f} s: "
        f"{report.typed} relaykit errors, {report.untyped} untyped exceptions "
        f"({100 * report.untyped / max(report.runs, 1):.2f}%) at {len(report.sites)} code sites"
    )
    for site, count in report.sites.most_common():
        print(f"{count:6d}  {site}")
        if args.show:
            print(f"        e.g. {report.examples[site][:300]!r}")
    print("slowest inputs:")
    for secs, text in report.slowest[:5]:
        print(f"  {secs:7.3f} s  {text!r}")


if __name__ == "__main__":
    main()
