"""Bounded fuzzing: mutated programs parse or raise relaykit errors, never anything else.

The first test mutates programs over the test operators (ParseError only); the
second runs benchmarks/fuzz_parser.py (real operators, type inference) on a few
hundred inputs. Long runs: ``python benchmarks/fuzz_parser.py``.
"""

import importlib.util
import os
import random
import sys
from pathlib import Path

import numpy as np
import pytest

from relaykit.errors import ParseError
from relaykit.ir import (
    Call,
    Constant,
    Function,
    If,
    IRModule,
    Let,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
)
from relaykit.text import astext, parse, parse_expr
from relaykit.text.tokenizer import Source, tokenize

# A fixed number of inputs (not a time budget), so every run checks the same texts.
RUNS = int(os.environ.get("RELAYKIT_FUZZ_RUNS", "400"))
_FUZZER = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_parser.py"
_SNIPPETS = [
    "%",
    "@",
    '"',
    "/*",
    "*/",
    "//",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    "=",
    ":",
    "?",
    ".",
    "->",
    "fn",
    "def",
    "let",
    "if",
    "else",
    "free_var",
    "meta",
    "True",
    "None",
    "Tensor",
    "float32",
    "int8",
    "1f",
    "-1",
    "16i64",
    "1e-05f",
    "inff",
    "%0",
    "%x",
    "@main",
    "nn.relu",
    "add",
    "meta[relay.Constant][0]",
    "meta[relay.Constant][7]",
    '#[version = "0.0.5"]',
    "#[metadata]",
    "\n",
    " ",
    "99999999999999999999",
    "0.5.1",
    "\\",
    "\x00",
    "é",
]


def _programs(call):
    x, y = Var("x", TensorType((2, 3))), Var("y", TensorType((2, 3)))
    c = Var("c", TensorType((), "bool"))
    a = Var("a")
    add = call("add", x, y)
    body = Let(
        a,
        add,
        If(
            c,
            Tuple([TupleGetItem(Tuple([a, y]), 0), Constant(np.ones(3, "int8"))]),
            Tuple([call("clip", a, a_min=-1.0, a_max=2.0), Constant(np.array(3.0))]),
        ),
    )
    inner = Function([Var("p", TensorType((2, 3)))], call("nn.relu", y), attrs={"Composite": "a.b"})
    main = Function([c, x, y], Tuple([body, Call(inner, [x]), call("my.attrs", x, names=("q",))]))
    mod = IRModule()
    mod._add("main", main)
    mod._add("f", Function([Var("z", TensorType((2,)))], call("negative", Var("z"))))
    return [astext(mod), astext(main), astext(call("nn.softmax", add))]


def _mutate(text, rng):
    try:
        toks, _ = tokenize(Source(text))
    except ParseError:
        toks = []
    toks = [t for t in toks if t[0] != "EOF"]
    choice = rng.randrange(7)
    if choice < 4 and toks:
        i = rng.randrange(len(toks))
        start, end = toks[i][2], toks[i][2] + len(toks[i][1])
        if choice == 0:  # delete a token
            return text[:start] + text[end:]
        if choice == 1:  # duplicate a token
            return text[:end] + " " + toks[i][1] + text[end:]
        if choice == 2:  # replace a token by a snippet
            return text[:start] + rng.choice(_SNIPPETS) + text[end:]
        j = rng.randrange(len(toks))  # swap two tokens
        if j < i:
            i, j = j, i
        (s1, e1), (s2, e2) = [(toks[k][2], toks[k][2] + len(toks[k][1])) for k in (i, j)]
        if e1 > s2:
            return text
        return text[:s1] + text[s2:e2] + text[e1:s2] + text[s1:e1] + text[e2:]
    pos = rng.randrange(len(text) + 1)
    if choice == 4:  # insert a byte
        return text[:pos] + chr(rng.randrange(1, 128)) + text[pos:]
    if choice == 5:  # delete a byte
        return text[:pos] + text[pos + 1 :]
    return text[:pos] + rng.choice(_SNIPPETS) + text[pos:]


def test_mutations_raise_only_parse_errors(ops):
    rng = random.Random(1234)
    programs = _programs(ops.call)
    runs = errors = 0
    for _ in range(RUNS):
        text = rng.choice(programs)
        for _ in range(rng.randrange(1, 4)):
            text = _mutate(text, rng)
        for fn in (parse, parse_expr):
            try:
                if fn is parse:
                    parse(text, registry=ops.reg, infer_types=False)
                else:
                    parse_expr(text, registry=ops.reg)
            except ParseError as err:
                errors += 1
                assert str(err).startswith("<string>:"), str(err)
            except Exception as err:  # pragma: no cover - the failure report
                raise AssertionError(
                    f"{type(err).__name__}: {err}\n--- input ---\n{text!r}"
                ) from err
            runs += 1
    assert runs == 2 * RUNS and errors > RUNS // 2


def _load_fuzzer():
    name = "relaykit_bench_fuzz_parser"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, _FUZZER)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while it loads
        spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", [0, 1])
def test_fuzzer_finds_only_relaykit_errors(seed):
    """benchmarks/fuzz_parser.py, bounded: real operators and type inference, number,
    shape, attribute, metadata and nesting mutations; only relaykit errors escape."""
    fuzz = _load_fuzzer()
    report = fuzz.run(RUNS // 2, seed=seed, workloads=False)
    found = "\n".join(
        f"{count} x {site}\n    e.g. {fuzz_input!r:.400}"
        for site, count in report.sites.most_common()
        for fuzz_input in [report.examples[site]]
    )
    assert report.untyped == 0, found
    assert report.runs == 2 * (RUNS // 2)
    assert report.typed > report.runs // 2  # the mutants are mostly invalid: errors were seen
