"""Helpers every test folder may use, handed out as fixtures (the test folders are not
packages): loading a sibling file as a module, and running Python in a fresh
interpreter that imports this tree's relaykit."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_by_path(path: Path, name: str) -> ModuleType:
    """The Python file ``path`` as the module ``name``, executed once (later calls get
    the module from ``sys.modules``)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_python(
    *args: str,
    cwd: Path | None = None,
    timeout: float = 300,
    path: Sequence[Path] = (),
) -> subprocess.CompletedProcess[str]:
    """``python *args`` in a fresh interpreter, output captured as text, with ``path``
    and then this tree's ``src`` first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [*(str(p) for p in path), str(ROOT / "src"), env.get("PYTHONPATH", "")]
    )
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout
    )


@pytest.fixture(scope="session")
def load_test_file() -> Callable[[Path, str], ModuleType]:
    """:func:`load_by_path`: ``load_test_file(path, name) -> module``."""
    return load_by_path


@pytest.fixture(scope="session")
def fresh_python() -> Callable[..., subprocess.CompletedProcess[str]]:
    """:func:`run_python`: ``fresh_python("-c", code, cwd=..., timeout=..., path=[...])``."""
    return run_python
