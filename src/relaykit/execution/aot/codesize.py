"""Code bytes of an ahead-of-time program, measured by compiling it.

``metadata.json`` reports code bytes only when they were measured: the program's C is
compiled with the host C compiler (``$CC``, else ``cc``/``gcc``/``clang``) into ELF
objects, and the sizes are read from them. The whole program's code is the size of
the executable sections of ``cc -O2`` objects; each function's code is its symbol's
size in a ``cc -O2 -fno-inline`` build (the plain build inlines kernels into the run
function, where they could not be told apart), its specialised copies included.
Without a compiler, or for objects that are not ELF, the sizes are unknown (``None``),
never guessed.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CodeSizes", "measure_code_sizes", "elf_sizes"]

_DEFINES_FUNCTION = re.compile(r"\)\s*\{")


@dataclass(frozen=True)
class CodeSizes:
    """Measured code bytes: ``total`` (None: unknown), per function, and how."""

    total: int | None
    functions: dict[str, int] = field(default_factory=dict)
    method: str = ""


def elf_sizes(data: bytes) -> tuple[int, dict[str, int]] | None:
    """(bytes of executable sections, size of each function symbol) of an ELF object,
    or None when ``data`` is not a little-endian ELF file.

    >>> elf_sizes(b"MZ not an ELF object") is None
    True
    """
    if data[:4] != b"\x7fELF" or data[5] != 1:
        return None
    is64 = data[4] == 2
    if is64:
        shoff, shentsize, shnum = (
            struct.unpack_from("<Q", data, 0x28)[0],
            *struct.unpack_from("<HH", data, 0x3A),
        )
    else:
        shoff, shentsize, shnum = (
            struct.unpack_from("<I", data, 0x20)[0],
            *struct.unpack_from("<HH", data, 0x2E),
        )
    sections = []
    for i in range(shnum):
        off = shoff + i * shentsize
        if is64:
            _, stype, flags, _, sh_off, size, link, _, _, entsize = struct.unpack_from(
                "<IIQQQQIIQQ", data, off
            )
        else:
            _, stype, flags, _, sh_off, size, link, _, _, entsize = struct.unpack_from(
                "<IIIIIIIIII", data, off
            )
        sections.append((stype, flags, sh_off, size, link, entsize))
    code = sum(size for stype, flags, _, size, _, _ in sections if stype == 1 and flags & 0x4)
    funcs: dict[str, int] = {}
    for stype, _, sh_off, size, link, entsize in sections:
        if stype != 2 or not entsize:  # SHT_SYMTAB
            continue
        str_off = sections[link][2]
        for k in range(size // entsize):
            off = sh_off + k * entsize
            if is64:
                name, info, _, _, _, sym_size = struct.unpack_from("<IBBHQQ", data, off)
            else:
                name, _, sym_size, info, _, _ = struct.unpack_from("<IIIBBH", data, off)
            if info & 0xF != 2:  # STT_FUNC
                continue
            end = data.index(b"\0", str_off + name)
            # a compiler's specialised copies (f.constprop.0, f.part.0, clones) count as f
            base = data[str_off + name : end].decode().split(".")[0]
            funcs[base] = funcs.get(base, 0) + sym_size
    return code, funcs


def _compiler() -> str | None:
    return (
        os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    )


def measure_code_sizes(sources: Mapping[str, str], header_name: str, header: str) -> CodeSizes:
    """Compile ``sources`` (file name -> C) with ``header`` and measure their code.

    >>> measure_code_sizes(lib.sources, "tvmgen_default.h", lib.header).total  # doctest: +SKIP
    2599
    """
    cc = _compiler()
    if cc is None:
        return CodeSizes(None, {}, "unknown: no C compiler on PATH")
    total = 0
    funcs: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="relaykit-codesize-") as tmp:
        work = Path(tmp)
        (work / header_name).write_text(header)
        for fname, text in sources.items():
            if not _DEFINES_FUNCTION.search(text):  # data only (parameters, workspace)
                continue
            src = work / fname
            src.write_text(text)
            for flags, obj in ((["-O2"], "plain.o"), (["-O2", "-fno-inline"], "noinline.o")):
                cmd = [cc, *flags, "-std=c99", "-w", "-c", "-I", str(work), str(src), "-o",
                       str(work / obj)]  # fmt: skip
                try:
                    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
                except (OSError, subprocess.TimeoutExpired) as err:
                    return CodeSizes(None, {}, f"unknown: {cc} failed ({err})")
                if res.returncode != 0:
                    return CodeSizes(None, {}, f"unknown: {cc} failed on {fname}")
                sizes = elf_sizes((work / obj).read_bytes())
                if sizes is None:
                    return CodeSizes(None, {}, f"unknown: {cc} does not write ELF objects")
                if obj == "plain.o":
                    total += sizes[0]
                else:
                    funcs.update(sizes[1])
    method = f"{Path(cc).name} -O2 executable sections; per function: -O2 -fno-inline symbols"
    return CodeSizes(total, funcs, method)
