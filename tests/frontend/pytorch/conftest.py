"""Fixtures of the PyTorch frontend tests: the plain-PyTorch model zoo
(torch_models.py, loaded by path), whether oneDNN is there, and a runner for imported
modules."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="session")
def zoo(load_test_file: Callable[[Path, str], ModuleType]) -> ModuleType:
    """tests/frontend/pytorch/torch_models.py: ResNet-18/50, MobileNetV2, VGG-11, BERT."""
    return load_test_file(
        Path(__file__).with_name("torch_models.py"), "relaykit_tests_torch_models"
    )


@pytest.fixture(scope="session")
def dnnl_available() -> bool:
    """Whether the dnnl backend's oneDNN is installed (the tests that partition for dnnl
    skip without it)."""
    try:
        from relaykit.backends.dnnl.run.library import find_onednn

        find_onednn()
    except Exception:
        return False
    return True


def run_relay(mod: Any, params: dict[str, Any], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Build ``mod`` with ``params`` (relay.build) and run it on the graph executor."""
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


def assert_close(got: list[np.ndarray], want: Any, rtol: float = 1e-4) -> None:
    """Each output within ``rtol`` of torch's, relative to the output's largest value."""
    want = [want] if isinstance(want, torch.Tensor) else list(want)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = w.detach().numpy()
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        scale = max(float(np.abs(w).max()), 1e-6) if w.size else 1.0
        err = float(np.abs(g.astype(np.float64) - w).max()) / scale if w.size else 0.0
        assert err <= rtol, f"relative error {err:.2e} > {rtol}"


@pytest.fixture(scope="session")
def relay_run() -> Any:
    return run_relay


@pytest.fixture(scope="session")
def close() -> Any:
    return assert_close
