"""relay.const picks dtypes as TVM does: 64-bit NumPy floats/ints narrow to 32 bits
unless a dtype is given; other dtypes and NDArrays keep theirs."""

from __future__ import annotations

import numpy as np

from relaykit.ir.expr import const
from relaykit.runtime.ndarray import array


def test_numpy_64_bit_arrays_narrow_without_dtype():
    assert const(np.zeros((2, 2))).data.dtype == "float32"
    assert const(np.arange(3)).data.dtype == "int32"
    np.testing.assert_array_equal(const(np.arange(3)).data.numpy(), [0, 1, 2])


def test_explicit_dtype_and_other_dtypes_are_kept():
    assert const(np.zeros(2), "float64").data.dtype == "float64"
    assert const(np.zeros(2, "float16")).data.dtype == "float16"
    assert const(np.zeros(2, "uint8")).data.dtype == "uint8"
    assert const(array(np.zeros(2))).data.dtype == "float64"
