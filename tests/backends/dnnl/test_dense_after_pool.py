"""A dense layer after global average pooling reads the pooled (N, C, 1, 1) tensor as the
plain (N, C) matrix it is (brgemm inner product, no reorder), in every activation layout,
and stays right when the blocked layout pads the channels; checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.backends.dnnl import partition_for_dnnl


@pytest.mark.parametrize("channels", [32, 20])
@pytest.mark.parametrize("layout", ["nhwc", "blocked"])
@pytest.mark.parametrize("batch", [1, 3])
def test_conv_pool_dense_matches_numpy(dnnl, channels, layout, batch):
    rng = np.random.default_rng(channels)
    w = rng.standard_normal((channels, 3, 1, 1)).astype("float32")
    d = rng.standard_normal((10, channels)).astype("float32")
    bias = rng.standard_normal(10).astype("float32")

    def net(x):
        y = relay.nn.relu(relay.nn.conv2d(x, relay.const(w)))
        y = relay.nn.batch_flatten(relay.mean(y, axis=(2, 3), keepdims=True))
        return relay.nn.bias_add(relay.nn.dense(y, relay.const(d)), relay.const(bias))

    mod = dnnl.module_of(net, (batch, 3, 6, 5))
    pmod = partition_for_dnnl(mod)
    assert dnnl.host_ops(pmod) == []
    x = rng.standard_normal((batch, 3, 6, 5)).astype("float32")
    (got,) = dnnl.run_lib(dnnl.build(pmod, layout=layout), {"x0": x})
    y = np.maximum(np.einsum("nchw,oc->nohw", x.astype(np.float64), w[:, :, 0, 0]), 0)
    want = y.mean(axis=(2, 3)) @ d.T.astype(np.float64) + bias
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
