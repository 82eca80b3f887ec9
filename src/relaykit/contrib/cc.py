"""TVM's ``tvm.contrib.cc``: link object or source files with the system C/C++ compiler.

``create_shared(output, objects, options=None, cc=None)`` makes a shared library and
``create_executable`` a program. The compiler is ``cc`` when given, else ``$CXX`` /
``$CC``, else the first of ``g++``, ``c++``, ``clang++``, ``gcc``, ``cc`` on PATH (see
:func:`relaykit.runtime.native_build.find_compiler`). A compiler that fails raises
:class:`~relaykit.errors.CompileError` with its output.

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> src = os.path.join(d, "add.c")
>>> _ = open(src, "w").write("int add(int a, int b) { return a + b; }\\n")
>>> create_shared(os.path.join(d, "libadd.so"), [src])
>>> os.path.exists(os.path.join(d, "libadd.so"))
True
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Sequence

from relaykit.errors import ArgumentError, CompileError
from relaykit.runtime.native_build import find_compiler

__all__ = ["create_shared", "create_executable", "get_cc"]


def get_cc() -> str:
    """The path of the C/C++ compiler ``create_shared`` uses by default."""
    return _compiler(None)[0]


def _compiler(cc: str | None) -> list[str]:
    if cc:
        return shlex.split(cc)
    return find_compiler(
        "tvm.contrib.cc", env=("CXX", "CC"), names=("g++", "c++", "clang++", "gcc", "cc")
    )


def _files(objects: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    if isinstance(objects, (str, os.PathLike)):
        return [os.fspath(objects)]
    files = [os.fspath(o) for o in objects]
    if not files:
        raise ArgumentError("tvm.contrib.cc: no object or source files given to link")
    return files


def _run(argv: list[str], cwd: str | None) -> None:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise CompileError(
            f"tvm.contrib.cc: `{shlex.join(argv)}` failed (exit {proc.returncode}):\n"
            f"{proc.stdout}{proc.stderr}"
        )


def create_shared(
    output: str | os.PathLike[str],
    objects: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    options: Sequence[str] | None = None,
    cc: str | None = None,
    cwd: str | None = None,
) -> None:
    """Link ``objects`` (object or source files) into the shared library ``output``."""
    argv = [*_compiler(cc), "-shared", "-fPIC", "-o", os.fspath(output), *_files(objects)]
    _run([*argv, *(options or ())], cwd)


def create_executable(
    output: str | os.PathLike[str],
    objects: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    options: Sequence[str] | None = None,
    cc: str | None = None,
    cwd: str | None = None,
) -> None:
    """Link ``objects`` into the program ``output``."""
    argv = [*_compiler(cc), "-o", os.fspath(output), *_files(objects)]
    _run([*argv, *(options or ())], cwd)


create_shared.output_format = "so"  # type: ignore[attr-defined]
create_executable.output_format = ""  # type: ignore[attr-defined]
