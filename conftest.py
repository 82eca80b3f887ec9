"""Repository-wide pytest configuration: every module's docstring examples run as tests.

``testpaths`` includes ``src/relaykit``; each of its modules is collected as a doctest
module (imported under its package name, once). Modules that need an optional extra
are left out when the extra is not installed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from _pytest.doctest import DoctestModule

# PaddlePaddle 3.3's native library crashes the process (a segmentation fault) when it is
# loaded after TensorFlow's; loaded first, both work. Test processes run frameworks' tests in
# any order, so paddle, when installed, is imported before anything can import TensorFlow.
if importlib.util.find_spec("paddle") is not None:
    import paddle  # noqa: F401

SRC = Path(__file__).resolve().parent / "src" / "relaykit"

#: Modules that import an optional dependency at module level, by the extra providing it.
NEEDS = {
    "frontend/onnx_backend.py": "onnx",
    "frontend/keras/importer.py": "keras",
}


def _missing_extra(path: Path) -> bool:
    module = NEEDS.get(path.relative_to(SRC).as_posix())
    return module is not None and importlib.util.find_spec(module) is None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix != ".py" or SRC not in file_path.parents or _missing_extra(file_path):
        return None
    if parent.config.getoption("doctestmodules", False):
        return None  # pytest's own --doctest-modules collects it already
    return DoctestModule.from_parent(parent, path=file_path)
