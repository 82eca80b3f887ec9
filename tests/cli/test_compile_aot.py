"""``relaykit compile MODEL --executor aot``: a Model Library Format tar that ``cc`` builds
into a program matching onnxruntime; ``--max-workspace`` refuses before writing."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pytest

from relaykit.cli import main

ort = pytest.importorskip("onnxruntime")
CC = shutil.which("gcc") or shutil.which("cc")

_MAIN = r"""
#include <stdio.h>
#include <stdint.h>
#include "tvmgen_default.h"
static float img[1 * 3 * 12 * 12], probs[5];
int main(void) {
  FILE *f = fopen("image.bin", "rb");
  if (!f || fread(img, sizeof img, 1, f) != 1) return 1;
  fclose(f);
  struct tvmgen_default_inputs in = { img };
  struct tvmgen_default_outputs out = { probs };
  if (tvmgen_default_run(&in, &out) != 0) return 2;
  for (int i = 0; i < 5; ++i) printf("%.9g\n", probs[i]);
  return 0;
}
"""


@pytest.mark.skipif(CC is None, reason="no C compiler (gcc or cc) on PATH: install gcc")
def test_compile_aot_builds_and_matches_onnxruntime(conv_net: Path, tmp_path: Path, capsys):
    out = tmp_path / "model.tar"
    assert main(["compile", str(conv_net), "--executor", "aot", "-o", str(out)]) == 0
    assert "workspace" in capsys.readouterr().out
    root = tmp_path / "mlf"
    with tarfile.open(out) as t:
        t.extractall(root, filter="data")
    meta = json.loads((root / "metadata.json").read_text())
    assert meta["modules"]["default"]["executors"] == ["aot"]
    data = np.random.default_rng(0).standard_normal((1, 3, 12, 12)).astype("float32")
    (tmp_path / "image.bin").write_bytes(data.tobytes())
    (tmp_path / "main.c").write_text(_MAIN)
    srcs = [str(p) for p in sorted((root / "codegen/host/src").glob("*.c"))]
    exe = tmp_path / "model"
    subprocess.run([CC, "-O2", "-std=c99", "-I", str(root / "codegen/host/include"), *srcs,
                    str(tmp_path / "main.c"), "-o", str(exe), "-lm"], check=True)  # fmt: skip
    run = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True, check=True)
    got = np.array([float(v) for v in run.stdout.split()], "float32")
    sess = ort.InferenceSession(str(conv_net), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"image": data})[0].reshape(-1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)


def test_max_workspace_refuses_and_writes_nothing(conv_net: Path, tmp_path: Path, capsys):
    out = tmp_path / "model.tar"
    assert main(["compile", str(conv_net), "--executor", "aot", "-o", str(out),
                 "--max-workspace", "100"]) != 0  # fmt: skip
    err = capsys.readouterr().err
    assert "static workspace of" in err and "--max-workspace 100 bytes" in err
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tar" or ".mlf" in p.name] == []


def test_graph_compile_still_needs_a_target(conv_net: Path, tmp_path: Path, capsys):
    assert main(["compile", str(conv_net), "-o", str(tmp_path / "m.rkmod")]) != 0
    assert "--target" in capsys.readouterr().err


@pytest.mark.skipif(CC is None, reason="no C compiler (gcc or cc) on PATH: install gcc")
def test_micro_build_and_run(conv_net: Path, tmp_path: Path, capsys):
    tar = tmp_path / "model.tar"
    assert main(["compile", str(conv_net), "--executor", "aot", "-o", str(tar)]) == 0
    build = tmp_path / "build"
    assert main(["micro", "build", str(tar), "--platform", "host", "-o", str(build)]) == 0
    data = np.random.default_rng(1).standard_normal((1, 3, 12, 12)).astype("float32")
    np.savez(tmp_path / "in.npz", image=data)
    capsys.readouterr()
    assert main(["micro", "run", str(build), "--inputs", str(tmp_path / "in.npz"),
                 "--outputs", str(tmp_path / "out.npz")]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "memory: workspace" in printed and "constants" in printed
    got = np.load(tmp_path / "out.npz")["output"]
    sess = ort.InferenceSession(str(conv_net), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"image": data})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize(
    ("platform", "package"),
    [("host", "gcc"), ("cortex-m", "gcc-arm-none-eabi"), ("wasm", "wasi-libc")],
)
def test_micro_build_names_the_missing_toolchain(
    conv_net: Path, tmp_path: Path, capsys, monkeypatch, platform: str, package: str
):
    tar = tmp_path / "model.tar"
    assert main(["compile", str(conv_net), "--executor", "aot", "-o", str(tar)]) == 0
    for var in ("RELAYKIT_CC", "CC"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    capsys.readouterr()
    out = tmp_path / "b"
    assert main(["micro", "build", str(tar), "--platform", platform, "-o", str(out)]) != 0
    err = capsys.readouterr().err
    assert "compiler" in err.lower() or "not on PATH" in err
    if platform != "host":
        assert package in err
    assert not out.exists()
