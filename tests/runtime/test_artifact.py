"""The exported file format: checked on load, typed errors, never pickle, never a crash."""

import hashlib
import io
import json
import pathlib
import warnings
import zipfile

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler
from relaykit.contrib import graph_executor
from relaykit.errors import ArtifactCorruptError, ArtifactError, ArtifactVersionError
from relaykit.runtime.artifact import ArtifactSuffixWarning, load_module

X = np.arange(8, dtype="float32").reshape(2, 4) - 3


@pytest.fixture
def artifact(tmp_path):
    """A small exported model with a host part and a compiled ccompiler region."""
    x = relay.var("data", shape=(2, 4))
    w = relay.const(np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4))
    y = relay.nn.relu(relay.nn.dense(relay.add(x, x), w))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.softmax(y)))
    lib = relay.build(ccompiler.partition_for_ccompiler(mod), target="llvm")
    path = tmp_path / "model.rkmod"
    lib.export_library(str(path))
    expected = relay.create_executor("debug", mod=mod).evaluate()(X).numpy()
    return path, expected


def run(lib):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(data=X)
    return m.get_output(0).numpy()


def rewrite(path, edit, seal=True):
    """Rewrite the container, letting ``edit(manifest, members)`` change its contents; with
    ``seal`` the integrity record is recomputed, as a forger would."""
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(members.pop("manifest.json"))
    integrity = members.pop("integrity.json")
    edit(manifest, members)
    text = json.dumps(manifest).encode()
    if seal:
        integrity = json.dumps({"digest": "sha256:" + hashlib.sha256(text).hexdigest()}).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("manifest.json", text)
        zf.writestr("integrity.json", integrity)
        for n, data in members.items():
            zf.writestr(n, data)


def reseal(manifest, members, name):
    """Make the member table agree with a changed member (a deliberate, consistent forgery)."""
    data = members[name]
    manifest["members"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def member_of(manifest, type_key, file):
    entry = next(m for m in manifest["modules"] if m["type_key"] == type_key)
    return entry["files"][file]


def test_round_trip(artifact):
    path, expected = artifact
    np.testing.assert_allclose(run(load_module(path)), expected, rtol=1e-6)


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.999])
def test_truncated_file(artifact, keep):
    path, _ = artifact
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ArtifactCorruptError, match="truncated, corrupted, or was not written"):
        load_module(path)


def test_flipped_byte_in_the_library_fails_its_checksum(artifact):
    path, _ = artifact
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        name = member_of(manifest, "c_generated", "library.so")
        offset = zf.getinfo(name).header_offset + 30 + len(name) + 200
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactCorruptError, match="fails its checksum|cannot be read"):
        load_module(path)


def test_forged_library_with_a_matching_member_table_is_refused(artifact):
    path, _ = artifact

    def edit(manifest, members):
        name = member_of(manifest, "c_generated", "library.so")
        members[name] = members[name][:-16] + b"\0" * 16
        reseal(manifest, members, name)

    rewrite(path, edit)
    lib = load_module(path)  # the container is consistent; the library is not what was built
    with pytest.raises(ArtifactCorruptError, match="does not match its recorded SHA-256"):
        run(lib)


def test_not_a_module_file(tmp_path):
    p = tmp_path / "junk.rkmod"
    p.write_bytes(b"\x00" * 100)
    with pytest.raises(ArtifactCorruptError, match="does not start with the relaykit module"):
        load_module(p)
    p.write_bytes(b"\x7fELF" + b"\x00" * 100)
    with pytest.raises(ArtifactCorruptError, match="native shared library, not a relaykit module"):
        load_module(p)
    with pytest.raises(ArtifactError, match="cannot read"):
        load_module(tmp_path / "missing.rkmod")


def test_newer_format_version_is_an_incompatibility(artifact):
    path, _ = artifact
    rewrite(path, lambda m, _: m.update(version=3, writer="relaykit 9.0"))
    with pytest.raises(
        ArtifactVersionError,
        match=r"format version 3, written by relaykit 9\.0.*"
        r"reads version 2.*Upgrade relaykit",
    ):
        load_module(path)


