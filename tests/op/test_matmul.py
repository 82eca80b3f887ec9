"""nn.matmul against NumPy's matmul, its shape rules and weight deduction."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.ir import IRModule, TensorType
from relaykit.op import TypeRelError
from relaykit.transform import InferType


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_matches_numpy(run, tvar, ta, tb):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4)).astype("float32")  # (batch, M, K)
    b = rng.standard_normal((4, 5)).astype("float32")  # (K, N)
    a_in = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if ta else a
    b_in = np.ascontiguousarray(b.T) if tb else b
    call = relay.nn.matmul(
        tvar("a", a_in.shape), tvar("b", b_in.shape), transpose_a=ta, transpose_b=tb
    )
    assert call.op.name == ("nn.dense" if tb and not ta else "nn.matmul")
    np.testing.assert_allclose(run(call, a_in, b_in), a @ b, rtol=1e-5, atol=1e-5)


def test_matmul_checks_the_reduction_dim(rel, tvar):
    with pytest.raises(TypeRelError, match="reduction"):
        rel(relay.nn.matmul(tvar("a", (2, 3)), tvar("b", (4, 5))))


def test_matmul_deduces_an_unannotated_b_from_units():
    x = relay.var("x", shape=(6, 4))
    w = relay.var("w")
    f = relay.Function([x, w], relay.nn.matmul(x, w, units=3, transpose_a=True))
    typed = InferType()(IRModule.from_expr(f))["main"]
    assert typed.params[1].checked_type == TensorType((6, 3))
    assert typed.body.checked_type == TensorType((4, 3))
