"""Exported modules keep constants of the ml_dtypes types (bfloat16, float8, int4, ...).

``.npy`` has no descriptor for these types, so ``np.load`` returns their bytes as raw
void; the loader reinterprets them as the dtype its manifest records.
"""

import io

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.contrib import graph_executor
from relaykit.runtime.artifact import _load_array, _restore_ml_dtype, read_manifest

ml_dtypes = pytest.importorskip("ml_dtypes")

X = np.linspace(-2, 2, 8, dtype="float32").reshape(2, 4)


def _export_and_load(tmp_path, dtype, values):
    """A model ``cast(const, float32) * data``, built, exported, loaded and run."""
    w = np.asarray(values, dtype="float32").astype(getattr(ml_dtypes, dtype))
    x = relay.var("data", shape=(2, 4))
    y = relay.multiply(relay.cast(relay.const(w), "float32"), x)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(opt_level=0):  # keep the narrow constant unfolded
        lib = relay.build(mod, target="llvm")
    path = tmp_path / f"{dtype}.rkmod"
    lib.export_library(str(path))
    loaded = tvm.runtime.load_module(str(path))
    m = graph_executor.GraphModule(loaded["default"](tvm.cpu()))
    m.run(data=X)
    return w, m.get_output(0).numpy(), path


@pytest.mark.parametrize(
    "dtype, values",
    [
        ("bfloat16", [[0.5, -1.25, 3.0, 1e-3]] * 2),
        ("float8_e4m3fn", [[0.5, -1.25, 3.0, 448.0]] * 2),
        ("float8_e5m2", [[0.5, -1.5, 3.0, -0.0625]] * 2),
        ("float4_e2m1fn", [[0.5, -1.5, 3.0, 6.0]] * 2),
        ("int4", [[-8, -1, 3, 7]] * 2),
        ("uint4", [[0, 1, 9, 15]] * 2),
    ],
)
def test_narrow_constants_survive_export(tmp_path, dtype, values):
    w, out, path = _export_and_load(tmp_path, dtype, values)
    expected = w.astype("float32") * X
    np.testing.assert_array_equal(out, expected)
    recorded = [a["dtype"] for m in read_manifest(path)["modules"] for a in m["arrays"].values()]
    assert dtype in recorded


def test_loaded_array_has_the_recorded_dtype():
    w = np.array([1.5, -2.0, 0.25], dtype=ml_dtypes.bfloat16)
    buf = io.BytesIO()
    np.save(buf, w, allow_pickle=False)
    arr = _load_array(buf.getvalue(), {"dtype": "bfloat16", "shape": [3]}, "f", "w")
    assert arr.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(arr.view(np.uint16), w.view(np.uint16))
    # as written today: the bits as unsigned integers of the same width
    buf = io.BytesIO()
    np.save(buf, w.view(np.uint16), allow_pickle=False)
    arr = _load_array(buf.getvalue(), {"dtype": "bfloat16", "shape": [3]}, "f", "w")
    assert arr.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(arr.astype("float32"), [1.5, -2.0, 0.25])
    # an array of another width is left alone (and then reported as corrupt)
    for raw in (np.zeros(3, dtype="V4"), np.zeros(3, dtype="uint32")):
        assert _restore_ml_dtype(raw, "bfloat16").dtype == raw.dtype
    # a uint16 array recorded as uint16 stays uint16
    plain = np.zeros(3, dtype="uint16")
    assert _restore_ml_dtype(plain, "uint16").dtype == plain.dtype
