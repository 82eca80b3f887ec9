"""What every subcommand shares: exit codes, reading user files safely, shapes, progress.

Exit codes follow the usual convention: 0 when the command did what it was asked, 2 for
a usage error (a wrong argument: unknown model, a missing, special or oversized file, a
malformed shape), 1 when the command failed (the model does not import, a build or a run
fails). A typed relaykit error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import stat
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeAlias

from relaykit.errors import RelayKitError, UsageError

__all__ = [
    "SubParsers",
    "EXIT_OK",
    "EXIT_FAILURE",
    "EXIT_USAGE",
    "DEFAULT_MAX_FILE_SIZE",
    "parse_size",
    "format_size",
    "check_file",
    "read_file_bytes",
    "read_text_file",
    "parse_shapes",
    "Progress",
    "run_command",
    "add_file_limit",
]

#: What ``register(sub)`` of a subcommand module receives.
SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

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


_SHAPE_ITEM = re.compile(r"^(?P<name>[^:\s]+|\"[^\"]+\"):(?P<dims>.+)$")


def _dims(text: str, item: str) -> tuple[int, ...]:
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        parts = [p for p in re.split(r"[,\s]+", body[1:-1]) if p]
    else:
        parts = body.lower().split("x")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        dims = ()
    if not dims and body not in ("[]", "()"):
        raise UsageError(
            f"input shape {item!r} is malformed: write name:1x3x224x224 or name:[1,3,224,224]"
        )
    if any(d < 0 for d in dims):
        raise UsageError(f"input shape {item!r} has a negative dimension")
    return dims


def parse_shapes(items: list[str] | None) -> dict[str, tuple[int, ...]]:
    """``["data:1x3x224x224", "mask:[1,128]"]`` -> ``{"data": (1, 3, 224, 224), ...}``.

    Items may also be separated by spaces or semicolons inside one argument.

    >>> parse_shapes(["x:1x3x8x8", "y:[2, 4] z:5"])
    {'x': (1, 3, 8, 8), 'y': (2, 4), 'z': (5,)}
    """
    shapes: dict[str, tuple[int, ...]] = {}
    for arg in items or ():
        # split on spaces/semicolons that are outside brackets
        for item in re.findall(r"[^\s;\[]+(?:\[[^\]]*\])?", arg):
            m = _SHAPE_ITEM.match(item)
            if m is None:
                raise UsageError(
                    f"input shape {item!r} is malformed: write name:1x3x224x224 or "
                    "name:[1,3,224,224]"
                )
            shapes[m.group("name").strip('"')] = _dims(m.group("dims"), item)
    return shapes


class Progress:
    """Steps of a long command, shown on a terminal only.

    On a TTY each step prints ``[k] label ...`` and, when done, its time; anywhere else
    (a pipe, a file, a test) it prints nothing, so scripted output stays clean.
    """

    def __init__(self, stream: IO[str] | None = None, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.count = 0

    def note(self, text: str) -> None:
        if self.enabled:
            print(f"    {text}", file=self.stream, flush=True)

    @contextlib.contextmanager
    def step(self, label: str) -> Iterator[None]:
        self.count += 1
        if not self.enabled:
            yield
            return
        print(f"[{self.count}] {label} ...", end="", file=self.stream, flush=True)
        t0 = time.perf_counter()
        try:
            yield
        except BaseException:
            print(" failed", file=self.stream, flush=True)
            raise
        print(f" {time.perf_counter() - t0:.2f} s", file=self.stream, flush=True)


def _error(message: str) -> None:
    print(f"relaykit: error: {message}", file=sys.stderr)


def run_command(func: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a subcommand; map relaykit's typed errors to one line on stderr and an exit code."""
    try:
        return int(func(args))
    except UsageError as err:
        _error(str(err))
        return EXIT_USAGE
    except RelayKitError as err:
        _error(str(err))
        return EXIT_FAILURE
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except MemoryError:
        _error(
            "out of memory; try a smaller model, batch or input size "
            "(or lower --max-file-size to refuse huge files early)"
        )
        return EXIT_FAILURE
    except OSError as err:
        where = f" {err.filename!r}" if getattr(err, "filename", None) else ""
        _error(f"{err.strerror or err}{where}")
        return EXIT_FAILURE
    except Exception as err:  # a bug in relaykit: say so, and where, in a few lines
        frames = traceback.extract_tb(err.__traceback__)
        last = frames[-1] if frames else None
        at = f" at {Path(last.filename).name}:{last.lineno}" if last else ""
        _error(
            f"internal error {type(err).__name__}: {err}{at}. This is a bug in relaykit; "
            "run again with --traceback for the full trace and report it"
        )
        if getattr(args, "traceback", False):
            traceback.print_exception(err, file=sys.stderr)
        return EXIT_FAILURE


def describe_array(arr: Any) -> str:
    """``float32[1, 3, 224, 224]``."""
    return f"{arr.dtype}{list(arr.shape)}"
