"""Build an ahead-of-time model, export it as Model Library Format, compile the tar with
``cc`` and a ``main.c`` written here, run it, and return its outputs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.relay.backend import Executor, Runtime

CC = shutil.which("gcc") or shutil.which("cc")

_MAIN = r"""
#include <stdio.h>
#include <stdint.h>
#include "tvmgen_default.h"
%(buffers)s
static int rd(const char *p, void *b, size_t n) {
  FILE *f = fopen(p, "rb"); if (!f) return 1;
  size_t k = fread(b, 1, n, f); fclose(f); return k != n;
}
static int wr(const char *p, const void *b, size_t n) {
  FILE *f = fopen(p, "wb"); if (!f) return 1;
  size_t k = fwrite(b, 1, n, f); fclose(f); return k != n;
}
int main(void) {
  struct tvmgen_default_inputs in;
  struct tvmgen_default_outputs out;
%(body)s
  if (tvmgen_default_run(&in, &out) != 0) return 3;
%(tail)s
  return 0;
}
"""


def aot_build(mod: tvm.IRModule, params: Mapping[str, np.ndarray] | None = None):
    return relay.build(
        mod,
        target="c",
        executor=Executor("aot", {"interface-api": "c", "unpacked-api": True}),
        runtime=Runtime("crt"),
        params=params,
    )


def compile_and_run(
    lib,
    inputs: Sequence[np.ndarray],
    out_types: Sequence[tuple[tuple[int, ...], str]],
    work: Path,
    cflags: Sequence[str] = (),
) -> tuple[list[np.ndarray], dict, Path]:
    """Export ``lib`` as MLF into ``work``, compile it with ``main.c``, run; outputs,
    the metadata and the binary."""
    tar = work / "model.tar"
    tvm.micro.export_model_library_format(lib, tar)
    root = work / "mlf"
    with tarfile.open(tar) as t:
        t.extractall(root, filter="data")
    meta = json.loads((root / "metadata.json").read_text())
    header = (root / "codegen/host/include/tvmgen_default.h").read_text()
    in_fields = re.findall(
        r"void \*(\w+);", header.split("struct tvmgen_default_inputs")[1].split("};")[0]
    )
    out_fields = re.findall(
        r"void \*(\w+);", header.split("struct tvmgen_default_outputs")[1].split("};")[0]
    )
    assert len(in_fields) == len(inputs) and len(out_fields) == len(out_types)
    bufs, body, tail = [], [], []
    for i, (name, arr) in enumerate(zip(in_fields, inputs, strict=True)):
        (work / f"in{i}.bin").write_bytes(np.ascontiguousarray(arr).tobytes())
        bufs.append(f"static uint64_t ib{i}[{max(arr.nbytes // 8 + 1, 1)}];")
        body.append(f"  in.{name} = ib{i};")
        body.append(f'  if (rd("in{i}.bin", ib{i}, {arr.nbytes})) return 1;')
    for k, (name, (shape, dtype)) in enumerate(zip(out_fields, out_types, strict=True)):
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        bufs.append(f"static uint64_t ob{k}[{n // 8 + 1}];")
        body.append(f"  out.{name} = ob{k};")
        tail.append(f'  if (wr("out{k}.bin", ob{k}, {n})) return 2;')
    (work / "main.c").write_text(
        _MAIN % {"buffers": "\n".join(bufs), "body": "\n".join(body), "tail": "\n".join(tail)}
    )
    exe = work / "model"
    srcs = sorted(str(p) for p in (root / "codegen/host/src").glob("*.c"))
    cmd = [
        CC,
        "-O2",
        "-std=c99",
        "-Wall",
        "-Werror",
        "-Wno-unused-function",
        "-Wno-unused-variable",  # the backend regions' C declares its workspace always
        *cflags,
        "-I",
        str(root / "codegen/host/include"),
        *srcs,
        str(work / "main.c"),
        "-o",
        str(exe),
        "-lm",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[:4000]
    run = subprocess.run([str(exe)], cwd=work, capture_output=True, timeout=600)
    assert run.returncode == 0, run
    outs = [
        np.fromfile(work / f"out{k}.bin", dtype=dtype).reshape(shape)
        for k, (shape, dtype) in enumerate(out_types)
    ]
    return outs, meta, exe


def workspace_array_bytes(lib) -> int:
    """The byte size of the one static workspace array, read from the generated C."""
    src = lib.sources["default_lib0.c"]
    (words,) = re.findall(r"uint64_t tvmgen_default_workspace\[(\d+)\];", src)
    return int(words) * 8


@pytest.fixture
def aot() -> Callable:
    """``aot(mod, params, inputs, out_types, tmp_path)`` -> (outputs, metadata, lib, binary)."""
    if CC is None:
        pytest.skip("no C compiler (gcc or cc) on PATH: install gcc")

    def run(mod, params, inputs, out_types, work, cflags=()):
        lib = aot_build(mod, params)
        outs, meta, exe = compile_and_run(lib, inputs, out_types, work, cflags)
        return outs, meta, lib, exe

    return run


@pytest.fixture
def workspace_of() -> Callable:
    """The byte size of a build's static workspace array, read from its C."""
    return workspace_array_bytes
