"""create_executor("graph").evaluate(f)(...) passes inputs by position, so two
parameters may share a name (as TVM allows)."""

from __future__ import annotations

import numpy as np

from relaykit import relay


def test_parameters_with_the_same_name_run_by_position():
    x, y = relay.var("x", shape=(2,)), relay.var("x", shape=(2,))
    f = relay.Function([x, y], relay.subtract(x, y))
    a, b = np.array([1.0, 2.0], "float32"), np.array([5.0, 7.0], "float32")
    out = relay.create_executor("graph").evaluate(f)(a, b)
    np.testing.assert_array_equal(out.numpy(), a - b)
