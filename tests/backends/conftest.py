"""Fixtures of the backend tests: isolated registries and the three test workloads.

Every test runs with the BYOC, codegen and global-function registries scoped,
and with the example backends (re)registered inside the scope. Workloads get
randomised normalisation parameters and a sharper classifier, so that their
softmax outputs are sensitive to small numeric differences.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from relaykit.byoc import scoped_registries
from relaykit.execution.codegen import scoped_codegens
from relaykit.testing import mlp, resnet, vgg

_LAST_FC = {"mlp": "fc3_weight", "vgg11": "fc8_weight", "resnet18": "fc1_weight"}


@pytest.fixture(autouse=True)
def _isolated_registries() -> Iterator[None]:
    with scoped_registries(), scoped_codegens():
        yield


def randomized(name: str, params: dict[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    """``params`` with random batch-norm statistics and biases, and the last classifier
    layer scaled up so the softmax is far from uniform."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for k, v in params.items():
        a = v.numpy().copy()
        if k.endswith(("_gamma", "_moving_var")):
            a = rng.uniform(0.5, 1.5, a.shape)
        elif k.endswith(("_beta", "_moving_mean", "_bias")):
            a = rng.normal(0.0, 0.2, a.shape)
        elif k == _LAST_FC[name]:
            a = a * 8.0
        out[k] = a.astype(v.dtype)
    return out


_CACHE: dict[str, Any] = {}


def workload(name: str) -> tuple[Any, dict[str, np.ndarray], np.ndarray]:
    """(module, params, input) of a small test workload (cached; do not mutate)."""
    if name not in _CACHE:
        if name == "mlp":
            mod, params = mlp.get_workload(batch_size=1)
            shape = (1, 1, 28, 28)
        elif name == "vgg11":
            mod, params = vgg.get_workload(1, num_classes=10, image_shape=(3, 32, 32))
            shape = (1, 3, 32, 32)
        elif name == "resnet18":
            mod, params = resnet.get_workload(1, 10, num_layers=18, image_shape=(3, 32, 32))
            shape = (1, 3, 32, 32)
        else:
            raise KeyError(name)
        data = np.random.default_rng(1).standard_normal(shape).astype("float32")
        _CACHE[name] = (mod, randomized(name, params), data)
    return _CACHE[name]


_REFERENCE: dict[str, np.ndarray] = {}


def reference_output(name: str) -> np.ndarray:
    """The reference interpreter's output of workload ``name``."""
    if name not in _REFERENCE:
        from relaykit import relay

        mod, params, data = workload(name)
        out = relay.create_executor("debug", mod=mod).evaluate()(data, **params)
        _REFERENCE[name] = out.numpy()
    return _REFERENCE[name]


@pytest.fixture
def models() -> Any:
    """The workload helpers: ``models.workload(name)``, ``models.reference(name)``,
    ``models.run(lib, data)``."""
    import types

    import relaykit as tvm
    from relaykit.contrib import graph_executor

    def run(lib: Any, data: np.ndarray) -> np.ndarray:
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.set_input("data", data)
        m.run()
        return m.get_output(0).numpy()

    return types.SimpleNamespace(workload=workload, reference=reference_output, run=run)
