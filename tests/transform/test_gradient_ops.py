"""Operator gradients: elementwise math against NumPy float64 closed forms, nn operators
against central finite differences computed here in float64."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.ir import IRModule
from relaykit.transform import gradient

# name -> (relay op, x sampler range, d f / d x in float64)
UNARY = {
    "sin": (relay.sin, (-2, 2), np.cos),
    "cos": (relay.cos, (-2, 2), lambda x: -np.sin(x)),
    "tan": (relay.tan, (-1, 1), lambda x: 1 / np.cos(x) ** 2),
    "sinh": (relay.sinh, (-2, 2), np.cosh),
    "cosh": (relay.cosh, (-2, 2), np.sinh),
    "atan": (relay.atan, (-3, 3), lambda x: 1 / (1 + x * x)),
    "asin": (relay.asin, (-0.9, 0.9), lambda x: 1 / np.sqrt(1 - x * x)),
    "acos": (relay.acos, (-0.9, 0.9), lambda x: -1 / np.sqrt(1 - x * x)),
    "asinh": (relay.asinh, (-3, 3), lambda x: 1 / np.sqrt(x * x + 1)),
    "acosh": (relay.acosh, (1.1, 4), lambda x: 1 / np.sqrt(x * x - 1)),
    "atanh": (relay.atanh, (-0.9, 0.9), lambda x: 1 / (1 - x * x)),
    "log2": (relay.log2, (0.1, 5), lambda x: 1 / (x * np.log(2))),
    "log10": (relay.log10, (0.1, 5), lambda x: 1 / (x * np.log(10))),
    "rsqrt": (relay.rsqrt, (0.1, 5), lambda x: -0.5 * x**-1.5),
    "erf": (relay.erf, (-2, 2), lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)),
}


def _grads(fn, *args):
    g = gradient(relay.transform.InferType()(IRModule.from_expr(fn))["main"])
    out, grads = relay.create_executor("debug", mod=IRModule.from_expr(g)).evaluate()(*args)
    return out, [x.numpy() for x in grads]


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_gradient_matches_closed_form(name, dtype):
    op, (lo, hi), deriv = UNARY[name]
    rng = np.random.default_rng(7)
    xd = rng.uniform(lo, hi, size=(3, 4)).astype(dtype)
    gd = rng.uniform(0.5, 1.5, size=(3, 4)).astype(dtype)
    x, g = relay.var("x", shape=(3, 4), dtype=dtype), relay.var("g", shape=(3, 4), dtype=dtype)
    _, (gx, _) = _grads(relay.Function([x, g], relay.multiply(op(x), g)), xd, gd)
    x64 = xd.astype("float64")
    rtol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(gx, deriv(x64) * gd, rtol=rtol)
    assert gx.dtype == dtype
