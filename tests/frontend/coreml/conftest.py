"""Helpers of the Core ML frontend tests: NeuralNetworkBuilder models with random
weights, run through relaykit and compared with NumPy float64 written in the tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

ct = pytest.importorskip("coremltools", reason="the Core ML frontend tests need coremltools")


@pytest.fixture()
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def network(
    inputs: Sequence[tuple[str, Sequence[int]]],
    outputs: Sequence[str],
    add_layers: Callable[[Any], None],
    mode: str | None = None,
) -> Any:
    """A NeuralNetwork spec: ``inputs`` as (name, [C, H, W]) arrays, the layers added by
    ``add_layers(builder)``."""
    from coremltools.models import datatypes
    from coremltools.models.neural_network import NeuralNetworkBuilder

    builder = NeuralNetworkBuilder(
        [(name, datatypes.Array(*shape)) for name, shape in inputs],
        [(name, None) for name in outputs],
        mode=mode,
    )
    add_layers(builder)
    return builder


def run_coreml(model: Any, feeds: dict[str, np.ndarray], shape: Any = None) -> list[np.ndarray]:
    """Import ``model`` with from_coreml, build it (opt_level 3) and run it."""
    import relaykit as tvm
    from relaykit import relay
    from relaykit.contrib import graph_executor

    mod, params = relay.frontend.from_coreml(model, shape)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for name, value in feeds.items():
        m.set_input(name, value.astype(np.float32))
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


def check(
    builder: Any, feeds: dict[str, np.ndarray], want: Any, rtol: float = 1e-4, atol: float = 1e-5
) -> None:
    """The model of ``builder`` on ``feeds`` gives ``want`` (one array or a list)."""
    got = run_coreml(builder.spec, feeds)
    wants = want if isinstance(want, list) else [want]
    assert len(got) == len(wants)
    for g, w in zip(got, wants, strict=True):
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
