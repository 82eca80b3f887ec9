"""``relaykit compile MODEL --executor aot -o model.tar``: ahead-of-time C as Model Library
Format.

The model is imported and partitioned as for ``--executor graph``; the build is
``relay.build(..., executor=Executor("aot"))`` (C-source backends' regions join the
program) and the tar is written by ``tvm.micro.export_model_library_format``. With
``--max-workspace``, a model whose static workspace is larger is refused before anything
is written.
"""

from __future__ import annotations

from pathlib import Path

from relaykit.cli._common import Progress, format_size, parse_size
from relaykit.errors import BuildError
from relaykit.execution.aot import AOTExecutorFactoryModule, export_model_library_format
from relaykit.execution.build_module import build
from relaykit.ir import IRModule
from relaykit.relay.backend import Executor, Runtime

__all__ = ["build_aot_model", "check_workspace", "parse_size", "write_mlf"]


def build_aot_model(mod: IRModule) -> AOTExecutorFactoryModule:
    """The ahead-of-time build of a (partitioned) module."""
    lib = build(
        mod,
        target="c",
        executor=Executor("aot", {"interface-api": "c", "unpacked-api": True}),
        runtime=Runtime("crt"),
    )
    if not isinstance(lib, AOTExecutorFactoryModule):
        raise BuildError("the ahead-of-time build returned no C program")
    return lib


def check_workspace(lib: AOTExecutorFactoryModule, limit: int | None) -> None:
    """A :class:`~relaykit.errors.BuildError` when the workspace exceeds ``limit`` bytes."""
    need = lib.program.workspace_bytes
    if limit is not None and need > limit:
        biggest = max(lib.program.functions[1:], key=lambda f: f.workspace_bytes, default=None)
        hint = ""
        if biggest is not None and biggest.workspace_bytes:
            hint = f" (of which scratch: {biggest.workspace_bytes} bytes, {biggest.name})"
        raise BuildError(
            f"the model needs a static workspace of {need} bytes ({format_size(need)}){hint}, "
            f"more than --max-workspace {limit} bytes; use a smaller input or batch, or a "
            "device with more RAM"
        )


def write_mlf(
    mod: IRModule,
    out: Path,
    what: str,
    max_workspace: int | None = None,
    progress: Progress | None = None,
) -> int:
    """Build ``mod`` ahead of time and write the MLF tar ``out``; prints a summary."""
    progress = progress or Progress(enabled=False)
    with progress.step("build ahead-of-time C"):
        lib = build_aot_model(mod)
    check_workspace(lib, max_workspace)
    with progress.step(f"write {out}"):
        export_model_library_format(lib, out)
    p = lib.program
    print(f"compiled {what} to ahead-of-time C: {len(p.functions) - 1} functions")
    for name, _, shape, dtype in p.inputs:
        print(f"  input  {name}: {dtype}{list(shape)}")
    for name, shape, dtype in p.outputs:
        print(f"  output {name}: {dtype}{list(shape)}")
    print(f"  workspace {p.workspace_bytes} bytes, constants {p.constants_bytes} bytes")
    print(f"wrote {out} ({format_size(out.stat().st_size)})")
    return 0
