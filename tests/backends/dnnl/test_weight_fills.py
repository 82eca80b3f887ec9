"""A fill (``full``/``zeros``/``ones``) as the weight of a dense or convolution becomes a
constant before partitioning, so the layer runs on oneDNN (VGG-19's ConstantOfShape weights)."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends.dnnl import partition as part
from relaykit.backends.dnnl import partition_for_dnnl


@pytest.fixture(autouse=True)
def _no_folding():
    """FoldConstant folds small fills itself; without it, these fills are as large ones
    (over its 64 MiB bound) are, and only MaterializeWeightFills can make them constants."""
    with tvm.transform.PassContext(config={"relay.FoldConstant.max_bytes": 0}):
        yield


def _conv_ref(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Valid NCHW/OIHW convolution in float64 loops."""
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, h - kh + 1, wd - kw + 1))
    for i in range(h - kh + 1):
        for j in range(wd - kw + 1):
            patch = x[:, :, i : i + kh, j : j + kw].astype(np.float64)
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w.astype(np.float64))
    return out


def test_full_weight_of_a_dense_is_offloaded(dnnl):
    mod = dnnl.module_of(
        lambda x: relay.nn.relu(relay.nn.dense(x, relay.full(relay.const(0.25), (16, 8)))),
        (2, 8),
    )
    pmod = partition_for_dnnl(mod)
    assert dnnl.host_ops(pmod) == []
    x = np.random.default_rng(0).standard_normal((2, 8)).astype("float32")
    (got,) = dnnl.run_lib(dnnl.build(pmod), {"x0": x})
    want = np.maximum(x.astype(np.float64) @ np.full((8, 16), 0.25), 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_ones_weight_of_a_convolution_is_offloaded(dnnl):
    mod = dnnl.module_of(
        lambda x: relay.nn.conv2d(x, relay.ones((4, 3, 3, 3), "float32"), channels=4),
        (1, 3, 7, 7),
    )
    pmod = partition_for_dnnl(mod)
    assert dnnl.host_ops(pmod) == []
    x = np.random.default_rng(1).standard_normal((1, 3, 7, 7)).astype("float32")
    (got,) = dnnl.run_lib(dnnl.build(pmod), {"x0": x})
    np.testing.assert_allclose(got, _conv_ref(x, np.ones((4, 3, 3, 3))), rtol=1e-5, atol=1e-5)


def test_a_fill_of_a_runtime_value_stays_a_fill(dnnl):
    mod = dnnl.module_of(lambda x, v: relay.nn.dense(x, relay.full(v, (16, 8))), (2, 8), ())
    pmod = partition_for_dnnl(mod)
    assert "full" in dnnl.host_ops(pmod)


def test_a_fill_beyond_the_bound_stays_on_the_host(dnnl, monkeypatch):
    monkeypatch.setattr(part, "MAX_WEIGHT_FILL_BYTES", 16 * 8 * 4 - 1)
    mod = dnnl.module_of(lambda x: relay.nn.dense(x, relay.full(relay.const(0.5), (16, 8))), (2, 8))
    assert sorted(dnnl.host_ops(partition_for_dnnl(mod))) == ["full", "nn.dense"]
