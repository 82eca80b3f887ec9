"""``allow_native=False`` with the dnnl backend: the runtime a file carries (its
``runtime.so`` and ``runtime.cc``) is never written, loaded or compiled, whatever its
``meta`` says; relaykit's own runtime (from its shipped ``native/*.cc``) runs the regions."""

import hashlib
import json
import zipfile

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends.dnnl import DnnlNotFoundError, find_onednn
from relaykit.backends.dnnl.partition import partition_for_dnnl
from relaykit.contrib import graph_executor
from relaykit.errors import NativeCodeRefusedError, RelayKitError
from relaykit.execution.codegen.toolchain import compile_shared_library
from relaykit.runtime.artifact import load_module

X = np.array([[-1, 2, -3, 4, -5, 6, -7, 8]], "float32")


@pytest.fixture(autouse=True)
def _dnnl():
    try:
        if find_onednn().include_dir is None:
            pytest.skip("oneDNN headers missing: pip install relaykit[dnnl]")
    except DnnlNotFoundError as err:
        pytest.skip(f"the dnnl backend is not available: {err}")


@pytest.fixture
def artifact(tmp_path, monkeypatch):
    x = relay.var("x0", shape=(1, 8))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    lib = relay.build(partition_for_dnnl(mod), target="llvm")
    path = tmp_path / "m.rkmod"
    lib.export_library(str(path))
    # a fresh runtime cache: whatever loading writes there is seen
    monkeypatch.setenv("RELAYKIT_CACHE_DIR", str(tmp_path / "cache"))
    return path


def run(lib):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(x0=X)
    return m.get_output(0).numpy()


def forge(path, edit):
    """``edit(meta, files, members)`` the dnnl module, recompute every hash and the digest."""
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(members.pop("manifest.json"))
    members.pop("integrity.json")
    entry = next(m for m in manifest["modules"] if m["type_key"] == "dnnl")
    edit(entry["meta"], entry["files"], members)
    for name in manifest["members"]:
        data = members[name]
        manifest["members"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    text = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("manifest.json", text)
        zf.writestr(
            "integrity.json", json.dumps({"digest": "sha256:" + hashlib.sha256(text).hexdigest()})
        )
        for n, data in members.items():
            zf.writestr(n, data)


def evil(marker):
    """A runtime library and source whose code, if it ever ran, writes ``marker``."""
    source = (
        "#include <stdio.h>\n"
        "__attribute__((constructor)) static void evil(void) {\n"
        f'  FILE *f = fopen("{marker}", "w"); if (f) {{ fputs("ran", f); fclose(f); }}\n'
        "}\n"
    )
    return compile_shared_library(source, "evil"), source.encode()


@pytest.mark.parametrize("abi", ["relaykit-dnnl-999 evil", None])
def test_carried_runtime_never_runs_without_allow_native(artifact, tmp_path, abi):
    """The attack of issue 15: swap runtime.so and runtime.cc, edit meta.abi (or not)."""
    marker = tmp_path / "marker"
    library, source = evil(marker)

    def edit(meta, files, members):
        members[files["runtime.so"]] = library
        members[files["runtime.cc"]] = source
        meta["native"] = False
        if abi is not None:
            meta["abi"] = abi

    forge(artifact, edit)
    if abi is None:  # same ABI: relaykit's own runtime runs the regions
        assert run(load_module(artifact, allow_native=False)).tolist() == [[0, 2, 0, 4, 0, 6, 0, 8]]
    else:
        with pytest.raises(NativeCodeRefusedError, match="runtime the file carries was refused"):
            load_module(artifact, allow_native=False)
    assert not marker.exists()
    assert not list((tmp_path / "cache").glob("dnnl/blob-*"))  # nothing written to the cache
    if abi is not None:  # trusted, the same file does run its library: the marker can appear
        with pytest.raises(RelayKitError):
            load_module(artifact, allow_native=True)
        assert marker.read_text() == "ran"
