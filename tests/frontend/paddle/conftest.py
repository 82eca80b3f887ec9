"""Helpers of the PaddlePaddle frontend tests: save a layer and load it back as a user
does (``paddle.jit.save`` / ``paddle.jit.load``), run an imported module, and compare
with paddle's own output."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

paddle = pytest.importorskip("paddle", reason="the PaddlePaddle frontend tests need paddle")


def save_load(layer: Any, specs: Sequence[tuple[str, Sequence[int], str]], path: Path) -> Any:
    """``layer`` saved with one ``InputSpec`` per ``(name, shape, dtype)`` and loaded
    back with ``paddle.jit.load`` (Paddle 3's default IR, PIR)."""
    layer.eval()
    spec = [paddle.static.InputSpec(list(shape), dtype, name) for name, shape, dtype in specs]
    prefix = str(path / "model")
    paddle.jit.save(layer, prefix, input_spec=spec)
    loaded = paddle.jit.load(prefix)
    # with FLAGS_enable_pir_api=0 (test_programs.py runs some of these tests so) the
    # program is a ProgramDesc
    pir = paddle.framework.use_pir_api()
    assert type(loaded).__name__ == ("PirTranslatedLayer" if pir else "TranslatedLayer")
    return loaded


def run_relay(mod: Any, params: dict[str, Any], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Build ``mod`` (relay.build, opt level 3) and run it on the graph executor."""
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


def assert_close(got: Sequence[np.ndarray], want: Sequence[Any], rtol: float = 1e-5) -> None:
    """Each output of the same shape and dtype as paddle's, within ``rtol`` of it
    relative to the output's largest magnitude."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w.numpy() if hasattr(w, "numpy") else w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        scale = max(float(np.abs(w).max()), 1e-6) if w.size else 1.0
        err = float(np.abs(g.astype(np.float64) - w).max()) / scale if w.size else 0.0
        assert err <= rtol, f"relative error {err:.2e} > {rtol}"


def check_layer(
    layer: Any, feeds: dict[str, np.ndarray], path: Path, rtol: float = 1e-5
) -> tuple[Any, dict[str, Any]]:
    """Save/load ``layer``, import it with ``from_paddle`` and compare its outputs with
    the loaded layer's on ``feeds``; the module and params."""
    from relaykit import relay

    specs = [(name, value.shape, str(value.dtype)) for name, value in feeds.items()]
    loaded = save_load(layer, specs, path)
    want = loaded(*[paddle.to_tensor(v) for v in feeds.values()])
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    mod, params = relay.frontend.from_paddle(loaded, {k: v.shape for k, v in feeds.items()})
    assert [p.name_hint for p in mod["main"].params] == list(feeds)  # weights are constants
    assert_close(run_relay(mod, params, feeds), want, rtol)
    return mod, params


@pytest.fixture(autouse=True)
def _seeded() -> None:
    paddle.seed(0)


@pytest.fixture(scope="session")
def check() -> Any:
    """:func:`check_layer`."""
    return check_layer


@pytest.fixture(scope="session")
def saved() -> Any:
    """:func:`save_load`."""
    return save_load


@pytest.fixture(scope="session")
def relay_run() -> Any:
    """:func:`run_relay`."""
    return run_relay


@pytest.fixture(scope="session")
def close() -> Any:
    """:func:`assert_close`."""
    return assert_close
