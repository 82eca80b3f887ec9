"""``nn.max_pool2d_with_argmax`` against a loop written from its definition (one window
at a time)."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.ir import TensorType, TupleType
from relaykit.op import TypeRelError, nn


def naive_argmax_pool(x, pool, strides, dilation, padding, storage_order=0):
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = pool, strides, dilation
    pt, pl, pb, pr = padding
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pl + pr - (kw - 1) * dw - 1) // sw + 1
    values = np.zeros((n, c, oh, ow), x.dtype)
    index = np.zeros((n, c, oh, ow), np.int64)
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    best = None
                    for a in range(kh):
                        for e in range(kw):
                            y, z = i * sh + a * dh - pt, j * sw + e * dw - pl
                            if (
                                0 <= y < h
                                and 0 <= z < w
                                and (best is None or x[b, ch, y, z] > best[0])
                            ):
                                best = (x[b, ch, y, z], y, z)
                    values[b, ch, i, j] = best[0]
                    plane = (b * c + ch) * h * w
                    index[b, ch, i, j] = plane + (
                        best[2] * h + best[1] if storage_order else best[1] * w + best[2]
                    )
    return values, index


@pytest.mark.parametrize(
    "pool, strides, dilation, padding, order",
    [
        ((2, 2), (2, 2), (1, 1), (0, 0, 0, 0), 0),
        ((3, 3), (1, 2), (1, 1), (1, 1, 1, 1), 0),
        ((2, 3), (1, 1), (2, 1), (0, 1, 2, 0), 1),
    ],
)
def test_max_pool2d_with_argmax_matches_a_loop(
    rng, run, tvar, pool, strides, dilation, padding, order
):
    x = rng.standard_normal((2, 3, 7, 6)).astype("float32")
    call = nn.max_pool2d_with_argmax(
        tvar("x", x.shape), pool, strides, dilation, padding, storage_order=order
    ).astuple()
    values, index = run(call, x)
    want_v, want_i = naive_argmax_pool(x, pool, strides, dilation, padding, order)
    np.testing.assert_array_equal(values, want_v)
    np.testing.assert_array_equal(index, want_i)
    # the indices point at the values in the flattened input
    flat = x.transpose(0, 1, 3, 2).reshape(-1) if order else x.reshape(-1)
    np.testing.assert_array_equal(flat[index], values)


def test_max_pool2d_with_argmax_type(rel, tvar):
    call = nn.max_pool2d_with_argmax(tvar("x", (1, 2, 5, 5)), (2, 2), (2, 2)).astuple()
    assert rel(call) == TupleType([TensorType((1, 2, 2, 2)), TensorType((1, 2, 2, 2), "int64")])
    bad = nn.max_pool2d_with_argmax(tvar("x", (1, 2, 5, 5)), (2, 2), layout="NHWC").astuple()
    with pytest.raises(TypeRelError, match="layout NCHW"):
        rel(bad)
