"""The pipeline executor: configuration checks, a three-module pipeline against NumPy,
parameter groups, export and reload; tvm.contrib.cc and runtime.config_threadpool."""

from __future__ import annotations

import os

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.contrib import cc
from relaykit.contrib import pipeline_executor_build as pb
from relaykit.contrib.pipeline_executor import PipelineModule
from relaykit.errors import CompileError, ExecutorUsageError, PipelineConfigError
from relaykit.runtime import get_global_func
from relaykit.runtime.threads import get_policy

SHAPE = (2, 3)


def _mods():
    x = relay.var("x", shape=SHAPE)
    w = relay.const(np.full(SHAPE, 2.0, "float32"))
    m1 = tvm.IRModule.from_expr(
        relay.Function([x], relay.Tuple([relay.multiply(x, w), relay.subtract(x, w)]))
    )
    a, b = relay.var("a", shape=SHAPE), relay.var("b", shape=SHAPE)
    m2 = tvm.IRModule.from_expr(relay.Function([a, b], relay.add(a, b)))
    c, d = relay.var("c", shape=SHAPE), relay.var("d", shape=SHAPE)
    m3 = tvm.IRModule.from_expr(relay.Function([c, d], relay.multiply(c, d)))
    return m1, m2, m3


def _config():
    m1, m2, m3 = _mods()
    cfg = pb.PipelineConfig()
    # connect out of order: module indexes follow the dataflow, not first use
    cfg[m3]["output"][0].connect(cfg["output"]["0"])
    cfg[m2]["output"][0].connect(cfg[m3]["input"]["c"])
    cfg["input"]["in_x"].connect(cfg[m1]["input"]["x"])
    cfg["input"]["in_b"].connect(cfg[m2]["input"]["b"])
    cfg[m1]["output"][0].connect(cfg[m2]["input"]["a"])
    cfg[m1]["output"][1].connect(cfg[m3]["input"]["d"])
    cfg["param_group"]["g"].connect(cfg[m1]["param"])
    return cfg, (m1, m2, m3)


def _want(x, b, w=2.0):
    return (x * w + b) * (x - w)


def test_pipeline_matches_numpy_and_queues_results(tmp_path):
    cfg, (m1, m2, m3) = _config()
    conf = cfg.get_config()["module_connection"]
    assert [conf[m]["pipeline"]["mod_idx"] for m in (m1, m2, m3)] == [0, 1, 2]
    assert conf[m1]["pipeline"]["output"][1]["dependencies"] == [{"mod_idx": 2, "input_name": "d"}]
    pipe = PipelineModule(pb.build(cfg))
    assert (pipe.num_inputs, pipe.num_outputs) == (2, 1)
    assert pipe.get_input_pipeline_map("in_b") == ("1", "b")
    rng = np.random.default_rng(0)
    data = [rng.standard_normal((2, *SHAPE)).astype("float32") for _ in range(3)]
    for x, b in data:
        pipe.set_input("in_x", x)
        pipe.set_input("in_b", b)
        np.testing.assert_array_equal(pipe.get_input("in_x").numpy(), x)
        pipe.run()
    assert pipe.num_executing_pipeline == 3
    for x, b in data:
        (out,) = pipe.get_output()
        np.testing.assert_allclose(out.numpy(), _want(x, b), rtol=1e-6)
    assert pipe.get_output() == []

    # reloaded from disk, with the parameter of module 0 replaced through its group
    path = pb.build(cfg).export_library(str(tmp_path))
    assert os.path.exists(path)
    again = PipelineModule.load_library(path)
    (pname,) = relay.build(m1, "llvm").params
    again.set_params("g", {pname: np.full(SHAPE, 5.0, "float32")})
    x, b = data[0]
    again.set_input("in_x", x)
    again.set_input("in_b", b)
    again.run()
    np.testing.assert_allclose(again.get_output()[0].numpy(), _want(x, b, 5.0), rtol=1e-6)
    with pytest.raises(ExecutorUsageError, match="parameter group"):
        again.set_params("nope", {})
    with pytest.raises(ExecutorUsageError, match="dict"):
        again.set_params("g", None)


def test_wrong_connections_are_refused():
    m1, m2, _ = _mods()
    cfg = pb.PipelineConfig()
    with pytest.raises(PipelineConfigError, match="no output 2"):
        cfg[m1]["output"][2]
    with pytest.raises(PipelineConfigError, match="no input 'y'"):
        cfg[m1]["input"]["y"]
    with pytest.raises(PipelineConfigError, match="own input"):
        cfg[m1]["output"][0].connect(cfg[m1]["input"]["x"])
    cfg[m1]["output"][0].connect(cfg[m2]["input"]["a"])
    with pytest.raises(PipelineConfigError, match="cycle"):
        cfg[m2]["output"][0].connect(cfg[m1]["input"]["x"])
    with pytest.raises(PipelineConfigError, match="is an end"):
        cfg[m1]["input"]["x"].connect(cfg[m2]["input"]["b"])
    with pytest.raises(PipelineConfigError, match="pipeline input"):
        cfg["input"]["i"].connect(cfg[m1]["output"][0])
    with pytest.raises(PipelineConfigError, match="ends"):
        cfg["output"]["0"].connect(cfg[m1]["input"]["x"])
    assert isinstance(PipelineConfigError("x"), RuntimeError)


def test_cc_links_a_shared_library(tmp_path):
    import ctypes

    src = tmp_path / "twice.c"
    src.write_text("int twice(int v) { return 2 * v; }\n")
    lib = tmp_path / "libtwice.so"
    cc.create_shared(str(lib), [str(src)], cc="gcc")  # the default is a C++ compiler
    assert ctypes.CDLL(str(lib)).twice(21) == 42
    with pytest.raises(CompileError, match="failed"):
        bad = tmp_path / "bad.c"
        bad.write_text("this is not C\n")
        cc.create_shared(str(tmp_path / "bad.so"), [str(bad)])


def test_config_threadpool_sets_the_budget():
    fn = get_global_func("runtime.config_threadpool")
    try:
        fn(-2, 1)
        assert get_policy().total == 1
    finally:
        fn(-2, 0)
