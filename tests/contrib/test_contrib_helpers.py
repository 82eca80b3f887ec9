"""tvm.contrib.cutlass imports and refuses with a typed error; tvm.testing.assert_allclose."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit.contrib import cutlass
from relaykit.errors import UnsupportedFeatureError


def test_cutlass_module_imports_and_refuses():
    assert cutlass.has_cutlass() is False
    with pytest.raises(UnsupportedFeatureError, match="finalize_modules"):
        cutlass.finalize_modules(None, "compile.so", "./tmp")


def test_assert_allclose_accepts_ndarrays_and_checks_values_and_shapes():
    a = np.array([1.0, 2.0, 3.0], "float32")
    tvm.testing.assert_allclose(tvm.nd.array(a), a + 1e-6, atol=1e-5)
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(tvm.nd.array(a), a + 1e-3, atol=1e-5)
    with pytest.raises(AssertionError, match="shapes differ"):
        tvm.testing.assert_allclose(np.ones((3,)), np.ones((1, 3)))


def test_contrib_utils_is_an_attribute_after_import():
    import subprocess
    import sys

    code = "import relaykit as tvm; d = tvm.contrib.utils.tempdir(); print(bool(d.temp_dir))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
