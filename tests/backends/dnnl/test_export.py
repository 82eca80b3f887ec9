"""A model with dnnl regions exports to one file and runs after load_module in a fresh
process; the file carries the runtime library and its source, no pickle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.backends.dnnl import partition_for_dnnl
from relaykit.runtime.artifact import read_manifest
from relaykit.testing import resnet

_LOADER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import relaykit as tvm
    from relaykit.contrib import graph_executor

    jobs = json.loads(sys.argv[1])
    modules = [tvm.runtime.load_module(path) for path, _, _ in jobs]
    executors = [graph_executor.GraphModule(m["default"](tvm.cpu(0))) for m in modules]
    for ex, (_, data, out) in zip(executors, jobs):
        ex.set_input("data", np.load(data))
        ex.run()
        np.save(out, ex.get_output(0).numpy())
    assert "relaykit.testing" not in sys.modules and "relaykit.frontend" not in sys.modules
    print("dnnl" in sys.modules.get("relaykit.backends.dnnl").__name__)
    """
)


def _model(seed: int):
    """A ResNet-18 with 10 + seed classes and random batch-norm statistics."""
    mod, params = resnet.get_workload(num_layers=18, image_shape=(3, 32, 32), num_classes=10 + seed)
    rng = np.random.default_rng(seed)
    out = {}
    for k, v in params.items():
        a = v.numpy()
        if k.endswith(("_gamma", "_moving_var")):
            a = rng.uniform(0.5, 1.5, a.shape)
        elif k.endswith(("_beta", "_moving_mean")):
            a = rng.normal(0.0, 0.2, a.shape)
        elif k == "fc1_weight":
            a = a * 0.05
        out[k] = a.astype("float32")
    data = rng.uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    return mod, out, data


def test_export_and_run_in_fresh_process(dnnl, tmp_path):
    jobs, expected = [], []
    for seed in (0, 1):
        mod, params, data = _model(seed)
        lib = dnnl.build(partition_for_dnnl(mod, params))
        expected.append(dnnl.run_lib(lib, {"data": data})[0])
        path = tmp_path / f"model{seed}.rkmod"
        lib.export_library(str(path))
        np.save(tmp_path / f"data{seed}.npy", data)
        jobs.append(
            [str(path), str(tmp_path / f"data{seed}.npy"), str(tmp_path / f"out{seed}.npy")]
        )
    manifest = read_manifest(jobs[0][0])
    (entry,) = [m for m in manifest["modules"] if m["type_key"] == "dnnl"]
    assert entry["meta"]["native"] is True
    assert {"runtime.so", "runtime.cc", "region0.json"} <= set(entry["files"])
    env = dict(os.environ, RELAYKIT_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _LOADER, json.dumps(jobs)],
                          capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for (_, _, out), want in zip(jobs, expected, strict=True):
        np.testing.assert_allclose(np.load(out), want, rtol=1e-5, atol=1e-6)
    assert expected[0].shape != expected[1].shape
    assert 0.01 < expected[0].max() < 0.99  # not saturated: a real comparison


def test_loading_without_the_runtime_cache_uses_the_carried_library(dnnl, tmp_path):
    """A fresh cache directory: the runtime comes from the file, not from a compile."""
    mod, params, data = _model(2)
    lib = dnnl.build(partition_for_dnnl(mod, params))
    want = dnnl.run_lib(lib, {"data": data})[0]
    path = tmp_path / "m.rkmod"
    lib.export_library(str(path))
    np.save(tmp_path / "d.npy", data)
    job = [[str(path), str(tmp_path / "d.npy"), str(tmp_path / "o.npy")]]
    env = dict(os.environ, RELAYKIT_CACHE_DIR=str(tmp_path / "cache"), CXX="/nonexistent/c++")
    proc = subprocess.run([sys.executable, "-c", _LOADER, json.dumps(job)],
                          capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"), want, rtol=1e-5, atol=1e-6)
    assert list((tmp_path / "cache" / "dnnl").glob("blob-*/librkdnnl.so"))


def test_without_allow_native_relaykits_own_runtime_runs_it(dnnl, tmp_path):
    """(tests/runtime/test_trust_dnnl.py: the file's runtime is never used then)"""
    mod = dnnl.module_of(lambda x: relay.nn.relu(x), (1, 8))
    lib = dnnl.build(partition_for_dnnl(mod))
    path = tmp_path / "m.rkmod"
    lib.export_library(str(path))
    x = np.array([[-1, 2, -3, 4, -5, 6, -7, 8]], "float32")
    for allow_native in (False, True):
        loaded = tvm.runtime.load_module(str(path), allow_native=allow_native)
        assert dnnl.run_lib(loaded, {"x0": x})[0].tolist() == [[0, 2, 0, 4, 0, 6, 0, 8]]
