"""nn.batch_flatten and nn.pad."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.ir import TensorType, const
from relaykit.op import TypeRelError, nn


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
