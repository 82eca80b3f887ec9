"""The trust model of module files (docs/artifacts.md): integrity over every byte that
steers loading, ``allow_native=False`` runs no code from the file, native signatures are
checked against the graph, arrays are checked before allocation, optional signatures."""

import hashlib
import io
import json
import os
import sys
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler
from relaykit.contrib import graph_executor
from relaykit.errors import (
    ArtifactCorruptError,
    ArtifactError,
    ArtifactSignatureError,
    MissingDependencyError,
    NativeCodeRefusedError,
    RelayKitError,
)
from relaykit.execution.codegen.toolchain import compile_shared_library
from relaykit.runtime.artifact import artifact_digest, load_module
from relaykit.runtime.c_module import CFunctionSignature, CSourceModule, TensorSpec
from relaykit.runtime.signing import generate_keypair, sign_artifact

X = np.arange(8, dtype="float32").reshape(2, 4) - 3
SYMBOL = "tvmgen_default_ccompiler_main_0"


def _evil_library(marker):
    """A library whose constructor writes ``marker``: it proves whether code from a file ran."""
    source = f"""
    #include <stdio.h>
    __attribute__((constructor)) static void evil(void) {{
        FILE *f = fopen("{marker}", "w");
        if (f) {{ fputs("ran", f); fclose(f); }}
    }}
    __attribute__((visibility("default"))) int {SYMBOL}(void **args) {{ return 0; }}
    """
    return compile_shared_library(source, "evil")


@pytest.fixture
def artifact(tmp_path):
    x = relay.var("data", shape=(2, 4))
    w = relay.const(np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4))
    y = relay.nn.relu(relay.nn.dense(relay.add(x, x), w))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.softmax(y)))
    lib = relay.build(ccompiler.partition_for_ccompiler(mod), target="llvm")
    path = tmp_path / "model.rkmod"
    lib.export_library(str(path))
    # independent reference: NumPy
    wv = np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4)
    h = np.maximum((X + X) @ wv.T, 0)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return path, e / e.sum(axis=1, keepdims=True)


def run(lib):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(data=X)
    return m.get_output(0).numpy()


