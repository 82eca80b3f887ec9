"""A mean over the spatial axes of an NCHW tensor (torch's exported adaptive average
pooling to 1x1) runs in the dnnl region as global average pooling; other means stay out."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.backends.dnnl import partition_for_dnnl

W = np.random.default_rng(3).standard_normal((6, 3, 3, 3)).astype("float32")


@pytest.mark.parametrize(
    ("axis", "keepdims", "exclude"),
    [((2, 3), False, False), ((-1, -2), True, False), ((0, 1), False, True)],
)
def test_spatial_mean_after_a_convolution_is_in_the_region(dnnl, axis, keepdims, exclude):
    def net(x):
        y = relay.nn.relu(relay.nn.conv2d(x, relay.const(W), padding=(1, 1)))
        return relay.mean(y, axis=axis, keepdims=keepdims, exclude=exclude)

    mod = dnnl.module_of(net, (1, 3, 9, 7))
    pmod = partition_for_dnnl(mod)
    assert dnnl.host_ops(pmod) == []
    assert len(dnnl.dnnl_functions(pmod)) == 1
    x = np.random.default_rng(0).standard_normal((1, 3, 9, 7)).astype("float32")
    (got,) = dnnl.run_lib(dnnl.build(pmod), {"x0": x})
    want = np.maximum(dnnl.conv_ref(x, W), 0).mean(axis=(2, 3), keepdims=keepdims)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", [(1,), (1, 2, 3), (3,)])
def test_other_means_stay_on_the_host(dnnl, axis):
    mod = dnnl.module_of(lambda x: relay.mean(relay.nn.relu(x), axis=axis), (1, 4, 5, 6))
    pmod = partition_for_dnnl(mod)
    assert "mean" in dnnl.host_ops(pmod)
