"""nn.dense, nn.batch_matmul and nn.bias_add against naive loops; nn.matmul against
NumPy's matmul, its shape rules and weight deduction."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from relaykit import op, relay
from relaykit.errors import RelayTypeError
from relaykit.ir import IRModule, TensorType
from relaykit.op import TypeRelError, nn
from relaykit.transform import InferType


def test_dense(run, rel, tvar, rng):
    x = rng.standard_normal((2, 3, 5)).astype("float32")
    w = rng.standard_normal((4, 5)).astype("float32")
    call = nn.dense(tvar("x", x.shape), tvar("w", w.shape), units=4)
    out = run(call, x, w)
    want = np.zeros((2, 3, 4))
    for i, j, u, k in itertools.product(range(2), range(3), range(4), range(5)):
        want[i, j, u] += float(x[i, j, k]) * float(w[u, k])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeRelError, match="has 5 features but the weight .* expects 6"):
        rel(nn.dense(tvar("x", (2, 5)), tvar("w", (4, 6))))
    with pytest.raises(TypeRelError, match="units=3 but the weight"):
        rel(nn.dense(tvar("x", (2, 5)), tvar("w", (4, 5)), units=3))
    with pytest.raises(TypeRelError, match="weight must be 2-D"):
        rel(nn.dense(tvar("x", (2, 5)), tvar("w", (5,))))


@pytest.mark.parametrize("ta, tb", [(False, True), (False, False), (True, False), (True, True)])
@pytest.mark.parametrize("ba, bb", [(3, 3), (1, 3), (3, 1)])
def test_batch_matmul(ta, tb, ba, bb, run, tvar, rng):
    m, n, k = 2, 4, 5
    a = rng.standard_normal((ba, k, m) if ta else (ba, m, k)).astype("float32")
    b = rng.standard_normal((bb, n, k) if tb else (bb, k, n)).astype("float32")
    call = nn.batch_matmul(tvar("a", a.shape), tvar("b", b.shape), transpose_a=ta, transpose_b=tb)
    out = run(call, a, b)
    aa = a.transpose(0, 2, 1) if ta else a
    bt = b.transpose(0, 2, 1) if tb else b
    want = np.einsum("bmk,bkn->bmn", np.broadcast_to(aa, (3, m, k)), np.broadcast_to(bt, (3, k, n)))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_batch_matmul_defaults_and_errors(rel, tvar):
    call = nn.batch_matmul(tvar("a", (2, 3, 4)), tvar("b", (2, 5, 4)))
    assert (
        call.attrs.transpose_b is True
        and op.get("nn.batch_matmul").attrs_schema["transpose_b"] is False
    )
    assert rel(call) == TensorType((2, 3, 5))
    with pytest.raises(TypeRelError, match="reduction dimensions differ: 4 .* and 5"):
        rel(nn.batch_matmul(tvar("a", (2, 3, 4)), tvar("b", (2, 4, 5))))
    with pytest.raises(TypeRelError, match="batch dimensions 2 and 3 differ"):
        rel(nn.batch_matmul(tvar("a", (2, 3, 4)), tvar("b", (3, 5, 4))))


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


def test_bias_add(run, rel, tvar):
    x = np.zeros((2, 3, 2), dtype="float32")
    b = np.array([1.0, 2.0, 3.0], dtype="float32")
    out = run(nn.bias_add(tvar("x", (2, 3, 2)), tvar("b", (3,))), x, b)
    assert out[1, :, 1].tolist() == [1.0, 2.0, 3.0]
    out_last = run(
        nn.bias_add(tvar("x", (2, 2, 3)), tvar("b", (3,)), axis=-1), x.reshape(2, 2, 3), b
    )
    assert out_last[1, 1].tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(
        TypeRelError, match=r"bias .* must be Tensor\[\(3\), float32\], got Tensor\[\(4\)"
    ):
        rel(nn.bias_add(tvar("x", (2, 3)), tvar("b", (4,))))
    with pytest.raises(TypeRelError, match="bias_add axis 2 is out of range"):
        rel(nn.bias_add(tvar("x", (2, 3)), tvar("b", (3,)), axis=2))


def test_batch_matmul_mixed_integer_dtypes_with_out_dtype():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 255, (2, 3, 5)).astype("uint8")
    b = rng.integers(-128, 127, (2, 4, 5)).astype("int8")
    x = relay.var("x", shape=a.shape, dtype="uint8")
    y = relay.var("y", shape=b.shape, dtype="int8")
    mod = IRModule.from_expr(relay.Function([x, y], relay.nn.batch_matmul(x, y, out_dtype="int32")))
    out = relay.create_executor("debug", mod=mod).evaluate()(a, b).numpy()
    want = np.einsum("bmk,bnk->bmn", a.astype(np.int64), b.astype(np.int64))
    np.testing.assert_array_equal(out, want)
    assert out.dtype == "int32"
    with pytest.raises(RelayTypeError, match="dtype"):
        relay.transform.InferType()(
            IRModule.from_expr(relay.Function([x, y], relay.nn.batch_matmul(x, y)))
        )