def test_unknown_module_type_names_what_to_import(artifact):
    path, _ = artifact

    def edit(manifest, members):
        manifest["modules"][2]["type_key"] = "acme_npu"
        manifest["modules"][2]["provider"] = "os"  # not a relaykit module: never imported

    rewrite(path, edit)
    with pytest.raises(ArtifactError, match="'acme_npu' module and no loader is registered"):
        load_module(path)


def test_arrays_are_never_unpickled(artifact):
    path, _ = artifact

    def edit(manifest, members):
        entry = next(m for m in manifest["modules"] if m["arrays"])
        _name, rec = next(iter(entry["arrays"].items()))
        buf = io.BytesIO()
        np.save(buf, np.array([{"x": 1}], dtype=object), allow_pickle=True)
        members[rec["member"]] = buf.getvalue()
        reseal(manifest, members, rec["member"])

    rewrite(path, edit)
    with pytest.raises(ArtifactCorruptError, match="holds Python objects"):
        load_module(path)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m, _: m.pop("modules"), "module list is missing"),
        (lambda m, _: m["modules"][0].update(imports=[7]), "module record 0 is malformed"),
        (lambda m, _: m.update(root=5), "root module index"),
        (lambda m, _: m["members"].popitem(), "is not listed"),
        (lambda m, _: m.update(format="onnx"), "names another format"),
    ],
)
def test_inconsistent_manifests(artifact, edit, message):
    path, _ = artifact
    rewrite(path, edit)
    with pytest.raises(ArtifactCorruptError, match=message):
        load_module(path)


def test_corrupted_graph_plan(artifact):
    path, _ = artifact

    def edit(manifest, members):
        name = member_of(manifest, "graph_executor_factory", "graph.json")
        plan = json.loads(members[name])
        plan["nodes"][-1]["inputs"] = [999]
        members[name] = json.dumps(plan).encode()
        reseal(manifest, members, name)

    rewrite(path, edit)
    with pytest.raises(ArtifactCorruptError, match="reads undefined entry 999"):
        load_module(path)


def test_allow_native_false_rebuilds_the_library_from_the_graph(artifact):
    path, expected = artifact
    lib = load_module(path, allow_native=False)
    (cmod,) = lib.lib.imported_modules
    with zipfile.ZipFile(path) as zf:
        carried = zf.read(
            member_of(json.loads(zf.read("manifest.json")), "c_generated", "library.so")
        )
    assert cmod.library is not carried and "rk_dense_f32" in cmod.source
    np.testing.assert_allclose(run(lib), expected, rtol=1e-6)


def test_no_pickle_anywhere_in_the_package():
    root = pathlib.Path(tvm.__file__).parent
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if "import pickle" in p.read_text() or "allow_pickle=True" in p.read_text()
    ]
    assert offenders == []


def _small_model():
    x = relay.var("data", shape=(2, 4))
    w = relay.const(np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4))
    return tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(relay.nn.dense(x, w))))


@pytest.mark.parametrize("name", ["deploy.so", "deploy.tar", "deploy.dylib"])
def test_a_native_suffix_is_written_with_a_warning_naming_the_format(name, tmp_path):
    lib = relay.build(_small_model(), target="llvm")
    with pytest.warns(ArtifactSuffixWarning) as caught:
        lib.export_library(str(tmp_path / name))
    message = str(caught[0].message)
    assert f"export_library({name!r}) writes a relaykit artifact" in message
    assert "a ZIP file" in message and "load_module" in message and ".rkmod" in message
    assert caught[0].filename == __file__  # points at the caller's line
    # TVM scripts go on to load it with load_module: that works
    assert run(load_module(str(tmp_path / name))).shape == (2, 3)


def test_an_rkmod_name_writes_without_a_warning(tmp_path):
    lib = relay.build(_small_model(), target="llvm")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lib.export_library(str(tmp_path / "model.rkmod"))
        lib.export_library(str(tmp_path / "model"))
