"""CombineParallelDense in both of TVM's forms, checked against NumPy float64."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.ir import IRModule

RNG = np.random.default_rng(7)


def _model(widths: tuple[int, ...]) -> tuple[IRModule, list[np.ndarray]]:
    x = relay.var("x", shape=(3, 4))
    ws = [relay.var(f"w{i}", shape=(n, 4)) for i, n in enumerate(widths)]
    bs = [relay.var(f"b{i}", shape=(n,)) for i, n in enumerate(widths)]
    outs = [relay.nn.relu(relay.add(relay.nn.dense(x, w), b)) for w, b in zip(ws, bs, strict=True)]
    f = relay.Function([x, *ws, *bs], relay.Tuple(outs))
    values = [RNG.standard_normal((3, 4)).astype("float32")]
    values += [RNG.standard_normal((n, 4)).astype("float32") for n in widths]
    values += [RNG.standard_normal(n).astype("float32") for n in widths]
    return IRModule.from_expr(f), values


def _reference(values: list[np.ndarray], count: int) -> list[np.ndarray]:
    x = values[0].astype("float64")
    ws, bs = values[1 : 1 + count], values[1 + count :]
    return [np.maximum(x @ w.astype("float64").T + b, 0) for w, b in zip(ws, bs, strict=True)]


@pytest.mark.parametrize(
    ("to_batch", "widths", "root"),
    [(True, (5, 5, 5), "nn.batch_matmul"), (False, (5, 2, 7), "nn.dense")],
)
def test_combined_branches_compute_the_same(to_batch: bool, widths: tuple[int, ...], root: str):
    mod, values = _model(widths)
    out = relay.transform.CombineParallelDense(min_num_branches=3, to_batch=to_batch)(mod)
    text = str(out)
    assert text.count(root) == 1 and text.count("nn.dense(") == (1 if root == "nn.dense" else 0)
    got = relay.create_executor("debug", mod=out).evaluate()(*values)
    for g, want in zip(got, _reference(values, len(widths)), strict=True):
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-5, atol=1e-5)


def test_batch_form_needs_one_weight_shape():
    mod, _ = _model((5, 2, 7))
    out = relay.transform.CombineParallelDense(min_num_branches=3, to_batch=True)(mod)
    assert "batch_matmul" not in str(out)
