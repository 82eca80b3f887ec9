"""LazyGradientInit: zeros and ones absorbed by arithmetic are left out; values unchanged."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.ir import IRModule
from relaykit.testing import count_ops
from relaykit.transform import InferType, LazyGradientInit, gradient


def _run(mod, *args):
    return relay.create_executor("debug", mod=mod).evaluate()(*args)


def test_gradient_keeps_its_values_and_loses_its_zero_accumulators():
    x, y = relay.var("x", shape=(3, 4)), relay.var("y", shape=(4,))
    fn = relay.Function([x, y], relay.multiply(relay.add(x, y), x))
    mod = InferType()(IRModule.from_expr(gradient(fn)))
    lazy = LazyGradientInit()(mod)
    assert lazy["main"].checked_type == mod["main"].checked_type
    before, after = count_ops(mod["main"]), count_ops(lazy["main"])
    assert after["zeros_like"] == 0 and after["ones_like"] == 0
    assert sum(after.values()) < sum(before.values())
    xd, yd = np.random.RandomState(0).rand(3, 4), np.random.RandomState(1).rand(4)
    xd, yd = xd.astype("float32"), yd.astype("float32")
    out, (gx, gy) = _run(lazy, xd, yd)
    np.testing.assert_allclose(out.numpy(), (xd + yd) * xd, rtol=1e-6)
    np.testing.assert_allclose(gx.numpy(), 2 * xd + yd, rtol=1e-6)  # d/dx (x+y)x
    np.testing.assert_allclose(gy.numpy(), xd.sum(axis=0), rtol=1e-6)


def test_absorbing_rules_broadcast_to_the_result():
    x = relay.var("x", shape=(4,))
    big_zero = relay.zeros((2, 4), "float32")
    body = relay.Tuple(
        [
            relay.add(x, big_zero),  # x broadcast to (2, 4)
            relay.subtract(relay.zeros_like(x), x),  # -x
            relay.multiply(x, relay.zeros((4,), "float32")),  # 0
        ]
    )
    mod = LazyGradientInit()(InferType()(IRModule.from_expr(relay.Function([x], body))))
    ops = count_ops(mod["main"])
    assert ops["add"] == ops["subtract"] == ops["multiply"] == 0
    xd = np.array([1.0, -2.0, 3.0, 0.5], "float32")
    a, b, c = _run(mod, xd)
    np.testing.assert_array_equal(a.numpy(), np.broadcast_to(xd, (2, 4)))
    np.testing.assert_array_equal(b.numpy(), -xd)
    np.testing.assert_array_equal(c.numpy(), np.zeros(4, "float32"))
