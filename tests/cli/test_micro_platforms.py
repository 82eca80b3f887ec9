"""``relaykit micro build --platform wasm|cortex-m`` and ``relaykit micro run``: an ONNX
model compiled ahead of time, built for wasm32-wasi and for an emulated Cortex-M3, run on
an ``.npz`` and compared with onnxruntime. Skipped, naming the package, when a toolchain
is missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from relaykit.cli import main
from relaykit.errors import CompilerNotFoundError
from relaykit.execution.aot.cortexm import arm_toolchain
from relaykit.execution.aot.wasm import wasm_toolchain

ort = pytest.importorskip("onnxruntime")


def _missing(check) -> str | None:
    try:
        check()
    except CompilerNotFoundError as err:
        return str(err)
    return None


NO_WASM = _missing(wasm_toolchain)
NO_ARM = _missing(arm_toolchain) or (
    None if shutil.which("qemu-system-arm") else "apt-get install qemu-system-arm"
)


def _compile(conv_net: Path, tmp_path: Path) -> tuple[Path, np.ndarray, Path]:
    tar = tmp_path / "model.tar"
    assert main(["compile", str(conv_net), "--executor", "aot", "-o", str(tar)]) == 0
    data = np.random.default_rng(5).standard_normal((1, 3, 12, 12)).astype("float32")
    np.savez(tmp_path / "in.npz", image=data)
    return tar, data, tmp_path / "in.npz"


def _want(conv_net: Path, data: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(str(conv_net), providers=["CPUExecutionProvider"])
    return sess.run(None, {"image": data})[0]


@pytest.mark.skipif(NO_WASM is not None, reason=f"no wasm toolchain: {NO_WASM}")
@pytest.mark.parametrize("engine", ["wasmtime", "node"])
def test_micro_wasm_build_and_run(conv_net: Path, tmp_path: Path, capsys, engine: str):
    if engine == "wasmtime":
        pytest.importorskip("wasmtime", reason="pip install 'relaykit[wasm]'")
    elif shutil.which("node") is None:
        pytest.skip("Node.js is not installed (apt-get install nodejs)")
    tar, data, npz = _compile(conv_net, tmp_path)
    build = tmp_path / "web"
    assert main(["micro", "build", str(tar), "--platform", "wasm", "-o", str(build)]) == 0
    assert "index.html" in capsys.readouterr().out
    assert (build / "model.wasm").is_file() and (build / "index.html").is_file()
    out = tmp_path / "out.npz"
    assert main(["micro", "run", str(build), "--inputs", str(npz), "--outputs", str(out),
                 "--engine", engine]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "output: float32[1, 5]" in printed and "memory: workspace" in printed
    np.testing.assert_allclose(np.load(out)["output"], _want(conv_net, data), rtol=1e-4, atol=1e-7)


@pytest.mark.skipif(NO_ARM is not None, reason=f"no Cortex-M toolchain: {NO_ARM}")
def test_micro_cortex_m_build_and_run(conv_net: Path, tmp_path: Path, capsys):
    tar, data, npz = _compile(conv_net, tmp_path)
    build = tmp_path / "m3"
    assert main(["micro", "build", str(tar), "--platform", "cortex-m", "-o", str(build)]) == 0
    printed = capsys.readouterr().out
    assert "flash:" in printed and "agrees with the linker map" in printed
    out = tmp_path / "out.npz"
    assert main(["micro", "run", str(build), "--inputs", str(npz), "--outputs", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "output: float32[1, 5]" in printed and "RAM:" in printed
    np.testing.assert_allclose(np.load(out)["output"], _want(conv_net, data), rtol=1e-4, atol=1e-7)
    # --engine is for wasm builds only
    assert main(["micro", "run", str(build), "--inputs", str(npz), "--engine", "node"]) != 0
    assert "--engine" in capsys.readouterr().err


def test_micro_run_needs_a_build_directory(tmp_path: Path, capsys):
    np.savez(tmp_path / "in.npz", image=np.zeros(3))
    (tmp_path / "empty").mkdir()
    assert main(["micro", "run", str(tmp_path / "empty"), "--inputs",
                 str(tmp_path / "in.npz")]) != 0  # fmt: skip
    assert "relaykit micro build" in capsys.readouterr().err
