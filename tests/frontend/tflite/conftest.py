"""Fixtures of the TFLite frontend tests: converted models (cached per session) and a
host build-and-run. Every test here skips when TensorFlow or tflite is missing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tflite", reason="the TFLite frontend needs the tflite package")
pytest.importorskip("tensorflow", reason="TFLite models are made and run by TensorFlow")


@pytest.fixture(scope="session")
def tfl(load_test_file: Callable[[Path, str], ModuleType]) -> ModuleType:
    """tests/frontend/tflite/tflite_models.py."""
    return load_test_file(Path(__file__).with_name("tflite_models.py"), "relaykit_tests_tflm")


@pytest.fixture(scope="session")
def tflite_model(tfl: ModuleType) -> Callable[[str, str | None], bytes]:
    """``tflite_model(name, quantized)``: the converted model's bytes, made once."""
    done: dict[tuple[str, str | None], bytes] = {}

    def get(name: str, quantized: str | None = None) -> bytes:
        key = (name, quantized)
        if key not in done:
            done[key] = tfl.convert(tfl.MODELS[name](), quantized)
        return done[key]

    return get


@pytest.fixture(scope="session")
def dnnl_available() -> bool:
    try:
        from relaykit.backends.dnnl.run.library import find_onednn

        find_onednn()
    except Exception:
        return False
    return True


def build_and_run(mod: Any, params: dict[str, Any], name: str, x: np.ndarray) -> np.ndarray:
    """relay.build ``mod`` for the host, run it on the graph executor, first output."""
    import relaykit as tvm
    from relaykit import relay
    from relaykit.contrib import graph_executor

    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input(name, x)
    m.run()
    return m.get_output(0).numpy()


@pytest.fixture
def relay_build_run() -> Callable[..., np.ndarray]:
    return build_and_run
