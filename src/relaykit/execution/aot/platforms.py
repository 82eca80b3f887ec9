"""Building and running a Model Library Format tar: the generated ``main.c``, toolchains.

:func:`build_mlf` extracts the tar into a directory, writes a ``main.c`` that reads each
input from ``<input>.bin``, runs ``tvmgen_default_run`` and writes each output (raw,
dense, row-major), and compiles it for a platform:

- ``host``: ``cc``; outputs are written to ``<dir>/<output>.bin``;
- ``wasm``: ``clang --target=wasm32-wasi`` (:mod:`.wasm`), run by wasmtime or Node, plus a
  web page that runs the model in a browser;
- ``cortex-m``: ``arm-none-eabi-gcc`` for the Cortex-M3 of the MPS2 AN385 board
  (:mod:`.cortexm`), run by ``qemu-system-arm``; outputs are printed by semihosting and
  the memory report is checked against the linker map.

:func:`run_build` runs any of these builds on NumPy arrays. The build directory records
its platform in ``build.json``.

>>> toolchain("host")  # doctest: +SKIP
['/usr/bin/cc']
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from relaykit.errors import ArtifactError, ExecutionError

from . import cortexm, wasm
from .builddir import (
    PLATFORMS,
    compile_c,
    main_source,
    read_metadata,
    read_outputs,
    toolchain,
    write_inputs,
)

__all__ = [
    "PLATFORMS",
    "build_mlf",
    "main_source",
    "memory_report",
    "read_build",
    "read_metadata",
    "run_build",
    "run_host",
    "toolchain",
]


def build_mlf(tar: Path, out_dir: Path, platform: str = "host") -> Path:
    """Extract ``tar`` into ``out_dir``, write ``main.c`` and build for ``platform``.

    Returns the program (``model``, ``model.wasm`` or ``model.elf``). The toolchain is
    checked before anything is written; a failed build removes the directory it made.

    >>> build_mlf(Path("model.tar"), Path("m3"), "cortex-m")  # doctest: +SKIP
    PosixPath('m3/model.elf')
    """
    tar, out_dir = Path(tar), Path(out_dir)
    if platform == "wasm":
        tools = wasm.wasm_toolchain()
    elif platform == "cortex-m":
        tools = cortexm.arm_toolchain()
    else:
        tools = {"cc": toolchain(platform)}
    fresh = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        return _build(tools, tar, out_dir, platform)
    except BaseException:
        if fresh:  # a failed build leaves nothing behind
            shutil.rmtree(out_dir, ignore_errors=True)
        raise


def _build(tools: Mapping[str, list[str]], tar: Path, out_dir: Path, platform: str) -> Path:
    root = out_dir / "mlf"
    if root.exists():
        shutil.rmtree(root)
    try:
        with tarfile.open(tar) as t:
            t.extractall(root, filter="data")
    except (OSError, tarfile.TarError) as err:
        raise ArtifactError(f"cannot read {tar}: {err}") from None
    meta = read_metadata(root)
    (out_dir / "build.json").unlink(missing_ok=True)
    (out_dir / "main.c").write_text(main_source(meta, platform))
    record: dict[str, Any] = {"platform": platform}
    if platform == "wasm":
        exe = wasm.build(tools, root, meta, out_dir, tar)
    elif platform == "cortex-m":
        exe, record["memory"] = cortexm.build(tools, root, meta, out_dir, tar)
    else:
        exe = out_dir / "model"
        sources = sorted(str(p) for p in (root / "codegen/host/src").glob("*.c"))
        compile_c([*tools["cc"], "-O2", "-std=c99", "-I", str(root / "codegen/host/include"),
                   *sources, str(out_dir / "main.c"), "-o", str(exe), "-lm"],
                  tar, platform)  # fmt: skip
    record["program"] = exe.name
    (out_dir / "build.json").write_text(json.dumps(record, indent=1) + "\n")
    return exe


def read_build(build_dir: Path) -> dict[str, Any]:
    """The ``build.json`` of a build directory (its platform and program)."""
    build_dir = Path(build_dir)
    try:
        record = json.loads((build_dir / "build.json").read_text())
    except (OSError, ValueError):
        if (build_dir / "model").is_file():  # a host build of an older relaykit
            return {"platform": "host", "program": "model"}
        raise ArtifactError(
            f"{build_dir} is not a build directory; make one with 'relaykit micro build'"
        ) from None
    if not (build_dir / str(record.get("program"))).is_file():
        raise ArtifactError(f"{build_dir} has no built program; run 'relaykit micro build' again")
    return dict(record)


def run_host(build_dir: Path, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run a host build on ``inputs`` (by the model's input names); outputs by name."""
    meta = read_metadata(build_dir / "mlf")
    with tempfile.TemporaryDirectory(prefix="relaykit-micro-") as tmp:
        write_inputs(meta, inputs, Path(tmp))
        proc = subprocess.run(
            [str(build_dir / "model"), tmp], capture_output=True, text=True, timeout=3600
        )
        if proc.returncode != 0:
            raise ExecutionError(f"the model program failed: {proc.stderr.strip()}")
        return read_outputs(meta, Path(tmp))


def run_build(
    build_dir: Path, inputs: Mapping[str, np.ndarray], engine: str | None = None
) -> dict[str, np.ndarray]:
    """Run the build in ``build_dir`` on ``inputs``; outputs by name.

    Host builds run natively, wasm builds under ``engine`` (``wasmtime``, the default,
    or ``node``), Cortex-M builds under ``qemu-system-arm``.

    >>> run_build(Path("m3"), {"image": x})["output"].shape  # doctest: +SKIP
    (1, 5)
    """
    build_dir = Path(build_dir)
    record = read_build(build_dir)
    platform = record["platform"]
    if engine is not None and platform != "wasm":
        raise ExecutionError(
            f"--engine chooses how wasm builds run; {build_dir} is a {platform} build"
        )
    if platform == "wasm":
        return wasm.run(build_dir, inputs, engine or "wasmtime")
    if platform == "cortex-m":
        return cortexm.run(build_dir, inputs)
    return run_host(build_dir, inputs)


def memory_report(build_dir: Path) -> list[str]:
    """Lines of the memory report of a build: ``metadata.json``'s sizes and, for a
    Cortex-M build, flash and RAM as checked against the linker map."""
    build_dir = Path(build_dir)
    meta = read_metadata(build_dir / "mlf")
    main = meta["memory"]["functions"]["main"][0]
    ws, consts, io = (int(main[k]) for k in ("workspace_size_bytes", "constants_size_bytes",
                                              "io_size_bytes"))  # fmt: skip
    lines = [
        f"memory: workspace {_size(ws)} ({ws} bytes), constants {_size(consts)} "
        f"({consts} bytes), inputs and outputs {_size(io)} ({io} bytes)"
    ]
    try:
        record = read_build(build_dir)
    except ArtifactError:
        return lines
    mem = record.get("memory")
    if mem:
        lines.append(
            f"flash: {_size(mem['flash'])} ({mem['flash']} bytes) = code {mem['code']} + "
            f"constants {mem['constants']}; RAM: {_size(mem['ram'])} ({mem['ram']} bytes) = "
            f"workspace {mem['workspace']} + inputs and outputs {mem['io']} "
            "(agrees with the linker map)"
        )
        lines.append(
            f"whole program ({mem['board']}): flash {mem['program_flash']} bytes, "
            f"RAM {mem['program_ram']} bytes before stack and heap"
        )
    return lines


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
