"""The same ahead-of-time C on other platforms: wasm32-wasi under wasmtime and Node, in a
web page in headless Chromium, and on an emulated Cortex-M3 (qemu-system-arm, MPS2 AN385)
printing its outputs by semihosting. Outputs are compared with NumPy in float64, written
here; the Cortex-M memory report is compared with the ELF's symbol table (``nm``), read
independently of the linker map the build checked it against.

Each part skips, naming the Debian package, when its toolchain is missing (CI installs
them: see .ci/run).
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import partition_for
from relaykit.errors import ArtifactError, CompilerNotFoundError, MissingDependencyError
from relaykit.execution.aot.platforms import build_mlf, memory_report, read_metadata, run_build
from relaykit.relay.backend import Executor, Runtime


def _have_wasm() -> str | None:
    if not (shutil.which("clang") and shutil.which("wasm-ld")):
        return "clang and lld are not installed (apt-get install clang lld wasi-libc " \
            "libclang-rt-14-dev-wasm32)"  # fmt: skip
    from relaykit.execution.aot.wasm import wasm_toolchain

    try:
        wasm_toolchain()
    except CompilerNotFoundError as err:
        return str(err)
    return None


def _have_arm() -> str | None:
    if shutil.which("qemu-system-arm") is None:
        return "qemu-system-arm is not installed (apt-get install qemu-system-arm)"
    from relaykit.execution.aot.cortexm import arm_toolchain

    try:
        arm_toolchain()
    except CompilerNotFoundError as err:
        return str(err)
    return None


NO_WASM = _have_wasm()
NO_ARM = _have_arm()
try:
    import wasmtime  # noqa: F401

    NO_WASMTIME = None
except ImportError:
    NO_WASMTIME = "wasmtime is not installed (pip install 'relaykit[wasm]')"
NODE = shutil.which("node") or shutil.which("nodejs")
CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)
NM = shutil.which("arm-none-eabi-nm")

needs_wasm = pytest.mark.skipif(NO_WASM is not None, reason=f"no wasm toolchain: {NO_WASM}")
needs_arm = pytest.mark.skipif(NO_ARM is not None, reason=f"no Cortex-M toolchain: {NO_ARM}")


def _rel_err(got: np.ndarray, want: np.ndarray) -> float:
    scale = max(float(np.max(np.abs(want))), 1e-30)
    return float(np.max(np.abs(got.astype(np.float64) - want))) / scale


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _mlp():
    rng = np.random.default_rng(10)
    params = {
        "w1": rng.standard_normal((48, 20)).astype("float32") * 0.3,
        "b1": rng.standard_normal(48).astype("float32"),
        "w2": rng.standard_normal((7, 48)).astype("float32") * 0.3,
        "b2": rng.standard_normal(7).astype("float32"),
    }
    x = relay.var("features:0", shape=(3, 20))
    v = {k: relay.var(k, shape=a.shape) for k, a in params.items()}
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, v["w1"]), v["b1"]))
    y = relay.nn.softmax(relay.nn.bias_add(relay.nn.dense(h, v["w2"]), v["b2"]))
    data = rng.standard_normal((3, 20)).astype("float32")

    def ref(d: np.ndarray) -> np.ndarray:
        p = {k: a.astype(np.float64) for k, a in params.items()}
        hh = np.maximum(d.astype(np.float64) @ p["w1"].T + p["b1"], 0)
        return _softmax(hh @ p["w2"].T + p["b2"])

    return (
        tvm.IRModule.from_expr(relay.Function([x, *v.values()], y)),
        params,
        {"features:0": data},
        ref,
    )


def _conv(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """NCHW x OIHW, stride 1, in float64."""
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i : i + oh, j : j + ow], w[:, :, i, j])
    return out


def _cnn():
    rng = np.random.default_rng(11)
    params = {
        "c1": rng.standard_normal((6, 2, 3, 3)).astype("float32") * 0.4,
        "cb1": rng.standard_normal(6).astype("float32") * 0.1,
        "c2": rng.standard_normal((8, 6, 3, 3)).astype("float32") * 0.3,
        "fc": rng.standard_normal((4, 8 * 4 * 4)).astype("float32") * 0.2,
        "fb": rng.standard_normal(4).astype("float32"),
    }
    x = relay.var("image", shape=(1, 2, 8, 8))
    v = {k: relay.var(k, shape=a.shape) for k, a in params.items()}
    c1 = relay.nn.relu(
        relay.nn.bias_add(
            relay.nn.conv2d(x, v["c1"], padding=(1, 1), channels=6, kernel_size=(3, 3)), v["cb1"]
        )
    )
    c2 = relay.nn.relu(relay.nn.conv2d(c1, v["c2"], padding=(1, 1), channels=8, kernel_size=(3, 3)))
    mp = relay.nn.max_pool2d(c2, pool_size=(2, 2), strides=(2, 2))
    logits = relay.nn.bias_add(relay.nn.dense(relay.nn.batch_flatten(mp), v["fc"]), v["fb"])
    y = relay.nn.softmax(logits)  # fmt: skip
    data = rng.standard_normal((1, 2, 8, 8)).astype("float32")

    def ref(d: np.ndarray) -> np.ndarray:
        p = {k: a.astype(np.float64) for k, a in params.items()}
        a1 = np.maximum(_conv(d.astype(np.float64), p["c1"], 1) + p["cb1"][:, None, None], 0)
        a2 = np.maximum(_conv(a1, p["c2"], 1), 0)
        m = a2.reshape(1, 8, 4, 2, 4, 2).max(axis=(3, 5))
        return _softmax(m.reshape(1, -1) @ p["fc"].T + p["fb"])

    return tvm.IRModule.from_expr(relay.Function([x, *v.values()], y)), params, {"image": data}, ref


def _partitioned():
    """A model with ccompiler regions: their C and constants join the same program."""
    rng = np.random.default_rng(12)
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = rng.standard_normal((4, 4, 3, 3)).astype("float32") * 0.3
    b = rng.standard_normal(4).astype("float32")
    wd = rng.standard_normal((3, 144)).astype("float32") * 0.2
    c = relay.nn.relu(
        relay.nn.bias_add(relay.nn.conv2d(x, relay.const(w), padding=(1, 1)), relay.const(b))
    )
    t = relay.tanh(c)  # stays outside the regions
    y = relay.nn.softmax(relay.nn.dense(relay.nn.batch_flatten(t * c), relay.const(wd)))
    mod = partition_for(tvm.IRModule.from_expr(relay.Function([x], y)), "ccompiler")
    data = rng.standard_normal((1, 4, 6, 6)).astype("float32")

    def ref(d: np.ndarray) -> np.ndarray:
        cc = np.maximum(
            _conv(d.astype(np.float64), w.astype(np.float64), 1)
            + b.astype(np.float64)[:, None, None],
            0,
        )
        return _softmax((np.tanh(cc) * cc).reshape(1, -1) @ wd.astype(np.float64).T)

    return mod, None, {"x": data}, ref


MODELS = {"mlp": _mlp, "cnn": _cnn, "ccompiler": _partitioned}


@pytest.fixture(scope="module")
def tars(tmp_path_factory) -> dict[str, tuple[Path, dict, object]]:
    """Each model exported as Model Library Format: (tar, inputs, NumPy reference)."""
    out = {}
    root = tmp_path_factory.mktemp("mlf")
    for name, make in MODELS.items():
        mod, params, inputs, ref = make()
        lib = relay.build(
            mod,
            target="c",
            params=params,
            executor=Executor("aot", {"interface-api": "c", "unpacked-api": True}),
            runtime=Runtime("crt"),
        )
        tar = root / f"{name}.tar"
        tvm.micro.export_model_library_format(lib, tar)
        out[name] = (tar, inputs, ref)
    return out


@pytest.fixture(scope="module")
def wasm_builds(tars, tmp_path_factory) -> dict[str, Path]:
    if NO_WASM is not None:
        pytest.skip(f"no wasm toolchain: {NO_WASM}")
    root = tmp_path_factory.mktemp("wasm")
    return {name: build_mlf(tar, root / name, "wasm").parent for name, (tar, _, _) in tars.items()}


@pytest.fixture(scope="module")
def arm_builds(tars, tmp_path_factory) -> dict[str, Path]:
    if NO_ARM is not None:
        pytest.skip(f"no Cortex-M toolchain: {NO_ARM}")
    root = tmp_path_factory.mktemp("arm")
    return {
        name: build_mlf(tar, root / name, "cortex-m").parent for name, (tar, _, _) in tars.items()
    }


@needs_wasm
@pytest.mark.skipif(NO_WASMTIME is not None, reason=str(NO_WASMTIME))
@pytest.mark.parametrize("model", MODELS)
def test_wasm_under_wasmtime_matches_numpy(model, tars, wasm_builds):
    _, inputs, ref = tars[model]
    (got,) = run_build(wasm_builds[model], inputs, "wasmtime").values()
    assert _rel_err(got, ref(*inputs.values())) < 1e-4


@needs_wasm
@pytest.mark.skipif(NODE is None, reason="Node.js is not installed (apt-get install nodejs)")
@pytest.mark.parametrize("model", MODELS)
def test_wasm_under_node_matches_numpy(model, tars, wasm_builds):
    _, inputs, ref = tars[model]
    (got,) = run_build(wasm_builds[model], inputs, "node").values()
    assert _rel_err(got, ref(*inputs.values())) < 1e-4


@needs_wasm
def test_wasm_program_imports_only_wasi(wasm_builds):
    """A WASI command needing nothing but WASI, and a reactor for the browser."""
    for build in wasm_builds.values():
        data = (build / "model.wasm").read_bytes()
        assert data[:4] == b"\0asm"
        assert b"wasi_snapshot_preview1" in data and b"fd_read" in data
        web = (build / "model.web.wasm").read_bytes()
        assert b"rk_run" in web and b"rk_input" in web and b"_start" not in web


@needs_wasm
@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
@pytest.mark.parametrize("model", MODELS)
def test_web_page_runs_the_model_in_chromium(model, tars, wasm_builds, tmp_path):
    _, inputs, ref = tars[model]
    page_dir = tmp_path / "site"
    shutil.copytree(wasm_builds[model], page_dir)
    meta = read_metadata(page_dir / "mlf")
    given = {
        spec["c_name"]: base64.b64encode(np.ascontiguousarray(inputs[name]).tobytes()).decode()
        for name, spec in meta["inputs"].items()
    }
    (page_dir / "inputs.js").write_text(f"window.RELAYKIT_INPUTS = {json.dumps(given)};\n")
    assert CHROMIUM is not None
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=20000", "--dump-dom", (page_dir / "index.html").as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    dom = proc.stdout
    assert 'data-status="done"' in dom, (dom[-2000:], proc.stderr[-2000:])
    assert "inputs.js" in re.search(r'<span id="source">([^<]*)<', dom).group(1)
    record = json.loads(re.search(r'<pre id="outputs">([^<]*)</pre>', dom).group(1))
    ((name, spec),) = meta["outputs"].items()
    got = np.frombuffer(base64.b64decode(record[name]), spec["dtype"]).reshape(spec["shape"])
    assert _rel_err(got, ref(*inputs.values())) < 1e-4


@needs_arm
@pytest.mark.parametrize("model", MODELS)
def test_cortex_m_under_qemu_matches_numpy(model, tars, arm_builds):
    _, inputs, ref = tars[model]
    (got,) = run_build(arm_builds[model], inputs).values()
    assert _rel_err(got, ref(*inputs.values())) < 1e-4


@needs_arm
@pytest.mark.skipif(NM is None, reason="arm-none-eabi-nm is not installed (gcc-arm-none-eabi)")
@pytest.mark.parametrize("model", MODELS)
def test_cortex_m_memory_report_agrees_with_the_elf(model, arm_builds):
    build = arm_builds[model]
    main = read_metadata(build / "mlf")["memory"]["functions"]["main"][0]
    assert NM is not None
    syms = subprocess.run([NM, "-S", str(build / "model.elf")], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip
    sizes: dict[str, int] = {}
    flash = ram = 0
    for line in syms.splitlines():
        parts = line.split()
        if len(parts) == 4:
            addr, size, _, sym = int(parts[0], 16), int(parts[1], 16), parts[2], parts[3]
            sizes[sym] = size
            if re.fullmatch(r"tvmgen_default_(\w+_)?const_\w+", sym):
                assert addr < 0x400000  # constants in flash
                flash += size
            if sym == "tvmgen_default_workspace" or re.fullmatch(r"(in|out)\d+", sym):
                assert 0x20000000 <= addr < 0x20400000  # buffers in RAM
                ram += size
    assert sizes["tvmgen_default_workspace"] == main["workspace_size_bytes"]
    assert flash == main["constants_size_bytes"]
    assert ram == main["workspace_size_bytes"] + main["io_size_bytes"]
    record = json.loads((build / "build.json").read_text())["memory"]
    assert record["ram"] == ram and record["flash"] == record["code"] + flash
    assert record["code"] > 0 and record["program_flash"] > record["flash"]
    report = "\n".join(memory_report(build))
    assert "flash: " in report and "agrees with the linker map" in report


def test_memory_report_disagreeing_with_the_map_is_an_error():
    from relaykit.execution.aot.cortexm import memory_from_map

    pad = " " * 16
    text = (
        "Discarded input sections\n\n .text.unused  0x0 0x40 x.o\n\n"
        "Linker script and memory map\n\n"
        ".text           0x00000000      0x200\n"
        " .text.tvmgen_default_run\n" + pad + "0x00000040       0x80 obj/default_lib1.o\n"
        " .rodata.tvmgen_default_const_p0\n" + pad + "0x000000c0       0x40 obj/default_lib0.o\n"
        ".bss            0x20000000      0x100\n"
        " .bss.tvmgen_default_workspace\n" + pad + "0x20000000       0x80 obj/default_lib0.o\n"
        " .bss.in0       0x20000080       0x20 obj/main.o\n"
        " .bss.out0      0x200000a0       0x10 obj/main.o\n"
    )
    meta = {
        "name": "default",
        "memory": {
            "functions": {
                "main": [
                    {"workspace_size_bytes": 128, "constants_size_bytes": 64, "io_size_bytes": 48}
                ]
            }
        },
    }
    good = memory_from_map(text, meta)
    assert (good["code"], good["flash"], good["ram"]) == (0x80, 0x80 + 64, 128 + 48)
    meta["memory"]["functions"]["main"][0]["workspace_size_bytes"] = 256  # type: ignore[index]
    with pytest.raises(ArtifactError, match="workspace: metadata.json 256, linker map 128"):
        memory_from_map(text, meta)


@needs_arm
def test_tampered_metadata_fails_the_build_and_leaves_nothing(tars, tmp_path):
    tar, _, _ = tars["mlp"]
    root = tmp_path / "x"
    with tarfile.open(tar) as t:
        t.extractall(root, filter="data")
    meta_path = root / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["modules"]["default"]["memory"]["functions"]["main"][0]["io_size_bytes"] += 8
    meta_path.write_text(json.dumps(meta))
    bad = tmp_path / "bad.tar"
    with tarfile.open(bad, "w") as t:
        for p in sorted(root.rglob("*")):
            t.add(p, arcname=str(p.relative_to(root)), recursive=False)
    out = tmp_path / "build"
    with pytest.raises(ArtifactError, match="inputs and outputs: metadata.json"):
        build_mlf(bad, out, "cortex-m")
    assert not out.exists()


def test_missing_wasmtime_names_the_extra(tars, tmp_path, monkeypatch):
    import sys

    from relaykit.execution.aot import wasm

    build = tmp_path / "b"
    (build / "mlf").mkdir(parents=True)
    with tarfile.open(tars["mlp"][0]) as t:
        t.extractall(build / "mlf", filter="data")
    (build / "model.wasm").write_bytes(b"\0asm\1\0\0\0")
    (build / "build.json").write_text('{"platform": "wasm", "program": "model.wasm"}')
    monkeypatch.setitem(sys.modules, "wasmtime", None)
    with pytest.raises(MissingDependencyError, match=r"relaykit\[wasm\]"):
        wasm.run(build, tars["mlp"][1], "wasmtime")


def test_missing_qemu_names_the_package(tmp_path, monkeypatch):
    from relaykit.execution.aot import cortexm

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(MissingDependencyError, match="apt-get install qemu-system-arm"):
        cortexm.qemu_command(tmp_path / "model.elf")


def test_a_model_too_big_for_the_board_is_refused():
    from relaykit.errors import BuildError
    from relaykit.execution.aot.cortexm import check_fits

    main = {"workspace_size_bytes": 5 << 20, "constants_size_bytes": 100, "io_size_bytes": 64}
    with pytest.raises(BuildError, match=r"mps2-an385.*workspace and input/output buffers take"):
        check_fits({"memory": {"functions": {"main": [main]}}})
    main.update(workspace_size_bytes=1024, constants_size_bytes=8 << 20)
    with pytest.raises(BuildError, match="its constants take 8388608 bytes"):
        check_fits({"memory": {"functions": {"main": [main]}}})
    main.update(constants_size_bytes=1 << 20)
    check_fits({"memory": {"functions": {"main": [main]}}})


def _fake_tool(bin_dir: Path, name: str, script: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / name
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(0o755)


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell for the fake tools")
def test_each_missing_part_of_the_wasm_toolchain_names_its_package(tmp_path, monkeypatch):
    from relaykit.execution.aot import wasm

    bin_dir = tmp_path / "bin"
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("RELAYKIT_WASI_SYSROOT", raising=False)
    monkeypatch.setattr(wasm, "_SYSROOTS", ())
    with pytest.raises(CompilerNotFoundError, match="apt-get install clang lld wasi-libc"):
        wasm.wasm_toolchain()
    _fake_tool(bin_dir, "clang", 'case "$*" in *libc.a*) echo libc.a;; esac\n')
    with pytest.raises(CompilerNotFoundError, match="wasm-ld.*apt-get install lld"):
        wasm.wasm_toolchain()
    _fake_tool(bin_dir, "wasm-ld", "exit 0\n")
    with pytest.raises(CompilerNotFoundError, match="apt-get install wasi-libc"):
        wasm.wasm_toolchain()
    libc = tmp_path / "libc.a"
    libc.write_bytes(b"")
    script = f'case "$*" in *libc.a*) echo {libc};; *libgcc*) echo /nonexistent/rt.a;; esac\n'
    _fake_tool(bin_dir, "clang", script)
    with pytest.raises(CompilerNotFoundError, match="apt-get install libclang-rt-14-dev-wasm32"):
        wasm.wasm_toolchain()


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell for the fake tools")
def test_missing_newlib_names_its_package(tmp_path, monkeypatch):
    from relaykit.execution.aot import cortexm

    bin_dir = tmp_path / "bin"
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(CompilerNotFoundError, match="apt-get install gcc-arm-none-eabi"):
        cortexm.arm_toolchain()
    # gcc prints the bare name of a library it cannot find
    _fake_tool(bin_dir, "arm-none-eabi-gcc", "echo librdimon.a\n")
    with pytest.raises(CompilerNotFoundError, match="apt-get install libnewlib-arm-none-eabi"):
        cortexm.arm_toolchain()
