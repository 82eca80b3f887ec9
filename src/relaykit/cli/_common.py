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
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeAlias

import numpy as np

from relaykit.byoc import pin
from relaykit.errors import ArtifactError, RelayKitError, UsageError

__all__ = [
    "SubParsers",
    "EXIT_OK",
    "EXIT_FAILURE",
    "EXIT_USAGE",
    "DEFAULT_MAX_FILE_SIZE",
    "parse_size",
    "format_size",
    "check_file",
    "check_output_path",
    "read_file_bytes",
    "read_text_file",
    "parse_shapes",
    "split_targets",
    "parse_pins",
    "Progress",
    "run_command",
    "add_file_limit",
    "TensorSpec",
    "load_npz",
    "artifact_signature",
    "output_name",
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


def split_targets(values: list[str] | None) -> list[str]:
    """``["dnnl,ccompiler", "jsonref"]`` -> ``["dnnl", "ccompiler", "jsonref"]``."""
    targets = [t.strip() for v in values or () for t in v.split(",") if t.strip()]
    if not targets:
        raise UsageError("--target needs at least one backend name (see 'relaykit backends')")
    return targets


def parse_pins(values: list[str] | None) -> list[Any]:
    """``["nn.softmax", "nn.dense=ccompiler"]`` -> pins to the host and to ccompiler."""
    pins = []
    for value in values or ():
        op, _, to = value.partition("=")
        if not op.strip():
            raise UsageError(f"--pin {value!r}: give an operator name, e.g. --pin nn.softmax")
        pins.append(pin(op.strip(), to=to.strip() or "host"))
    return pins


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

    On a TTY each step prints ``[k] label ...`` and, when done, its time; a step that
    opens sub-steps (a build's codegen, one per region) lists them indented below it.
    Anywhere else (a pipe, a file, a test) it prints nothing, so scripted output stays
    clean.
    """

    def __init__(self, stream: IO[str] | None = None, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.count = 0
        self._depth = 0
        self._line_open = False

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    @contextlib.contextmanager
    def step(self, label: str) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        if self._line_open:  # an outer step gets sub-steps: end its line
            self._write("\n")
        if self._depth == 0:
            self.count += 1
            indent, label = "", f"[{self.count}] {label}"
        else:
            indent = "    " * self._depth
        self._write(f"{indent}{label} ...")
        self._line_open = True
        self._depth += 1
        t0 = time.perf_counter()
        try:
            yield
        except BaseException:
            self._finish(indent, label, "failed")
            raise
        finally:
            self._depth -= 1
        self._finish(indent, label, f"{time.perf_counter() - t0:.2f} s")

    def _finish(self, indent: str, label: str, result: str) -> None:
        if self._line_open:
            self._write(f" {result}\n")
        else:
            self._write(f"{indent}{label}: {result}\n")
        self._line_open = False


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


@dataclass(frozen=True)
class TensorSpec:
    """An input or output of an artifact: its name, shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}{list(self.shape)}"

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


def output_name(i: int) -> str:
    """The name of output ``i`` in an outputs file (as tvmc names them)."""
    return f"output_{i}"


def artifact_signature(factory: Any, path: str = "the module") -> tuple[list[TensorSpec], ...]:
    """The inputs and outputs of a built or loaded graph-executor module."""
    plan = getattr(factory, "plan", None)
    if plan is None:
        raise ArtifactError(
            f"{path} holds no graph-executor module (a {type(factory).__name__}); "
            "write one with 'relaykit compile' or relay.build(...).export_library(...)"
        )
    inputs = [
        TensorSpec(
            n.name, tuple(plan.entries[n.outputs[0]].shape), plan.entries[n.outputs[0]].dtype
        )
        for n in plan.nodes
        if n.kind == "input"
    ]
    outputs = [
        TensorSpec(output_name(i), tuple(plan.entries[h].shape), plan.entries[h].dtype)
        for i, h in enumerate(plan.heads)
    ]
    return inputs, outputs
