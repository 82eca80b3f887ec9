"""Fixtures for the workload tests: the NumPy reference and the interpreter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest


@pytest.fixture(scope="session")
def np_ref(load_test_file: Callable[[Path, str], ModuleType]) -> ModuleType:
    """tests/testing/numpy_reference.py, the independent forward passes."""
    path = Path(__file__).with_name("numpy_reference.py")
    return load_test_file(path, "relaykit_tests_numpy_reference")


@pytest.fixture(scope="session")
def run_debug() -> Any:
    """``run_debug(mod, data, params) -> np.ndarray`` on the reference interpreter
    (skips when the interpreter is not available)."""
    interpreter = pytest.importorskip("relaykit.execution.interpreter")

    def run(mod: Any, data: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        out = interpreter.create_executor("debug", mod=mod).evaluate()(data, **params)
        return out.numpy() if hasattr(out, "numpy") else np.asarray(out)

    return run
