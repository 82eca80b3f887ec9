"""relay.testing workloads run fully offloaded to oneDNN and match the interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from relaykit.testing import mobilenet, resnet, vgg


def _randomized(params: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    """Random batch-norm statistics and biases, so that folding them is really tested."""
    rng = np.random.default_rng(seed)
    out = {}
    for k, v in params.items():
        a = v.numpy()
        if k.endswith(("_gamma", "_moving_var")):
            a = rng.uniform(0.5, 1.5, a.shape)
        elif k.endswith(("_beta", "_moving_mean", "_bias")):
            a = rng.normal(0.0, 0.2, a.shape)
        out[k] = a.astype("float32")
    return out


WORKLOADS = {
    "vgg11": lambda: vgg.get_workload(num_layers=11, image_shape=(3, 32, 32), num_classes=10),
    "resnet18": lambda: resnet.get_workload(num_layers=18, image_shape=(3, 32, 32)),
    "resnet50": lambda: resnet.get_workload(num_layers=50, image_shape=(3, 32, 32)),
    "mobilenet": lambda: mobilenet.get_workload(image_shape=(3, 32, 32), num_classes=10),
}


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_workload_fully_offloaded(dnnl, name):
    mod, params = WORKLOADS[name]()
    params = _randomized(params, seed=len(name))
    shape = tuple(mod["main"].params[0].type_annotation.shape)
    data = np.random.default_rng(1).uniform(-1, 1, shape).astype("float32")
    pmod = dnnl.check(mod, params, {"data": data}, rtol=1e-4, atol=1e-5)
    assert len(dnnl.dnnl_functions(pmod)) == 1
