import numpy as np
import pytest

from relaykit.errors import AttrError, IRError
from relaykit.ir import Attrs, FuncType, IncompleteType, TensorType, TupleType, scalar_type


def test_tensor_type_is_a_validated_frozen_value():
    t = TensorType([1, np.int64(3)], np.float32)
    assert t.shape == (1, 3) and t.dtype == "float32"
    assert t == TensorType((1, 3), "float32") and hash(t) == hash(TensorType((1, 3)))
    with pytest.raises(AttributeError):
        t.shape = (2,)  # type: ignore[misc]
    with pytest.raises(IRError, match="unknown dtype 'float33'"):
        TensorType((1,), "float33")
    with pytest.raises(IRError, match="negative"):
        TensorType((-1, 2))
    with pytest.raises(IRError, match="not an integer"):
        TensorType(("n", 2))


def test_type_printing():
    assert str(TensorType((10, 1))) == "Tensor[(10, 1), float32]"
    assert str(TensorType((64,))) == "Tensor[(64), float32]"
    assert str(scalar_type("int32")) == "int32"
    assert str(TupleType([TensorType((1,)), scalar_type("bool")])) == "(Tensor[(1), float32], bool)"
    assert str(FuncType([TensorType((2,))], TensorType((2,)))) == (
        "fn (Tensor[(2), float32]) -> Tensor[(2), float32]"
    )
    assert str(IncompleteType()) == "?"


def test_attrs_are_frozen_and_normalised():
    a = Attrs({"strides": [1, 2], "eps": np.float32(0.5), "layout": "NCHW"})
    assert a.strides == (1, 2) and a["eps"] == 0.5 and isinstance(a["eps"], float)
    assert a == Attrs({"strides": (1, 2), "eps": 0.5, "layout": "NCHW"})
    assert hash(a) == hash(Attrs({"strides": (1, 2), "eps": 0.5, "layout": "NCHW"}))
    with pytest.raises(AttributeError, match="immutable"):
        a.strides = (3, 3)
    with pytest.raises(AttributeError, match="no field 'stride'"):
        _ = a.stride
    assert a.with_updates(layout="NCHW") is a
    assert a.with_updates(layout="NHWC").layout == "NHWC"
    with pytest.raises(AttrError, match="cannot be stored"):
        Attrs({"bad": {1, 2}})
