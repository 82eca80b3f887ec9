"""nn.relu, nn.leaky_relu, nn.prelu, nn.softmax and nn.log_softmax."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relaykit import op
from relaykit.op import TypeRelError, nn


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
