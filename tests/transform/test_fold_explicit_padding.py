"""FoldExplicitPadding: pads folded into convolutions and pools compute the same values."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.ir import IRModule
from relaykit.testing import count_ops
from relaykit.transform import FoldExplicitPadding, InferType

RNG = np.random.RandomState(0)


def _both(body, params, *arrays):
    mod = InferType()(IRModule.from_expr(relay.Function(params, body)))
    folded = FoldExplicitPadding()(mod)
    run = [relay.create_executor("vm", mod=m).evaluate()(*arrays).numpy() for m in (mod, folded)]
    return folded, run


def test_conv_pad_is_folded_and_values_agree():
    x, w = relay.var("x", shape=(1, 3, 9, 8)), relay.var("w", shape=(4, 3, 3, 3))
    body = relay.nn.conv2d(
        relay.nn.pad(x, [[0, 0], [0, 0], [2, 0], [1, 1]]), w, padding=[1, 0, 0, 1]
    )
    folded, (before, after) = _both(
        body, [x, w], RNG.rand(1, 3, 9, 8).astype("float32"), RNG.rand(4, 3, 3, 3).astype("float32")
    )
    assert count_ops(folded["main"])["nn.pad"] == 0
    assert tuple(folded["main"].body.attrs.padding) == (3, 1, 0, 2)
    np.testing.assert_allclose(after, before, rtol=1e-5)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_pools_fold_their_own_pad_value(layout):
    shape = (1, 2, 6, 6) if layout == "NCHW" else (1, 6, 6, 2)
    widths = (
        [[0, 0], [0, 0], [1, 0], [0, 2]] if layout == "NCHW" else [[0, 0], [1, 0], [0, 2], [0, 0]]
    )
    x = relay.var("x", shape=shape)
    xd = RNG.rand(*shape).astype("float32")
    low = float(np.finfo("float32").min)
    mx = relay.nn.max_pool2d(relay.nn.pad(x, widths, low), pool_size=2, layout=layout)
    folded, (before, after) = _both(mx, [x], xd)
    assert count_ops(folded["main"])["nn.pad"] == 0
    np.testing.assert_array_equal(after, before)
    avg = relay.nn.avg_pool2d(relay.nn.pad(x, widths, 0.0), pool_size=2, layout=layout)
    folded, (before, after) = _both(avg, [x], xd)
    assert folded["main"].body.attrs.count_include_pad
    np.testing.assert_allclose(after, before, rtol=1e-6)


def test_other_pads_stay():
    x = relay.var("x", shape=(1, 2, 6, 6))
    widths = [[0, 0], [0, 0], [1, 1], [1, 1]]
    cases = [
        relay.nn.max_pool2d(relay.nn.pad(x, widths, 0.0), pool_size=2),  # not the dtype's min
        relay.nn.avg_pool2d(relay.nn.pad(x, widths, 0.0), pool_size=2, padding=1),  # own pad
        relay.nn.avg_pool2d(relay.nn.pad(x, widths, 0.0, "edge"), pool_size=2),
        relay.nn.avg_pool2d(relay.nn.pad(x, [[0, 0], [1, 0], [0, 0], [0, 0]], 0.0), pool_size=2),
    ]
    for body in cases:
        mod = InferType()(IRModule.from_expr(relay.Function([x], body)))
        assert count_ops(FoldExplicitPadding()(mod)["main"])["nn.pad"] == 1
