"""The worked examples of docs/architecture.md run, each in a fresh interpreter, so the
page stays true: one for each row of its "where does X go" table."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def _examples() -> list[tuple[str, str]]:
    """``(section title, code)`` of every ``python`` block of the page."""
    out: list[tuple[str, str]] = []
    section = ""
    for part in re.split(r"^(## .*)$", DOC.read_text(encoding="utf-8"), flags=re.M):
        if part.startswith("## "):
            section = part[3:].strip()
            continue
        out += [(section, code) for code in re.findall(r"```python\n(.*?)```", part, re.S)]
    return out


def test_the_page_has_a_worked_example_for_each_row_of_where_does_x_go() -> None:
    sections = [s for s, _ in _examples()]
    assert sections == [
        "Adding an operator",
        "Adding a pass",
        "Adding an ONNX converter",
        "Adding a backend",
        "Adding a host kernel",
        "Adding a report view",
        "Adding an ahead-of-time C emitter",
    ]
    table = DOC.read_text(encoding="utf-8").split("## Where does X go", 1)[1].split("\n## ", 1)[0]
    assert [f"*{s}*" in table for s in sections] == [True] * len(sections)


@pytest.mark.parametrize(("section", "code"), _examples(), ids=lambda v: str(v)[:24])
def test_example_runs(
    section: str, code: str, tmp_path: Path, fresh_python: Callable[..., CompletedProcess[str]]
) -> None:
    proc = fresh_python("-c", code, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, f"{section}:\n{proc.stderr}"
