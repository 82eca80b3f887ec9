"""docs/keras.md's example runs as written (a fresh interpreter), so the page stays true."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

ROOT = Path(__file__).resolve().parents[3]


def test_the_example_runs(
    tmp_path: Path, fresh_python: Callable[..., CompletedProcess[str]]
) -> None:
    text = (ROOT / "docs" / "keras.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    assert "from_keras" in code
    proc = fresh_python("-c", code, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_the_layer_table_lists_what_converts() -> None:
    from relaykit.frontend.keras import supported_layers

    text = (ROOT / "docs" / "keras.md").read_text(encoding="utf-8")
    table = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    # "Conv1D/2D/3DTranspose" names Conv1DTranspose, Conv2DTranspose and Conv3DTranspose
    named = {re.sub(r"[123]D|/", "", t) for t in re.findall(r"`([A-Z][A-Za-z0-9/]+)`", table)}
    bases = {re.sub(r"[123]D", "", name) for name in supported_layers()}
    assert bases <= named, sorted(bases - named)
