"""nn.dropout, the identity at inference."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.ir import TensorType, TupleGetItem, TupleType
from relaykit.op import TypeRelError, nn


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