def forge(path, edit, seal=True):
    """Rewrite the file as an attacker would: ``edit(manifest, members)``, then every member
    hash and (with ``seal``) the integrity record recomputed to match. Other records (the
    signatures) are kept as they are."""
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(members.pop("manifest.json"))
    integrity = members.pop("integrity.json")
    edit(manifest, members)
    for name in manifest["members"]:
        data = members[name]
        manifest["members"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    text = json.dumps(manifest).encode()
    if seal:
        integrity = json.dumps({"digest": "sha256:" + hashlib.sha256(text).hexdigest()})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("manifest.json", text)
        zf.writestr("integrity.json", integrity)
        for n, data in members.items():
            zf.writestr(n, data)


def c_entry(manifest):
    return next(m for m in manifest["modules"] if m["type_key"] == "c_generated")


def swap_library(library, native):
    def edit(manifest, members):
        entry = c_entry(manifest)
        members[entry["files"]["library.so"]] = library
        entry["meta"]["library_sha256"] = hashlib.sha256(library).hexdigest()
        entry["meta"]["native"] = native

    return edit


# -- allow_native=False runs no code from the file ----------------------------------------


def test_swapped_library_with_native_false_is_refused_and_never_runs(artifact, tmp_path):
    """The attack of issue 15: swap the .so, recompute its hashes, set meta.native=false."""
    path, _ = artifact
    marker = tmp_path / "marker"
    forge(path, swap_library(_evil_library(marker), native=False))
    for allow_native in (False, True):
        with pytest.raises(ArtifactCorruptError, match="native"):
            run(load_module(path, allow_native=allow_native))
    assert not marker.exists()


def test_swapped_library_is_never_loaded_with_allow_native_false(artifact, tmp_path):
    path, expected = artifact
    marker = tmp_path / "marker"
    forge(path, swap_library(_evil_library(marker), native=True))
    # the kernels are rebuilt from the graph: right answers, and the file's library never ran
    np.testing.assert_allclose(run(load_module(path, allow_native=False)), expected, rtol=1e-6)
    assert not marker.exists()
    # the same file, trusted: its library does run (so the marker above could have appeared)
    assert not np.allclose(run(load_module(path, allow_native=True)), expected)
    assert marker.read_text() == "ran"


def test_a_bare_compiled_library_is_refused_without_allow_native(tmp_path):
    """A C module without the graph it came from cannot be rebuilt: a typed refusal."""
    lib = compile_shared_library(f"int {SYMBOL}(void **a) {{ return 0; }}", "demo")
    sig = CFunctionSignature(SYMBOL, SYMBOL, (TensorSpec((2,), "float32"),), ())
    path = tmp_path / "bare.rkmod"
    CSourceModule("demo", "", lib, [sig], {}).export_library(str(path))
    with pytest.raises(NativeCodeRefusedError, match=r"allow_native=False.*allow_native=True"):
        load_module(path, allow_native=False)
    assert isinstance(load_module(path), CSourceModule)


@pytest.mark.parametrize("target", ["jsonref", "no_such_backend"])
def test_meta_target_cannot_turn_the_rebuild_off(artifact, target):
    path, _ = artifact
    forge(path, lambda m, _: c_entry(m)["meta"].update(target=target))
    with pytest.raises(NativeCodeRefusedError, match="refused"):
        load_module(path, allow_native=False)
    with pytest.raises(ArtifactCorruptError, match="against its graph"):
        load_module(path, allow_native=True)


# -- native signatures are checked against the graph --------------------------------------


@pytest.mark.parametrize(
    "field, value",
    [("workspace_bytes", 0), ("inputs", [{"shape": [1], "dtype": "float32"}]), ("constants", [])],
)
def test_tampered_signature_is_a_typed_error_not_a_crash(artifact, field, value):
    path, _ = artifact
    forge(path, lambda m, _: c_entry(m)["meta"]["signatures"][0].update({field: value}))
    for allow_native in (True, False):
        with pytest.raises(
            ArtifactCorruptError, match=f"differs from the one its graph gives.*{field}"
        ):
            load_module(path, allow_native=allow_native)


def test_tampered_signature_without_resealing_fails_the_integrity_check(artifact):
    path, _ = artifact
    forge(
        path, lambda m, _: c_entry(m)["meta"]["signatures"][0].update(workspace_bytes=0), seal=False
    )
    with pytest.raises(ArtifactCorruptError, match="does not match the file's integrity record"):
        load_module(path)


# -- integrity: every byte that steers loading --------------------------------------------


def _region(path, name):
    """The byte range of member ``name``'s data in the file."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    with open(path, "rb") as fh:
        fh.seek(info.header_offset + 26)
        name_len, extra_len = np.frombuffer(fh.read(4), "<u2")
    start = info.header_offset + 30 + int(name_len) + int(extra_len)
    return start, start + info.file_size


@pytest.mark.parametrize("member", ["manifest.json", "integrity.json"])
def test_every_byte_of_the_manifest_and_its_digest_is_covered(artifact, member):
    path, _ = artifact
    data = path.read_bytes()
    start, stop = _region(path, member)
    for offset in range(start, stop, 3):  # every byte: benchmarks/artifact_load.py --sweep
        flipped = bytearray(data)
        flipped[offset] ^= 0x01
        path.write_bytes(bytes(flipped))
        with pytest.raises(ArtifactCorruptError) as err:
            load_module(path)
        assert "export the model again" in str(err.value)


def test_a_changed_byte_anywhere_is_an_error_or_changes_nothing(artifact):
    path, expected = artifact
    data = path.read_bytes()
    intact = run(load_module(path))  # the kernels' own rounding: a flip must not change it
    np.testing.assert_allclose(intact, expected, rtol=1e-6)
    outcomes = {"error": 0, "same": 0}
    for offset in range(0, len(data), 53):
        flipped = bytearray(data)
        flipped[offset] ^= 0x20
        path.write_bytes(bytes(flipped))
        try:
            got = run(load_module(path))
        except RelayKitError:
            outcomes["error"] += 1
            continue
        np.testing.assert_array_equal(got, intact)  # only ZIP timestamps
        outcomes["same"] += 1
    assert outcomes["error"] > 0.9 * sum(outcomes.values())


def test_names_the_member_that_changed(artifact):
    path, _ = artifact
    start, _stop = _region(path, "modules/2/files/1")  # library.so
    data = bytearray(path.read_bytes())
    data[start + 100] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(
        ArtifactCorruptError,
        match=r"'modules/2/files/1' \(file 'library.so' of module 2, c_generated\)",
    ):
        load_module(path)


@pytest.mark.parametrize("extra", ["modules/9/files/0", "manifest.json"])
def test_members_outside_the_manifest_are_refused(artifact, extra):
    path, _ = artifact
    with zipfile.ZipFile(path, "a") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about a duplicate name
        zf.writestr(extra, b"{}")
    with pytest.raises(ArtifactCorruptError, match="not listed|more than once"):
        load_module(path)


# -- arrays are checked before allocation ------------------------------------------------


def test_npy_header_claiming_a_huge_array_allocates_nothing(artifact):
    path, _ = artifact

    def edit(manifest, members):
        entry = c_entry(manifest)
        rec = next(iter(entry["arrays"].values()))
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            buf, {"descr": "<f4", "fortran_order": False, "shape": (10**12,)}
        )
        members[rec["member"]] = buf.getvalue() + b"\0" * 48
        rec["shape"] = [10**12]

    forge(path, edit)
    tracemalloc.start()
    try:
        with pytest.raises(ArtifactCorruptError, match="claims 1000000000000 elements"):
            load_module(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_npy_header_disagreeing_with_the_manifest(artifact):
    path, _ = artifact

    def edit(manifest, members):
        rec = next(iter(c_entry(manifest)["arrays"].values()))
        buf = io.BytesIO()
        np.save(buf, np.zeros((4, 3), "float32"))
        members[rec["member"]] = buf.getvalue()

    forge(path, edit)
    with pytest.raises(ArtifactCorruptError, match="does not match its recorded shape"):
        load_module(path)


# -- signatures ---------------------------------------------------------------------------


@pytest.fixture
def keys(tmp_path):
    out = {}
    for who in ("alice", "mallory"):
        priv, pub = tmp_path / f"{who}.pem", tmp_path / f"{who}.pub"
        generate_keypair(priv, pub)
        out[who] = (priv, pub)
    return out


def test_signed_file_loads_with_its_key(artifact, keys):
    path, expected = artifact
    digest = artifact_digest(path)
    sign_artifact(path, keys["alice"][0])
    assert artifact_digest(path) == digest  # the signature is not part of what it signs
    np.testing.assert_allclose(
        run(load_module(path, trusted_keys=[keys["alice"][1]])), expected, rtol=1e-6
    )
    assert oct(os.stat(keys["alice"][0]).st_mode & 0o777) == "0o600"


def test_unsigned_file_is_refused_when_keys_are_required(artifact, keys):
    path, _ = artifact
    with pytest.raises(ArtifactSignatureError, match="is not signed.*relaykit sign"):
        load_module(path, trusted_keys=[keys["alice"][1]])
    with pytest.raises(ArtifactSignatureError, match="trusted_keys is empty"):
        load_module(path, trusted_keys=[])


def test_file_signed_by_an_untrusted_key_is_refused(artifact, keys):
    path, _ = artifact
    sign_artifact(path, keys["mallory"][0])
    with pytest.raises(ArtifactSignatureError, match="none of them a trusted key"):
        load_module(path, trusted_keys=[keys["alice"][1]])


def test_tampered_and_resigned_file_is_refused(artifact, keys, tmp_path):
    """Swap the library after Alice signed; re-seal the digest; Mallory re-signs."""
    path, _ = artifact
    sign_artifact(path, keys["alice"][0])
    forge(path, swap_library(_evil_library(tmp_path / "m"), native=True))  # keeps the signature
    with pytest.raises(ArtifactSignatureError, match="does not verify"):
        load_module(path, trusted_keys=[keys["alice"][1]])
    sign_artifact(path, keys["mallory"][0])  # replaces nothing of Alice's: both present
    with pytest.raises(ArtifactSignatureError, match="does not verify"):
        load_module(path, trusted_keys=[keys["alice"][1]])
    assert not (tmp_path / "m").exists()


def test_signing_refuses_a_damaged_file(artifact, keys):
    path, _ = artifact
    start, _stop = _region(path, "modules/2/files/1")
    data = bytearray(path.read_bytes())
    data[start + 10] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactCorruptError, match="cannot be read|fails its SHA-256"):
        sign_artifact(path, keys["alice"][0])


def test_missing_cryptography_names_the_extra(artifact, keys, monkeypatch):
    path, _ = artifact
    for name in [m for m in sys.modules if m == "cryptography" or m.startswith("cryptography.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "cryptography", None)
    with pytest.raises(MissingDependencyError, match=r"relaykit\[sign\]"):
        load_module(path, trusted_keys=[keys["alice"][1]])
    load_module(path)  # without keys, cryptography is not needed


# -- plan storage is checked before allocation --------------------------------------------


def _edit_plan(path, edit):
    def inner(manifest, members):
        entry = next(m for m in manifest["modules"] if m["type_key"] == "graph_executor_factory")
        name = entry["files"]["graph.json"]
        plan = json.loads(members[name])
        edit(plan)
        members[name] = json.dumps(plan).encode()

    forge(path, inner)


def test_plan_storage_larger_than_its_tensors_is_refused(artifact):
    path, _ = artifact
    _edit_plan(path, lambda plan: plan["storage"][-1].update(nbytes=1 << 39))
    with pytest.raises(ArtifactCorruptError, match=r"storage \d+ is 549755813888 bytes"):
        load_module(path)


def test_plan_needing_more_memory_than_the_machine_is_refused_before_allocating(artifact):
    path, _ = artifact
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if physical >= 1 << 39:
        pytest.skip("this machine has 512 GiB of memory or more")

    def edit(plan):
        sid = plan["entries"][0]["storage"]
        plan["entries"][0]["shape"] = [1 << 27, 1 << 10]  # 512 GiB of float32
        plan["storage"][sid]["nbytes"] = 1 << 39

    _edit_plan(path, edit)
    tracemalloc.start()
    try:
        with pytest.raises(ArtifactError, match=r"needs 512\.0 GiB of buffers, more than"):
            load_module(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20
