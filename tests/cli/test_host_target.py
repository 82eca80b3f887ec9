"""``--target host`` (and TVM's ``llvm``) builds for the host only, wherever a target is
taken: compile, run, bench, partition, explain, demo, and the Python API."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import partition_for, region_functions
from relaykit.byoc.choose import is_host_target, normalize_targets
from relaykit.cli import main
from relaykit.cli._common import split_targets
from relaykit.runtime import load_module


@pytest.mark.parametrize("target", ["host", "llvm", "llvm -mcpu=x86-64"])
def test_compile_and_run_for_the_host(target, tmp_path, capsys):
    artifact = tmp_path / "mlp.rkmod"
    assert main(["compile", "mlp", "--target", target, "-o", str(artifact)]) == 0
    out = capsys.readouterr().out
    assert "mlp (batch 1, generated weights) for host: regions none offloaded" in out
    plan = load_module(str(artifact)).plan
    assert not [n for n in plan.nodes if n.kind == "extern"]
    assert main(["run", str(artifact), "--fill-mode", "ones"]) == 0
    assert "output_0: float32[1, 10]" in capsys.readouterr().out


def test_host_beside_a_backend_is_the_rest(tmp_path, capsys):
    artifact = tmp_path / "mlp.rkmod"
    assert main(["compile", "mlp", "--target", "jsonref,host", "-o", str(artifact)]) == 0
    assert "for jsonref: regions 1 on jsonref" in capsys.readouterr().out
    assert split_targets(["llvm,jsonref", "host"]) == ["jsonref"]


def test_partition_and_explain_for_the_host(capsys):
    assert main(["partition", "mlp", "--target", "host", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["targets"] == {} and data["host"]["operators"] == 10
    assert main(["explain", "mlp", "--target", "llvm", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["targets"] == {}
    assert data["explain"]["placements"] == {"host": 10}


def test_bench_for_the_host_times_one_build(capsys):
    args = ["bench", "mlp", "--target", "host", "--bursts", "1", "--runs", "2", "--pause", "0"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "regions none offloaded" in out
    rows = [ln for ln in out.splitlines() if ln.startswith("relaykit")]
    assert len(rows) == 1 and rows[0].startswith("relaykit host"), out


def test_demo_for_the_host(tmp_path, capsys):
    args = ["demo", "--model", "mlp", "--target", "host", "--runs", "1",
            "--report-dir", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2. backend: none, the host only" in out
    assert "3. partition: none, 10 operators on the host" in out
    assert "4. build: everything planned for the host" in out
    assert re.search(r"6\. time: host \S+ ms \(median of 2 runs\)", out), out
    assert (tmp_path / "placement.txt").is_file()


def test_pins_to_the_host_by_any_of_its_names(tmp_path, capsys):
    artifact = tmp_path / "mlp.rkmod"
    args = ["compile", "mlp", "--target", "jsonref", "--pin", "nn.dense=llvm", "-o", str(artifact)]
    assert main(args) == 0
    plan = load_module(str(artifact)).plan
    assert [n.name for n in plan.nodes if n.kind == "op"].count("nn.dense") == 3


def test_the_python_api_takes_the_host_as_a_target():
    x = relay.var("x", shape=(1, 8))
    mod = tvm.IRModule.from_expr(relay.nn.relu(relay.abs(x)))
    assert is_host_target("host") and is_host_target("llvm -mcpu=skylake")
    assert not is_host_target("dnnl") and not is_host_target("")
    assert normalize_targets("host") == () and normalize_targets(["llvm", "dnnl"]) == ("dnnl",)
    for target in ("host", "llvm", ["host"]):
        part = partition_for(mod, target)
        assert region_functions(part) == []  # a no-op partition
        typed = relay.transform.InferType()(mod)
        assert tvm.ir.structural_equal(part["main"].body, typed["main"].body)
    lib = relay.build(mod, target="host")
    module = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    data = np.array([[-1, 2, -3, 4, -5, 6, -7, 8]], "float32")
    module.set_input("x", data)
    module.run()
    np.testing.assert_array_equal(module.get_output(0).numpy(), np.abs(data))
