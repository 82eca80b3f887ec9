"""docs/pytorch.md's example runs as written (a fresh interpreter), so the page stays true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[3]


def test_the_example_runs(tmp_path, dnnl_available, fresh_python):
    if not dnnl_available:
        pytest.skip("the example partitions for dnnl: oneDNN is not installed")
    text = (ROOT / "docs" / "pytorch.md").read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    assert "from_pytorch" in code and "from_exported_program" in code
    assert 'backend="relaykit"' in code
    proc = fresh_python("-c", code, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
