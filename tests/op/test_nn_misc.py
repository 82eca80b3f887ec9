"""Activations, normalisation, dropout, flatten, pad, bias_add and annotations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relaykit import op
from relaykit.ir import TensorType, TupleGetItem, TupleType, TupleWrapper, const
from relaykit.op import TypeRelError, annotation, nn


def test_relu_leaky_prelu(run, rel, tvar):
    x = np.array([[-2.0, 0.0, 3.0]], dtype="float32")
    v = tvar("x", (1, 3))
    assert run(nn.relu(v), x).tolist() == [[0.0, 0.0, 3.0]]
    leaky = nn.leaky_relu(v, alpha=0.1)
    assert run(leaky, x).ravel().tolist() == pytest.approx([-0.2, 0.0, 3.0])
    assert nn.leaky_relu(v).attrs.alpha == 0.01
    assert op.get("nn.leaky_relu").attrs_schema["alpha"] == 0.25  # TVM's C++ default
    alpha = np.array([0.5, 0.25, 2.0], dtype="float32")
    out = run(nn.prelu(v, tvar("a", (3,)), axis=1), x, alpha)
    assert out.tolist() == [[-1.0, 0.0, 3.0]]
    with pytest.raises(
        TypeRelError, match=r"alpha \(for axis 0 .*\) must be Tensor\[\(1\), float32\]"
    ):
        rel(nn.prelu(v, tvar("a", (3,)), axis=0))


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


def test_softmax_and_log_softmax(run, rel, tvar, rng):
    x = rng.standard_normal((2, 4)).astype("float32") * 10
    v = tvar("x", (2, 4))
    sm = run(nn.softmax(v), x)
    lsm = run(nn.log_softmax(v, axis=0), x)
    for i in range(2):
        denom = sum(math.exp(float(t)) for t in x[i])
        assert sm[i].tolist() == pytest.approx([math.exp(float(t)) / denom for t in x[i]], rel=1e-5)
    for j in range(4):
        lse = math.log(sum(math.exp(float(t)) for t in x[:, j]))
        want = [float(t) - lse for t in x[:, j]]
        assert lsm[:, j].tolist() == pytest.approx(want, rel=1e-5, abs=1e-5)
    big = np.array([[1000.0, 0.0]], dtype="float32")
    assert run(nn.softmax(tvar("b", (1, 2))), big).tolist() == [[1.0, 0.0]]
    with pytest.raises(TypeRelError, match="softmax axis 2 is out of range"):
        rel(nn.softmax(v, axis=2))
    with pytest.raises(TypeRelError, match="floating-point"):
        rel(nn.softmax(tvar("i", (2,), "int32")))


def test_batch_norm(run, rel, tvar, rng):
    x = rng.standard_normal((2, 3, 2, 2)).astype("float32")
    gamma, beta, mean = (rng.standard_normal(3).astype("float32") for _ in range(3))
    var = rng.uniform(0.5, 2.0, 3).astype("float32")
    args = [tvar(n, (3,)) for n in ("g", "b", "m", "v")]
    bn = nn.batch_norm(tvar("x", x.shape), *args, epsilon=1e-3)
    assert isinstance(bn, TupleWrapper) and len(bn) == 3 and isinstance(bn[0], TupleGetItem)
    call = bn.astuple()
    vec = TensorType((3,))
    assert rel(call) == TupleType([TensorType(x.shape), vec, vec])
    out, m_out, v_out = run(call, x, gamma, beta, mean, var)
    for c in range(3):
        scale = gamma[c] / math.sqrt(var[c] + 1e-3)
        np.testing.assert_allclose(
            out[:, c], (x[:, c] - mean[c]) * scale + beta[c], rtol=1e-5, atol=1e-6
        )
    assert m_out.tolist() == mean.tolist() and v_out.tolist() == var.tolist()
    no_scale = nn.batch_norm(tvar("x", x.shape), *args, center=False, scale=False).astuple()
    out2 = run(no_scale, x, gamma, beta, mean, var)[0]
    np.testing.assert_allclose(
        out2[:, 1], (x[:, 1] - mean[1]) / math.sqrt(var[1] + 1e-5), rtol=1e-5
    )
    with pytest.raises(
        TypeRelError, match=r"moving_var \(axis 1\) must be Tensor\[\(3\), float32\]"
    ):
        rel(nn.batch_norm(tvar("x", x.shape), *args[:3], tvar("v", (4,))).astuple())


def test_layer_norm(run, rel, tvar, rng):
    x = rng.standard_normal((2, 5)).astype("float32")
    g = rng.standard_normal(5).astype("float32")
    b = rng.standard_normal(5).astype("float32")
    out = run(nn.layer_norm(tvar("x", (2, 5)), tvar("g", (5,)), tvar("b", (5,))), x, g, b)
    for i in range(2):
        row = [float(t) for t in x[i]]
        mu = sum(row) / 5
        var = sum((t - mu) ** 2 for t in row) / 5
        want = [
            (t - mu) / math.sqrt(var + 1e-5) * float(g[k]) + float(b[k]) for k, t in enumerate(row)
        ]
        assert out[i].tolist() == pytest.approx(want, rel=1e-4, abs=1e-5)
    with pytest.raises(TypeRelError, match="gamma"):
        rel(nn.layer_norm(tvar("x", (2, 5)), tvar("g", (2,)), tvar("b", (5,))))


def test_dropout_is_identity_at_inference(run, rel, tvar):
    d = nn.dropout(tvar("x", (2, 2)), rate=0.3)
    assert isinstance(d, TupleGetItem) and d.index == 0
    raw = nn.dropout_raw(tvar("x", (2, 2)))
    assert rel(raw) == TupleType([TensorType((2, 2))] * 2)
    x = np.arange(4, dtype="float32").reshape(2, 2)
    out, _mask = run(d.tuple_value, x)
    assert out.tolist() == x.tolist()
    with pytest.raises(TypeRelError, match="rate must be in"):
        rel(nn.dropout_raw(tvar("x", (2,)), rate=1.5))


def test_batch_flatten(run, rel, tvar):
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    assert run(nn.batch_flatten(tvar("x", x.shape)), x).tolist() == x.reshape(2, 12).tolist()
    assert rel(nn.batch_flatten(tvar("e", (0, 3, 4)))) == TensorType((0, 12))


def test_pad(run, rel, tvar):
    x = np.array([[1.0, 2.0], [3.0, 4.0]], dtype="float32")
    v = tvar("x", (2, 2))
    call = nn.pad(v, ((1, 0), (0, 2)), pad_value=9.0)
    assert len(call.args) == 2 and call.attrs.pad_width == ((1, 0), (0, 2))
    out = run(call, x, np.array(9.0, "float32"))
    assert out.tolist() == [[9, 9, 9, 9], [1, 2, 9, 9], [3, 4, 9, 9]]
    edge = run(nn.pad(v, ((0, 1), (1, 0)), pad_mode="edge"), x, np.array(0, "int32"))
    assert edge.tolist() == [[1, 1, 2], [3, 3, 4], [3, 3, 4]]
    refl = run(nn.pad(v, ((1, 1), (0, 0)), pad_mode="reflect"), x, np.array(0, "int32"))
    assert refl.tolist() == [[3, 4], [1, 2], [3, 4], [1, 2]]
    types = (TensorType((2, 2)), TensorType((), "int32"))
    with pytest.raises(TypeRelError, match="one \\(before, after\\) pair per axis"):
        rel(nn.pad(v, ((1, 1),)), *types)
    with pytest.raises(TypeRelError, match="reflect padding .* smaller than its size 2"):
        rel(nn.pad(v, ((2, 0), (0, 0)), pad_mode="reflect"), *types)
    with pytest.raises(TypeRelError, match="pad_value must be a scalar"):
        rel(nn.pad(v, ((0, 0), (0, 0)), pad_value=const([1.0, 2.0])))
    with pytest.raises(TypeRelError, match="pad_mode must be"):
        rel(nn.pad(v, ((0, 0), (0, 0)), pad_mode="wrap"), *types)


def test_annotations_are_typed_identities(run, rel, tvar):
    v = tvar("x", (2,))
    begin = annotation.compiler_begin(v, "dnnl")
    end = annotation.compiler_end(begin, "dnnl")
    assert begin.op.name == "annotation.compiler_begin" and begin.attrs.compiler == "dnnl"
    assert begin.attrs.type_key == "relay.attrs.CompilerAttrs"
    assert end.op.get_attr("TOpPattern") == op.OpPattern.OPAQUE
    tup = TupleType([TensorType((2,)), TensorType((3,), "int32")])
    assert rel(annotation.compiler_end(v, "x"), tup) == tup
    x = np.array([1.0, 2.0], "float32")
    assert run(annotation.stop_fusion(v), x).tolist() == [1.0, 2.0]
    assert run(begin, x).tolist() == [1.0, 2.0]
