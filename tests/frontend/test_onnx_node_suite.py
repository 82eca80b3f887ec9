"""ONNX's own node test suite, run on relaykit through its ONNX backend.

Each model is imported ONCE (``from_onnx(model, shape=<the inputs' shapes>,
freeze_params=True)``) and run as compiled -- on the Relay VM when it is dynamic --
without the backend's re-import-per-value fallback.

Every test named in ``onnx_expected_passes.txt`` must pass: a regression fails
here. The others are expected failures (non-strict): when one starts passing,
``benchmarks/onnx_conformance.py --update`` adds it to the list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("onnx")

from relaykit.frontend.onnx.backend import node_test_cases, run_node_test

EXPECTED_FILE = Path(__file__).with_name("onnx_expected_passes.txt")
EXPECTED = frozenset(EXPECTED_FILE.read_text().split())
CASES = {case.name: case for case in node_test_cases()}


def test_expected_list_names_real_tests():
    unknown = sorted(EXPECTED - set(CASES))
    assert not unknown, f"{EXPECTED_FILE.name} names tests onnx does not have: {unknown[:5]}"
    assert len(EXPECTED) >= 1700, "imported once, at least 1,700 of onnx's node tests pass"


@pytest.mark.parametrize("name", sorted(CASES))
def test_node(name: str) -> None:
    case = CASES[name]
    if name not in EXPECTED:
        try:
            run_node_test(case)
        except Exception as err:
            pytest.xfail(f"{type(err).__name__}: {str(err).splitlines()[0][:200]}")
        return
    run_node_test(case)
