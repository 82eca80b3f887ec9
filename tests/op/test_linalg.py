"""einsum and det against explicit loops / closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import op
from relaykit.op import TypeRelError


def test_einsum_matmul_and_trace_by_loops(run, rel, tvar):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3)).astype("float32")
    b = rng.standard_normal((3, 4)).astype("float32")
    out = run(op.einsum([tvar("a", (2, 3)), tvar("b", (3, 4))], "ij,jk->ik"), (a, b))
    for i in range(2):
        for k in range(4):
            assert out[i, k] == pytest.approx(sum(a[i, j] * b[j, k] for j in range(3)), rel=1e-5)
    m = rng.standard_normal((3, 3)).astype("float32")
    trace = run(op.einsum([tvar("m", (3, 3))], "ii"), (m,))
    assert trace.shape == () and float(trace) == pytest.approx(m[0, 0] + m[1, 1] + m[2, 2])
    with pytest.raises(TypeRelError, match="does not fit"):
        rel(op.einsum([tvar("a", (2, 3)), tvar("b", (4, 4))], "ij,jk->ik"))


def test_det_closed_form(run, rel, tvar):
    m = np.array([[[1.0, 2.0], [3.0, 4.0]], [[2.0, 0.0], [0.0, 5.0]]], "float32")
    out = run(op.det(tvar("m", (2, 2, 2))), m)
    assert out.tolist() == pytest.approx([1 * 4 - 2 * 3, 10.0])
    with pytest.raises(TypeRelError, match="square"):
        rel(op.det(tvar("m", (2, 3))))
