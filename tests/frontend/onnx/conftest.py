"""Fixtures of the quantized-ONNX tests: onnxruntime-quantized models built once per
session (quant_models.py, loaded by path), whether oneDNN is there, and a runner."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


@pytest.fixture(scope="session")
def qm(load_test_file: Callable[[Path, str], ModuleType]) -> ModuleType:
    """tests/frontend/onnx/quant_models.py."""
    return load_test_file(Path(__file__).with_name("quant_models.py"), "relaykit_tests_qmodels")


@pytest.fixture(scope="session")
def quantized_model(qm: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Callable:
    """``quantized_model(name, scheme) -> (path, feeds)``, each exported and quantized once."""
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("quantized")
    floats: dict[str, dict[str, np.ndarray]] = {}
    done: dict[tuple[str, str], Path] = {}

    def get(name: str, scheme: str) -> tuple[Path, dict[str, np.ndarray]]:
        if name not in floats:
            floats[name] = qm.export(name, root / f"{name}.onnx")
        key = (name, scheme)
        if key not in done:
            done[key] = qm.quantize(
                root / f"{name}.onnx", root / f"{name}_{scheme}.onnx", scheme, floats[name]
            )
        return done[key], floats[name]

    return get


@pytest.fixture(scope="session")
def dnnl_available() -> bool:
    try:
        from relaykit.backends.dnnl.run.library import find_onednn

        find_onednn()
    except Exception:
        return False
    return True


def build_and_run(mod: Any, params: dict[str, Any], feeds: dict[str, np.ndarray]) -> list:
    """relay.build ``mod`` for the host and run it on the graph executor."""
    import relaykit as tvm
    from relaykit import relay
    from relaykit.contrib import graph_executor

    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in feeds.items():
        m.set_input(k, v)
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


@pytest.fixture
def relay_build_run() -> Callable:
    """``relay_build_run(mod, params, feeds) -> [outputs]`` (host build, graph executor)."""
    return build_and_run
