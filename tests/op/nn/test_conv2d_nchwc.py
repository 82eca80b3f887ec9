"""nn.contrib_conv2d_NCHWc against a direct NumPy convolution on unblocked arrays."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay


def _conv_nchw(x, w, pad, dil):
    n, _c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - dil * (kh - 1), wd + 2 * pad - dil * (kw - 1)
    out = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i * dil : i * dil + oh, j * dil : j * dil + ow]
            out += np.einsum("nchw,oc->nohw", win, w[:, :, i, j])
    return out


@pytest.mark.parametrize("dil", [1, 2])
def test_blocked_conv_matches_plain_conv(dil):
    rng = np.random.RandomState(dil)
    x = rng.rand(2, 8, 7, 6)  # NCHW, 8 channels
    w = rng.rand(6, 8, 3, 3)  # OIHW, 6 filters
    xb = x.reshape(2, 2, 4, 7, 6).transpose(0, 1, 3, 4, 2)  # NCHW4c
    wb = w.reshape(3, 2, 2, 4, 3, 3).transpose(0, 2, 4, 5, 3, 1)  # OIHW4i2o
    data = relay.var("data", shape=(relay.Any(), 2, 7, 6, 4), dtype="float64")
    kernel = relay.var("kernel", shape=wb.shape, dtype="float64")
    y = relay.nn.contrib_conv2d_nchwc(
        data, kernel, padding=(1, 1), dilation=(dil, dil), channels=6, kernel_size=(3, 3),
        data_layout="NCHW4c", kernel_layout="OIHW4i2o", out_layout="NCHW3c",
    )  # fmt: skip
    f = relay.Function([data, kernel], y)
    out = relay.create_executor("vm").evaluate(f)(xb, wb).numpy()
    want = _conv_nchw(x, w, 1, dil)
    n, _o, oh, ow = want.shape
    np.testing.assert_allclose(
        out, want.reshape(n, 2, 3, oh, ow).transpose(0, 1, 3, 4, 2), rtol=1e-10
    )


def test_layout_mismatch_is_reported():
    data = relay.var("data", shape=(1, 2, 5, 5, 4))
    kernel = relay.var("kernel", shape=(4, 2, 3, 3, 4, 2))
    y = relay.nn.contrib_conv2d_nchwc(data, kernel, data_layout="NCHW8c", kernel_layout="OIHW4i2o")
    with pytest.raises(Exception, match="do not match the layouts"):
        relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([data, kernel], y)))
