"""nn.adaptive_avg_pool1d / nn.adaptive_max_pool1d against windows computed here."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import RelayTypeError
from relaykit.ir import IRModule

RNG = np.random.default_rng(7)


def windows(width: int, out: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive window bounds: floor(i*W/out) .. ceil((i+1)*W/out)."""
    return [((i * width) // out, -(-(i + 1) * width // out)) for i in range(out)]


@pytest.mark.parametrize("out_size", [None, 1, 3, 4])
@pytest.mark.parametrize("kind", ["avg", "max"])
def test_adaptive_pool1d_ncw(out_size: int | None, kind: str) -> None:
    data = RNG.standard_normal((2, 3, 10)).astype("float32")
    x = relay.var("x", shape=data.shape)
    fn = relay.nn.adaptive_avg_pool1d if kind == "avg" else relay.nn.adaptive_max_pool1d
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function([x], fn(x, out_size))))
    got = relay.create_executor("debug", mod=mod).evaluate()(data).numpy()
    width = 10 if out_size is None else out_size
    reduce = np.mean if kind == "avg" else np.max
    want = np.stack(
        [reduce(data[:, :, a:b].astype(np.float64), axis=2) for a, b in windows(10, width)], axis=2
    )
    assert got.shape == (2, 3, width)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_adaptive_pool1d_nwc_and_bad_layout() -> None:
    data = RNG.standard_normal((1, 9, 2)).astype("float32")
    x = relay.var("x", shape=data.shape)
    y = relay.nn.adaptive_avg_pool1d(x, 3, layout="NWC")
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function([x], y)))
    got = relay.create_executor("debug", mod=mod).evaluate()(data).numpy()
    want = data.reshape(1, 3, 3, 2).mean(axis=2)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    bad = relay.nn.adaptive_avg_pool1d(x, 3, layout="NCHW")
    with pytest.raises(RelayTypeError, match="layout .NCHW."):
        relay.transform.InferType()(IRModule.from_expr(relay.Function([x], bad)))
