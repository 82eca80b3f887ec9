"""The worked examples of docs/architecture.md run, each in a fresh interpreter, so the
page stays true: one for each row of its "where does X go" table. So do the examples of
the other pages listed in ``PAGES`` (docs/int8-backend.md: an int8 backend over a
``relay.quantize``d ResNet-18)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
#: Pages besides architecture.md whose ``python`` blocks must run.
PAGES = [ROOT / "docs" / "int8-backend.md"]


def _examples(doc: Path = DOC) -> list[tuple[str, str]]:
    """``(section title, code)`` of every ``python`` block of the page."""
    out: list[tuple[str, str]] = []
    section = ""
    for part in re.split(r"^(## .*)$", doc.read_text(encoding="utf-8"), flags=re.M):
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
        "Adding a cost source",
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


@pytest.mark.parametrize(
    ("page", "code"),
    [(p.name, code) for p in PAGES for _, code in _examples(p)],
    ids=lambda v: str(v)[:24],
)
def test_page_example_runs(
    page: str, code: str, tmp_path: Path, fresh_python: Callable[..., CompletedProcess[str]]
) -> None:
    assert code.strip(), f"{page} has an empty python block"
    proc = fresh_python("-c", code, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, f"{page}:\n{proc.stderr}"


def test_every_listed_page_has_an_example() -> None:
    assert all(_examples(p) for p in PAGES)
