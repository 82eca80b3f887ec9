"""docs/tflite.md's examples run, each in a fresh interpreter."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest

pytest.importorskip("tensorflow", reason="docs/tflite.md's examples need TensorFlow")

PAGE = Path(__file__).resolve().parents[3] / "docs" / "tflite.md"


@pytest.mark.parametrize("index", range(len(re.findall(r"```python\n", PAGE.read_text()))))
def test_example_runs(
    index: int, tmp_path: Path, fresh_python: Callable[..., CompletedProcess[str]]
) -> None:
    code = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)[index]
    proc = fresh_python("-c", code, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
