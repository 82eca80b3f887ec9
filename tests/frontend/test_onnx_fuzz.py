"""The ONNX importer fuzzer as a regular test: a few hundred mutants of ONNX's node
tests and light models (``benchmarks/fuzz_onnx.py``; long runs there), imported and,
when small, built and run. Only relaykit errors may escape.

Mutants run in a forked worker with an address-space and a time limit, so a
mutant that would allocate gigabytes or loop forever is reported as a finding
instead of stopping the suite.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")

FUZZER = Path(__file__).parents[2] / "benchmarks" / "fuzz_onnx.py"


def _fuzzer():
    spec = importlib.util.spec_from_file_location("fuzz_onnx", FUZZER)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_onnx"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fuzzer():
    return _fuzzer()


@pytest.fixture(scope="module")
def seeds(fuzzer):
    return fuzzer.load_seeds()


def test_mutants_raise_only_relaykit_errors(fuzzer, seeds):
    counts, findings = fuzzer.fuzz(seeds, range(600), seed=2024, workers=1, timeout=30.0)
    assert sum(counts.values()) == 600
    # the mutants exercise both paths: some import (and run), most are rejected
    assert counts["ran"] > 50 and counts["typed"] > 200, counts
    report = "\n".join(
        f"{len(ex)} x {etype} at {site}: {ex[0]}" for (etype, site), ex in findings.items()
    )
    assert not findings, f"untyped exceptions, timeouts or crashes:\n{report}"


def test_the_fuzzer_reports_untyped_exceptions(fuzzer, seeds, monkeypatch):
    """The harness can fail: an importer that raises a bare ValueError is caught."""
    import relaykit.frontend

    def broken(model, **kwargs):
        raise ValueError("planted")

    monkeypatch.setattr(relaykit.frontend, "from_onnx", broken)
    counts, findings = fuzzer.fuzz(seeds, range(5), seed=0, workers=1, build=False)
    assert counts["untyped"] == 5
    (((etype, _site), examples),) = findings.items()
    assert etype == "ValueError" and all("planted" in e for e in examples)
