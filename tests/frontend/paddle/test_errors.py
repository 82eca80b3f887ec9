"""``from_paddle``'s errors: what was wrong, where, and what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from relaykit.errors import FrontendError, UnsupportedOpError

paddle = pytest.importorskip("paddle", reason="the PaddlePaddle frontend tests need paddle")


class _Unsupported(paddle.nn.Layer):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return paddle.linalg.det(x) + paddle.trace(x) + paddle.linalg.det(x * 2)


def _load(layer: Any, shape: list[int], path: Path) -> Any:
    spec = [paddle.static.InputSpec(shape, "float32", "x")]
    paddle.jit.save(layer, str(path / "model"), input_spec=spec)
    return paddle.jit.load(str(path / "model"))


def test_every_unsupported_op_is_listed_with_its_count(tmp_path: Path) -> None:
    from relaykit import relay

    loaded = _load(_Unsupported(), [3, 3], tmp_path)
    with pytest.raises(UnsupportedOpError) as info:
        relay.frontend.from_paddle(loaded)
    text = str(info.value)
    assert "pd_op.det: 2 ops (first: paddle op pd_op.det (op " in text
    assert "pd_op.trace: 1 op (first" in text and "CONVERTERS" in text


def test_unknown_input_size_asks_for_shape_dict(tmp_path: Path) -> None:
    from relaykit import relay

    loaded = _load(paddle.nn.ReLU(), [-1, 4], tmp_path)
    with pytest.raises(FrontendError, match=r"input 'x' has the shape \[-1, 4\].*shape_dict"):
        relay.frontend.from_paddle(loaded)
    mod, _ = relay.frontend.from_paddle(loaded, {"x": [2, 4]})
    assert "Tensor[(2, 4), float32]" in mod.astext()
    with pytest.raises(FrontendError, match=r"shape_dict names \['y'\]"):
        relay.frontend.from_paddle(loaded, {"y": [2, 4]})
    with pytest.raises(FrontendError, match=r"gives input 'x' the shape \[2, 5\]"):
        relay.frontend.from_paddle(loaded, {"x": [2, 5]})


def test_a_layer_not_loaded_by_jit_load_is_refused() -> None:
    from relaykit import relay

    with pytest.raises(FrontendError, match="paddle.jit.save"):
        relay.frontend.from_paddle(paddle.nn.Linear(2, 2))
    with pytest.raises(FrontendError, match="not a ndarray"):
        relay.frontend.from_paddle(np.zeros(3))
