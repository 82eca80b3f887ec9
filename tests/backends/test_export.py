"""Export to one file, load in a fresh process, run without the original model."""

import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler, jsonref
from relaykit.contrib import graph_executor
from relaykit.runtime.artifact import read_manifest
from relaykit.runtime.threads import get_policy

BACKENDS = {
    "ccompiler": ccompiler.partition_for_ccompiler,
    "jsonref": jsonref.partition_for_jsonref,
}

_LOADER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import relaykit as tvm
    from relaykit.contrib import graph_executor

    jobs = json.loads(sys.argv[1])
    # Load every file first: all models live side by side in this process.
    modules = {name: tvm.runtime.load_module(path) for name, path, _, _ in jobs}
    executors = {name: graph_executor.GraphModule(m["default"](tvm.cpu(0)))
                 for name, m in modules.items()}
    for name, _, data, out in jobs:
        executors[name].set_input("data", np.load(data))
        executors[name].run()
        np.save(out, executors[name].get_output(0).numpy())
    assert "relaykit.testing" not in sys.modules
    print("ran", len(jobs))
    """
)


def _run_fresh(jobs):
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-c", _LOADER, json.dumps(jobs)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"ran {len(jobs)}" in proc.stdout


def test_all_workloads_and_backends_run_after_load_in_a_fresh_process(
    models, tmp_path, monkeypatch
):
    # Bit-equal results need the same BLAS thread count here and in the fresh process (it
    # follows the thread policy, which depends on what ran before in this one).
    monkeypatch.setenv("RELAYKIT_NUM_THREADS", "1")
    get_policy().apply()
    jobs, expected = [], {}
    for wl in ("mlp", "vgg11", "resnet18"):
        mod, params, data = models.workload(wl)
        data_path = str(tmp_path / f"{wl}_data.npy")
        np.save(data_path, data)
        for backend, partition in BACKENDS.items():
            name = f"{wl}_{backend}"
            lib = relay.build(partition(mod, params), target="llvm")
            path = str(tmp_path / f"{name}.rkmod")
            lib.export_library(path)
            expected[name] = models.run(lib, data)
            jobs.append([name, path, data_path, str(tmp_path / f"{name}_out.npy")])
    _run_fresh(jobs)
    for name, _, _, out in jobs:
        got = np.load(out)
        np.testing.assert_array_equal(got, expected[name])
        np.testing.assert_allclose(got, models.reference(name.split("_")[0]), rtol=1e-5, atol=1e-6)


def test_the_file_holds_plan_params_library_source_and_graphs(models, tmp_path):
    mod, params, _ = models.workload("mlp")
    path = tmp_path / "mlp.so"  # the extension does not matter
    relay.build(ccompiler.partition_for_ccompiler(mod, params), target="llvm").export_library(
        str(path)
    )
    manifest = read_manifest(path)
    assert manifest["format"] == "relaykit.module" and manifest["version"] == 2
    kinds = [m["type_key"] for m in manifest["modules"]]
    assert kinds == ["graph_executor_factory", "relaykit_host", "c_generated"]
    c_entry = manifest["modules"][2]
    assert set(c_entry["files"]) == {"source.c", "library.so", "function0.relay"}
    assert c_entry["meta"]["native"] is True and len(c_entry["meta"]["library_sha256"]) == 64
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert all(zf.getinfo(n).compress_type == zipfile.ZIP_STORED for n in names)
        assert not any(n.endswith((".pkl", ".pickle")) for n in names)
        source = zf.read(c_entry["files"]["source.c"]).decode()
    assert "rk_dense_f32" in source


def test_two_models_with_the_same_symbols_load_side_by_side(models, tmp_path):
    # Same architecture and symbol names, different weights: nothing may be shared.
    mod, params, data = models.workload("mlp")
    other = {k: (v * 0.5 if k.endswith("weight") else v) for k, v in params.items()}
    paths = []
    for i, p in enumerate((params, other)):
        lib = relay.build(ccompiler.partition_for_ccompiler(mod, p), target="llvm")
        paths.append(str(tmp_path / f"m{i}.rkmod"))
        lib.export_library(paths[-1])
    loaded = [tvm.runtime.load_module(p) for p in paths]
    runs = [graph_executor.GraphModule(m["default"](tvm.cpu())) for m in loaded]
    outs = []
    for m in runs + runs[::-1]:  # interleaved, both orders
        m.run(data=data)
        outs.append(m.get_output(0).numpy())
    ref0 = relay.create_executor("debug", mod=mod).evaluate()(data, **params).numpy()
    ref1 = relay.create_executor("debug", mod=mod).evaluate()(data, **other).numpy()
    np.testing.assert_allclose(outs[0], ref0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[1], ref1, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(outs[2], outs[1])
    np.testing.assert_array_equal(outs[3], outs[0])
    assert not np.allclose(outs[0], outs[1])


def test_host_only_build_round_trips(models, tmp_path):
    mod, params, data = models.workload("resnet18")
    lib = relay.build(mod, target="llvm", params=params)
    lib.export_library(str(tmp_path / "r.rkmod"))
    loaded = tvm.runtime.load_module(str(tmp_path / "r.rkmod"))
    assert loaded.lib.imported_modules == []
    np.testing.assert_array_equal(models.run(loaded, data), models.run(lib, data))
    # TVM's create() path: graph JSON + library + parameters set by name.
    m = graph_executor.create(loaded.get_graph_json(), loaded.get_lib(), tvm.cpu(0))
    m.set_input(**loaded.get_params())
    m.run(data=data)
    np.testing.assert_array_equal(m.get_output(0).numpy(), models.run(lib, data))
