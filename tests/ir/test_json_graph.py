"""save_json / load_json: round trips of every node kind, TVM's older layouts, bad input."""

from __future__ import annotations

import base64
import json
import struct

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ArtifactCorruptError, ArtifactError
from relaykit.ir import load_json, save_json
from relaykit.ir.json_load import ndarray_from_bytes
from relaykit.ir.json_save import ndarray_to_bytes


def test_workload_module_round_trips_with_sharing():
    mod, _ = relay.testing.resnet.get_workload(num_layers=18)
    back = load_json(save_json(mod))
    tvm.ir.assert_structural_equal(back, mod)
    x = relay.var("x", shape=(2,))
    y = relay.exp(x)
    shared = load_json(save_json(relay.Function([x], y + y)))
    assert shared.body.args[0] is shared.body.args[1]


def test_prelude_with_types_matches_and_references_round_trips():
    mod = relay.transform.InferType()(relay.prelude.Prelude().mod)
    tvm.ir.assert_structural_equal(load_json(save_json(mod)), mod, map_free_vars=True)
    x = relay.var("x", shape=(2,))
    r = relay.RefCreate(x)
    fn = relay.Function([x], relay.Tuple([relay.RefRead(r), relay.RefWrite(r, x)]))
    tvm.ir.assert_structural_equal(load_json(save_json(fn)), fn, map_free_vars=True)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "uint16", "int64", "bool"])
def test_constant_tensors_keep_values_and_dtypes(dtype):
    data = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    back = ndarray_from_bytes(ndarray_to_bytes(data))
    assert back.dtype == data.dtype and back.shape == (2, 3)
    np.testing.assert_array_equal(back, data)
    scalar = load_json(save_json(relay.const(np.array(7, dtype="int32"))))
    assert scalar.data.numpy().shape == () and int(scalar.data.numpy()) == 7


def test_attrs_and_spans_survive():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    call = relay.nn.conv2d(x, w, padding=(1, 1), channels=4, kernel_size=(3, 3))
    back = load_json(save_json(call))
    assert back.attrs.padding == call.attrs.padding and back.attrs.channels == 4
    span = relay.Span(relay.SourceName("model.py"), 3, 4, 5, 6)
    sb = load_json(save_json(span))
    assert (sb.source_name, sb.line, sb.end_line, sb.column, sb.end_column) == (
        "model.py",
        3,
        4,
        5,
        6,
    )


def _doc(nodes, root=1):
    return json.dumps({"root": root, "nodes": nodes, "b64ndarrays": [], "attrs": {}})


def test_tvm_0_6_layouts_are_read():
    tv = load_json(
        _doc(
            [
                {"type_key": ""},
                {"type_key": "relay.TypeVar", "attrs": {"kind": "0", "span": "0", "var": "2"}},
                {"type_key": "Variable", "attrs": {"dtype": "int32", "name": "t0"}},
            ]
        )
    )
    assert isinstance(tv, relay.TypeVar) and tv.name_hint == "t0"
    op = load_json(_doc([{"type_key": ""}, {"type_key": "relay.Op", "global_key": "nn.relu"}]))
    assert op is relay.op.get("nn.relu")


def test_bad_documents_raise_typed_errors():
    with pytest.raises(ArtifactCorruptError, match="not JSON"):
        load_json("{oops")
    with pytest.raises(ArtifactCorruptError, match="missing node 5"):
        load_json(_doc([{"type_key": ""}, {"type_key": "relay.RefRead", "attrs": {"ref": "5"}}]))
    with pytest.raises(ArtifactError, match="tir.BufferStore"):
        load_json(_doc([{"type_key": ""}, {"type_key": "tir.BufferStore"}]))
    blob = bytearray(ndarray_to_bytes(np.zeros(2, "float32")))
    blob[0] ^= 1
    doc = {
        "root": 1,
        "nodes": [{"type_key": ""}, {"type_key": "relay.Constant", "attrs": {"data": "0"}}],
        "b64ndarrays": [base64.b64encode(bytes(blob)).decode()],
    }
    with pytest.raises(ArtifactCorruptError, match="magic"):
        load_json(json.dumps(doc))
    short = struct.pack("<QQ", 0xDD5E40F096B4A13F, 0)
    with pytest.raises(ArtifactCorruptError, match="truncated"):
        ndarray_from_bytes(short)
