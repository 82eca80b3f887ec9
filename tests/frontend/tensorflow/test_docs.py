"""docs/tensorflow.md's example runs as written (a fresh interpreter), so the page
stays true."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest

pytest.importorskip("tensorflow", reason="the example builds its graphs with tensorflow")

ROOT = Path(__file__).resolve().parents[3]


def test_the_example_runs(
    tmp_path: Path, fresh_python: Callable[..., CompletedProcess[str]]
) -> None:
    text = (ROOT / "docs" / "tensorflow.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1 and "from_tensorflow" in blocks[0]
    proc = fresh_python("-c", blocks[0], cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
