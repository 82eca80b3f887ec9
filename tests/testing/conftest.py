"""Fixtures for the workload tests: the NumPy reference and the interpreter."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest


def _load_reference() -> ModuleType:
    name = "relaykit_tests_numpy_reference"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).with_name("numpy_reference.py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def np_ref() -> ModuleType:
    """tests/testing/numpy_reference.py, the independent forward passes."""
    return _load_reference()


@pytest.fixture(scope="session")
def run_debug() -> Any:
    """``run_debug(mod, data, params) -> np.ndarray`` on the reference interpreter
    (skips when the interpreter is not available)."""
    interpreter = pytest.importorskip("relaykit.backend.interpreter")

    def run(mod: Any, data: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        out = interpreter.create_executor("debug", mod=mod).evaluate()(data, **params)
        return out.numpy() if hasattr(out, "numpy") else np.asarray(out)

    return run
