"""relay.variance / std / mean_variance / mean_std against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay


@pytest.mark.parametrize(
    "axis,keepdims,exclude",
    [(None, False, False), (1, True, False), ((0, 2), False, False), (1, False, True)],
)
@pytest.mark.parametrize("unbiased", [False, True])
def test_variance_and_std_match_numpy(axis, keepdims, exclude, unbiased):
    x = np.random.default_rng(1).normal(size=(3, 4, 5)).astype("float32")
    np_axis = axis
    if exclude:
        np_axis = tuple(
            a for a in range(3) if a not in ((axis,) if isinstance(axis, int) else axis)
        )
    v = relay.var("x", shape=x.shape)
    args = (axis, keepdims, exclude, unbiased)
    f = relay.Function([v], relay.Tuple([relay.variance(v, *args), relay.std(v, *args)]))
    var, std = relay.create_executor("graph").evaluate(f)(x)
    ddof = 1 if unbiased else 0
    want = np.var(x.astype(np.float64), axis=np_axis, keepdims=keepdims, ddof=ddof)
    np.testing.assert_allclose(var.numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(std.numpy(), np.sqrt(want), rtol=1e-5)


def test_mean_variance_is_a_pair():
    x = np.arange(12, dtype="float32").reshape(3, 4)
    v = relay.var("x", shape=x.shape)
    mean, var = relay.mean_variance(v, axis=1)
    f = relay.Function([v], relay.Tuple([mean, var]))
    m, s = relay.create_executor().evaluate(f)(x)
    np.testing.assert_allclose(m.numpy(), x.mean(axis=1))
    np.testing.assert_allclose(s.numpy(), x.var(axis=1))
