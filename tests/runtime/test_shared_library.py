"""A ccompiler artifact's shared library is unmapped when its module is collected: loading
the same file again and again leaves no mapping behind."""

from __future__ import annotations

import gc
import os
import pathlib

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler
from relaykit.contrib import graph_executor
from relaykit.runtime.artifact import load_module

X = np.arange(8, dtype="float32").reshape(2, 4) - 3


def _model() -> tvm.IRModule:
    x = relay.var("data", shape=(2, 4))
    w = relay.const(np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4))
    return tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(relay.nn.dense(x, w))))


def _library_maps() -> int:
    """Mappings of libraries relaykit wrote to load a module (the file is deleted once
    mapped; its private directory's name stays in /proc/self/maps)."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return sum("relaykit-lib-" in line for line in maps)


def _load_and_run(path: pathlib.Path) -> np.ndarray:
    module = graph_executor.GraphModule(load_module(str(path))["default"](tvm.cpu()))
    module.run(data=X)
    return module.get_output(0).numpy()


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc/self/maps")
def test_loading_an_artifact_100_times_leaves_no_mapping(tmp_path):
    lib = relay.build(ccompiler.partition_for_ccompiler(_model()), target="llvm")
    path = tmp_path / "model.rkmod"
    lib.export_library(str(path))
    del lib
    want = _load_and_run(path)
    gc.collect()
    before = _library_maps()
    for _ in range(100):
        np.testing.assert_array_equal(_load_and_run(path), want)
    gc.collect()
    assert _library_maps() <= before + 2  # 100 loads mapped ~500 regions before
    # a module in use keeps its library: collected only with its last function
    module = graph_executor.GraphModule(load_module(str(path))["default"](tvm.cpu()))
    gc.collect()
    assert _library_maps() > before
    module.run(data=X)
    np.testing.assert_array_equal(module.get_output(0).numpy(), want)
    del module
    gc.collect()
    assert _library_maps() <= before + 2
