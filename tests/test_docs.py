"""The worked examples of docs/architecture.md run, each in a fresh interpreter, so the
page stays true: adding an operator, a pass and a backend."""

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


def test_the_page_has_the_three_worked_examples() -> None:
    sections = [s for s, _ in _examples()]
    assert sections == ["Adding an operator", "Adding a pass", "Adding a backend"]


@pytest.mark.parametrize(("section", "code"), _examples(), ids=lambda v: str(v)[:24])
def test_example_runs(
    section: str, code: str, tmp_path: Path, fresh_python: Callable[..., CompletedProcess[str]]
) -> None:
    proc = fresh_python("-c", code, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, f"{section}:\n{proc.stderr}"
