"""The narrow element types backed by the optional ml_dtypes package: the dtype table,
the error without ml_dtypes, printing and parsing, and the cast kernel."""

from __future__ import annotations

import sys

import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")

import relaykit as tvm  # noqa: E402
from relaykit import dtypes as dtypes_mod  # noqa: E402
from relaykit import relay  # noqa: E402
from relaykit.errors import IRError, MissingDependencyError  # noqa: E402
from relaykit.ir import structural_equal  # noqa: E402
from relaykit.ir.types import (  # noqa: E402
    DTYPES,
    ML_DTYPES,
    MissingDtypeError,
    TensorType,
    check_dtype,
    dtype_kind,
)
from relaykit.text import astext, parse  # noqa: E402
from relaykit.text.metadata import dump_metadata, load_metadata  # noqa: E402


def test_every_narrow_dtype_is_registered_with_its_ml_dtypes_dtype():
    assert set(ML_DTYPES) <= set(DTYPES)
    for name in ML_DTYPES:
        assert DTYPES[name] == np.dtype(getattr(ml_dtypes, name))
        assert check_dtype(name) == name
        assert check_dtype(getattr(ml_dtypes, name)) == name
        assert check_dtype(np.dtype(getattr(ml_dtypes, name))) == name
    assert str(TensorType((2, 3), "bfloat16")) == "Tensor[(2, 3), bfloat16]"


def test_dtype_kind_classifies_the_narrow_types():
    assert [dtype_kind(d) for d in ("bfloat16", "float8_e4m3fn", "float4_e2m1fn")] == ["f"] * 3
    assert [dtype_kind(d) for d in ("int4", "int2", "uint4", "uint2")] == ["i", "i", "u", "u"]
    assert dtype_kind("int64") == "i" and dtype_kind("bool") == "b"


def test_unknown_dtype_is_still_an_ir_error():
    with pytest.raises(IRError, match="unknown dtype 'float7'"):
        check_dtype("float7")


def test_without_ml_dtypes_the_narrow_dtypes_ask_for_it(monkeypatch):
    for name in ML_DTYPES:
        monkeypatch.delitem(DTYPES, name)
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes now fails
    dtypes_mod._register_ml_dtypes()
    assert "bfloat16" not in DTYPES
    with pytest.raises(MissingDtypeError, match="pip install ml_dtypes") as info:
        TensorType((1,), "bfloat16")
    assert isinstance(info.value, IRError) and isinstance(info.value, MissingDependencyError)
    assert check_dtype("float32") == "float32"


def test_metadata_keeps_narrow_constants_bit_exact():
    arrays = [
        np.array([1.5, -2.0, 3.0e38], ml_dtypes.bfloat16),
        np.array([[1, -2], [7, -8]], ml_dtypes.int4),
        np.array(0.5, ml_dtypes.float8_e4m3fn),
        np.array([0.0, 6.0, -1.5], ml_dtypes.float4_e2m1fn),
        np.array([1, 0, 3], ml_dtypes.uint2),
    ]
    back = load_metadata(dump_metadata({"relay.Constant": arrays}))["relay.Constant"]
    for a, b in zip(arrays, back, strict=True):
        assert b.dtype == a.dtype and b.shape == a.shape
        assert b.tobytes() == a.tobytes()


def test_narrow_types_print_and_parse_back():
    x = relay.var("x", shape=(3,), dtype="bfloat16")
    weights = relay.const(np.array([1.5, 2.0, -3.0], ml_dtypes.bfloat16))
    scale = relay.const(np.array(1.5, ml_dtypes.float8_e4m3fn))
    codes = relay.const(np.array([1, -2], ml_dtypes.int4))
    body = relay.Tuple([relay.cast(x, "float8_e5m2"), weights, scale, codes])
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))
    text = astext(mod, show_meta_data=True)
    assert "%x: Tensor[(3), bfloat16]" in text
    assert 'cast(%x, dtype="float8_e5m2")' in text
    assert '"dtype": "int4"' in text and '"dtype": "float8_e4m3fn"' in text
    back = parse(text)
    assert structural_equal(back, mod)
    assert back["main"].body.fields[2].data.numpy().dtype == ml_dtypes.float8_e4m3fn


def test_cast_kernel_to_and_from_narrow_types_matches_ml_dtypes():
    x = relay.var("x", shape=(5,), dtype="float32")
    body = relay.Tuple(
        [relay.cast(x, "bfloat16"), relay.cast(x, "float8_e4m3fn"), relay.cast(x, "int4")]
    )
    fn = relay.create_executor("debug", mod=tvm.IRModule.from_expr(relay.Function([x], body)))
    data = np.array([0.3, -1.7, 2.5, 6.0, -7.0], "float32")
    bf, f8, i4 = (o.numpy() for o in fn.evaluate()(data))
    assert bf.dtype == ml_dtypes.bfloat16 and f8.dtype == ml_dtypes.float8_e4m3fn
    # bfloat16 keeps the top 16 bits of a float32, rounded to nearest even
    bits = data.view("uint32")
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("uint16")
    assert bf.view("uint16").tolist() == rounded.tolist()
    # e4m3fn: 3 mantissa bits, so 0.3 -> 0.3125 and -1.7 -> -1.75
    assert f8.astype("float32").tolist() == [0.3125, -1.75, 2.5, 6.0, -7.0]
    assert i4.astype("int8").tolist() == [0, -1, 2, 6, -7]
