"""Bad input to the ahead-of-time build and the MLF export: typed errors, nothing written."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ArtifactError, BuildError, CodegenError
from relaykit.execution.aot import c_emitters
from relaykit.relay.backend import Executor, Runtime


def _aot(mod, params=None):
    return relay.build(
        mod, target="c", executor=Executor("aot", {"interface-api": "c"}),
        runtime=Runtime("crt"), params=params,
    )  # fmt: skip


def test_dynamic_shape_is_a_build_error():
    x = relay.var("x", shape=(relay.Any(), 4))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    with pytest.raises(BuildError, match=r"%x.*dynamic.*static shapes"):
        _aot(mod)


def test_every_operator_without_c_is_listed_at_once():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(3, 2, 2))
    y = relay.image.dilation2d(x, w)
    z = relay.det(relay.nn.relu(y))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], z))
    assert "nn.relu" in c_emitters
    with pytest.raises(CodegenError) as err:
        _aot(mod)
    msg = str(err.value)
    assert "image.dilation2d" in msg and "det" in msg and "nn.relu" not in msg


def test_export_of_a_graph_build_writes_nothing(tmp_path):
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    lib = relay.build(mod, target="llvm")
    with pytest.raises(ArtifactError, match="Executor\\('aot'\\)"):
        tvm.micro.export_model_library_format(lib, tmp_path / "model.tar")
    assert list(tmp_path.iterdir()) == []


def test_export_into_a_missing_directory(tmp_path):
    x = relay.var("x", shape=(2,))
    lib = _aot(tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x))))
    with pytest.raises(ArtifactError, match="does not exist"):
        tvm.micro.export_model_library_format(lib, tmp_path / "nope" / "model.tar")


def test_unknown_interface_api():
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    with pytest.raises(BuildError, match="interface-api"):
        relay.build(mod, target="c", executor=Executor("aot", {"interface-api": "cpp"}))


def test_inputs_whose_c_names_collide():
    a, b = relay.var("in:0", shape=(2,)), relay.var("in_0", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([a, b], a + b))
    with pytest.raises(CodegenError, match="same C name 'in_0'"):
        _aot(mod)


def test_mlf_layout(tmp_path):
    import json
    import tarfile

    x = relay.var("x", shape=(2, 3))
    w = np.ones((4, 3), "float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.dense(x, relay.const(w))))
    lib = _aot(mod)
    path = tvm.micro.export_model_library_format(lib, tmp_path / "m.tar")
    with tarfile.open(path) as t:
        names = {n.lstrip("./") for n in t.getnames()}
        meta = json.loads(t.extractfile("./metadata.json").read())
        params = t.extractfile("./parameters/default.params").read()
    assert {
        "metadata.json",
        "codegen/host/include/tvmgen_default.h",
        "codegen/host/src/default_lib0.c",
        "codegen/host/src/default_lib1.c",
        "parameters/default.params",
        "src/default.relay",
    } <= names
    main = meta["modules"]["default"]["memory"]["functions"]["main"][0]
    assert main["constants_size_bytes"] == w.nbytes
    assert main["io_size_bytes"] == (6 + 8) * 4
    loaded = tvm.runtime.load_param_dict(params)
    np.testing.assert_array_equal(next(iter(loaded.values())).numpy(), w)
    assert [p.name for p in tmp_path.iterdir()] == ["m.tar"]
