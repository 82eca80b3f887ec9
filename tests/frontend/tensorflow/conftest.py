"""Fixtures of the TensorFlow frontend tests: build a small graph with
``tf.compat.v1``, run it in TensorFlow, import it and run it in relaykit."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="the TensorFlow frontend tests need tensorflow")


def run_relay(mod: Any, params: Mapping[str, Any], feeds: Mapping[str, np.ndarray]) -> list:
    """Build ``mod`` (relay.build) and run it on the graph executor."""
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


def compare(
    build: Callable[..., Any],
    feeds: Mapping[str, np.ndarray],
    layout: str = "NHWC",
    rtol: float = 1e-5,
    atol: float = 1e-5,
    config: Mapping[str, Any] | None = None,
) -> Any:
    """``build(**placeholders)`` returns the output tensor(s); the graph runs in a
    TensorFlow session and through ``from_tensorflow`` and the outputs must agree."""
    from relaykit.frontend.tensorflow import from_tensorflow

    graph = tf.Graph()
    with graph.as_default():
        phs = {
            name: tf.compat.v1.placeholder(tf.as_dtype(v.dtype), v.shape, name=name)
            for name, v in feeds.items()
        }
        outs = build(**phs)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    names = [t.name for t in outs]
    with tf.compat.v1.Session(graph=graph) as sess:
        want = sess.run(names, {f"{k}:0": v for k, v in feeds.items()})
    mod, params = from_tensorflow(
        graph.as_graph_def(),
        layout=layout,
        shape={k: v.shape for k, v in feeds.items()},
        outputs=names,
        convert_config=config,
    )
    got = run_relay(mod, params, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return mod


@pytest.fixture(scope="session")
def check() -> Callable[..., Any]:
    return compare


@pytest.fixture(scope="session")
def relay_run() -> Callable[..., Any]:
    return run_relay
