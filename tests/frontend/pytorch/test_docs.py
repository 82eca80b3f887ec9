"""docs/pytorch.md's example runs as written (a fresh interpreter), so the page stays true."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[3]


def _dnnl_available() -> bool:
    try:
        from relaykit.contrib.dnnl.library import find_onednn

        find_onednn()
    except Exception:
        return False
    return True


def test_the_example_runs(tmp_path):
    if not _dnnl_available():
        pytest.skip("the example partitions for dnnl: oneDNN is not installed")
    text = (ROOT / "docs" / "pytorch.md").read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    assert "from_pytorch" in code and "from_exported_program" in code
    assert 'backend="relaykit"' in code
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
