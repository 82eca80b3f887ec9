"""TVM's bare dtype names are 32-bit (NumPy's would be 64-bit)."""

from relaykit import relay
from relaykit.ir import TensorType


def test_bare_int_uint_float_are_32_bit():
    assert TensorType((1,), "int").dtype == "int32"
    assert TensorType((1,), "uint").dtype == "uint32"
    assert TensorType((1,), "float").dtype == "float32"
    assert TensorType((1,), "int64").dtype == "int64"


def test_an_object_with_a_dtype_name_gives_that_dtype():
    c = relay.const(0, relay.scalar_type("int64"))
    assert c.data.numpy().dtype == "int64"
