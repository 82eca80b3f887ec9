"""Files given on the command line, read and written safely.

Every file a subcommand reads is checked before a byte is read: it must be a regular
file (not a directory, a FIFO, a device or a socket) of at most ``--max-file-size``
bytes. It is opened without blocking, checked again on the open descriptor, and never
more than the limit is read, so ``/dev/zero``, a FIFO or a file growing underneath cost
bounded memory and time. An ``.npz`` is read member by member, each header checked
(plain numbers, no pickle, within the limit once decompressed) before its data.
"""

from __future__ import annotations

import argparse
import os
import re
import stat
import zipfile
import zlib
from pathlib import Path

import numpy as np

from relaykit.errors import UsageError

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "parse_size",
    "format_size",
    "add_file_limit",
    "check_file",
    "check_output_path",
    "read_file_bytes",
    "read_text_file",
    "load_npz",
]

#: The largest file a subcommand reads unless ``--max-file-size`` says otherwise.
DEFAULT_MAX_FILE_SIZE = 2 * 1024**3

_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str) -> int:
    """``"512M"`` -> 536870912: a byte count with an optional K/M/G/T suffix (powers of 1024).

    >>> parse_size("2G"), parse_size("100"), parse_size("1.5k")
    (2147483648, 100, 1536)
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size: give bytes, or a number with K, M, G or T (e.g. 512M)"
        )
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_size(n: int) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover - the loop always returns


def add_file_limit(parser: argparse.ArgumentParser) -> None:
    """The ``--max-file-size`` option of a subcommand that reads files."""
    parser.add_argument(
        "--max-file-size",
        type=parse_size,
        default=DEFAULT_MAX_FILE_SIZE,
        metavar="SIZE",
        help="refuse input files larger than this (default 2G; e.g. 512M, 8G)",
    )


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _check_stat(st: os.stat_result, path: str, what: str, limit: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{what} {path!r} is {_kind(st.st_mode)}; give a regular file")
    if st.st_size > limit:
        raise UsageError(
            f"{what} {path!r} is {format_size(st.st_size)}, above the limit of "
            f"{format_size(limit)}; raise it with --max-file-size if the file is trusted"
        )


def check_file(path: str | os.PathLike[str], what: str, limit: int) -> Path:
    """``path`` if it names a regular file of at most ``limit`` bytes, else a UsageError
    saying what is wrong (missing, a directory, a FIFO or device, too large)."""
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        raise UsageError(f"{what} {name!r} does not exist") from None
    except OSError as err:
        raise UsageError(f"cannot read {what} {name!r}: {err.strerror}") from None
    _check_stat(st, name, what, limit)
    return Path(name)


def check_output_path(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` if a file may be written there: it is new or a regular file (writing to
    a FIFO would block, to a device or a directory makes no sense)."""
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        parent = Path(name).parent
        if not parent.is_dir():
            raise UsageError(
                f"{what} {name!r}: the directory {str(parent)!r} does not exist"
            ) from None
        return Path(name)
    except OSError as err:
        raise UsageError(f"cannot write {what} {name!r}: {err.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{what} {name!r} is {_kind(st.st_mode)}; give a file name to write")
    return Path(name)


def read_file_bytes(path: str | os.PathLike[str], what: str, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    The file is opened without blocking (a FIFO does not hang) and checked on the open
    descriptor before anything is read, and no more than ``limit`` bytes are ever read,
    so a device such as ``/dev/zero`` or a file growing underneath costs bounded memory.
    """
    name = os.fspath(path)
    check_file(name, what, limit)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags)
    except OSError as err:
        raise UsageError(f"cannot read {what} {name!r}: {err.strerror}") from None
    with os.fdopen(fd, "rb", closefd=True) as f:
        _check_stat(os.fstat(f.fileno()), name, what, limit)
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UsageError(
            f"{what} {name!r} grew above the limit of {format_size(limit)} while being read"
        )
    return data


def read_text_file(path: str | os.PathLike[str], what: str, limit: int) -> str:
    """A UTF-8 text file (bounded as :func:`read_file_bytes`); binary data is a UsageError."""
    data = read_file_bytes(path, what, limit)
    name = os.fspath(path)
    nul = data.find(b"\0")
    if nul >= 0:
        raise UsageError(
            f"{what} {name!r} is a binary file (a NUL byte at offset {nul}), not Relay text"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(
            f"{what} {name!r} is not UTF-8 text (byte {err.start}); a Relay text file is expected"
        ) from None


_NPZ_KINDS = "biufc"  # bool, integers, floats, complex: plain numbers, no objects


def _npz_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, budget: int) -> np.ndarray:
    """One ``.npy`` member, its header checked before its data is read."""
    key = info.filename[: -len(".npy")]
    with zf.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        if dtype.kind not in _NPZ_KINDS or dtype.hasobject or dtype.fields is not None:
            raise UsageError(
                f"array {key!r} of {name!r} has dtype {dtype}; only numbers and booleans are "
                "read (no objects, no pickles)"
            )
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        nbytes = count * dtype.itemsize
        if count < 0 or nbytes > budget:
            raise UsageError(
                f"array {key!r} of {name!r} declares {dtype}{list(shape)} "
                f"({format_size(nbytes)}), above the limit of {format_size(budget)} left"
            )
        data = f.read(nbytes)
    if len(data) != nbytes:
        raise UsageError(f"array {key!r} of {name!r} is truncated")
    arr = np.frombuffer(data, dtype=dtype, count=count)
    return arr.reshape(shape, order="F" if fortran else "C")


def load_npz(path: str | os.PathLike[str], what: str, limit: int) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` file (as ``np.savez`` writes), read safely.

    The file must be a regular file within ``limit`` bytes; every member's header is
    checked (plain numeric dtype, no pickle) and the arrays together may not exceed
    ``limit`` bytes once decompressed, so a small file cannot claim a huge array.
    """
    name = os.fspath(path)
    check_file(name, what, limit)
    arrays: dict[str, np.ndarray] = {}
    budget = limit
    try:
        with zipfile.ZipFile(name) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    raise UsageError(
                        f"{what} {name!r} holds {info.filename!r}, which is not an .npy array"
                    )
                arr = _npz_member(zf, info, name, budget)
                budget -= arr.nbytes
                arrays[info.filename[: -len(".npy")]] = arr
    except UsageError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError) as err:
        raise UsageError(
            f"{what} {name!r} is not a valid .npz file (write it with numpy.savez): {err}"
        ) from None
    except (ValueError, NotImplementedError, OSError) as err:
        raise UsageError(f"{what} {name!r} holds a malformed array: {err}") from None
    return arrays
