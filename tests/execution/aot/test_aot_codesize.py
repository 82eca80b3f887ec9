"""Code bytes in ``metadata.json``: measured by compiling the C, checked here with
binutils' ``size`` on objects this test compiles; unknown (null) without a compiler."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.execution.aot import codesize, mlf_metadata

from .conftest import CC, aot_build


def _mlp():
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(2, 24))
    w1 = relay.const(rng.standard_normal((16, 24)).astype("float32"))
    w2 = relay.const(rng.standard_normal((5, 16)).astype("float32"))
    h = relay.nn.relu(relay.nn.dense(x, w1))
    y = relay.nn.softmax(relay.nn.dense(h, w2))
    return tvm.IRModule.from_expr(relay.Function([x], y))


@pytest.mark.skipif(CC is None or shutil.which("size") is None, reason="needs cc and size")
def test_code_bytes_are_the_compiled_text(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", CC)
    lib = aot_build(_mlp())
    meta = mlf_metadata(lib)["modules"]["default"]
    main = meta["memory"]["functions"]["main"][0]
    (tmp_path / "tvmgen_default.h").write_text(lib.header)
    text = 0
    for name, src in lib.sources.items():
        (tmp_path / name).write_text(src)
        obj = tmp_path / (name + ".o")
        subprocess.run([CC, "-O2", "-std=c99", "-c", "-I", str(tmp_path), str(tmp_path / name),
                        "-o", str(obj)], check=True)  # fmt: skip
        out = subprocess.run(["size", "-A", str(obj)], capture_output=True, text=True).stdout
        text += sum(int(m) for m in re.findall(r"^\.text\S*\s+(\d+)", out, re.MULTILINE))
    assert text > 0
    assert main["code_size_bytes"] == text == meta["code_size_bytes"]
    ops = meta["memory"]["functions"]["operator_functions"]
    assert len(ops) >= 3
    for f in ops:
        assert isinstance(f["code_size_bytes"], int) and f["code_size_bytes"] > 0, f
    assert "tvmgen_dense" in meta["code_size_shared_functions"]  # the dense helper


def test_without_a_compiler_the_code_size_is_unknown(monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(codesize.shutil, "which", lambda name: None)
    meta = mlf_metadata(aot_build(_mlp()))["modules"]["default"]
    assert meta["code_size_bytes"] is None
    assert meta["code_size_method"].startswith("unknown")
    assert all(f["code_size_bytes"] is None
               for f in meta["memory"]["functions"]["operator_functions"])  # fmt: skip
