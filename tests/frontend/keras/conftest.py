"""Helpers of the Keras frontend tests: random weights for a model, and a check that
runs a converted model in both layouts against Keras itself."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
keras = pytest.importorskip("keras")
pytest.importorskip("tensorflow")


def randomize(model: Any, seed: int = 0) -> Any:
    """Give every weight of ``model`` random values (variances positive), so that zero
    biases or unit batch-norm statistics cannot hide a mistake."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        shape = tuple(w.shape)
        if "variance" in w.path:
            value = rng.uniform(0.5, 1.5, shape)
        else:
            value = rng.uniform(-1.0, 1.0, shape)
        w.assign(value.astype(w.dtype))
    return model


def keras_outputs(model: Any, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """What Keras computes at inference (``model(x, training=False)``)."""
    out = model(list(inputs) if len(inputs) > 1 else inputs[0], training=False)
    outs = out if isinstance(out, (list, tuple)) else [out]
    return [np.asarray(keras.ops.convert_to_numpy(o)) for o in outs]


def run_relay(mod: Any, params: dict[str, Any], inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Build ``mod`` and run it on the graph executor with ``inputs`` in order."""
    import relaykit as tvm
    from relaykit import relay
    from relaykit.contrib import graph_executor

    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for var, value in zip(mod["main"].params, inputs, strict=False):
        gmod.set_input(var.name_hint, value)
    gmod.run()
    return [gmod.get_output(i).numpy() for i in range(gmod.get_num_outputs())]


def channels_first(arr: np.ndarray) -> np.ndarray:
    return arr.transpose([0, arr.ndim - 1, *range(1, arr.ndim - 1)]) if arr.ndim in (4, 5) else arr


def channels_last(arr: np.ndarray) -> np.ndarray:
    return arr.transpose([0, *range(2, arr.ndim), 1]) if arr.ndim in (4, 5) else arr


def check(
    model: Any,
    inputs: Sequence[np.ndarray],
    layouts: Sequence[str] = ("NHWC", "NCHW"),
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> None:
    """Convert ``model`` in each layout, run it, and compare with Keras."""
    from relaykit.frontend.keras import from_keras

    expected = keras_outputs(model, inputs)
    for layout in layouts:
        first = layout == "NCHW"
        feeds = [channels_first(x) if first else x for x in inputs]
        names = [t._keras_history.operation.name for t in model.inputs]
        shapes = {n: x.shape for n, x in zip(names, feeds, strict=True)}
        mod, params = from_keras(model, shapes, layout=layout)
        got = run_relay(mod, params, feeds)
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            g = channels_last(g) if first else g
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=layout)


def rand(*shape: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


@pytest.fixture
def layers() -> Any:
    return keras.layers
