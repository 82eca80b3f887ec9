"""What every subcommand shares: exit codes, targets, pins and shapes, progress, an
artifact's signature, and (from :mod:`relaykit.cli._files`, re-exported here) reading
and writing user files safely.

Exit codes follow the usual convention: 0 when the command did what it was asked, 2 for
a usage error (a wrong argument: unknown model, a missing, special or oversized file, a
malformed shape), 1 when the command failed (the model does not import, a build or a run
fails). A typed relaykit error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeAlias

import numpy as np

from relaykit.byoc import pin
from relaykit.byoc.choose import is_host_target
from relaykit.cli._files import (
    DEFAULT_MAX_FILE_SIZE,
    add_file_limit,
    check_file,
    check_output_path,
    format_size,
    load_npz,
    parse_size,
    read_file_bytes,
    read_text_file,
)
from relaykit.errors import ArtifactError, RelayKitError, UsageError
from relaykit.ir.op import default_registry
from relaykit.op.contrib import get_pattern_table

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
    "targets_label",
    "parse_pins",
    "Progress",
    "run_command",
    "add_file_limit",
    "int_range",
    "BATCH",
    "IMAGE_SIZE",
    "TensorSpec",
    "load_npz",
    "artifact_signature",
    "output_name",
    "plural",
]

#: What ``register(sub)`` of a subcommand module receives.
SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def int_range(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer in ``[low, high]`` (sizes that would allocate absurd
    amounts of memory are refused before any work)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not between {low} and {high}")
        return value

    return parse


#: The sizes of built-in workloads the command line accepts.
BATCH = int_range(1, 1024)
IMAGE_SIZE = int_range(16, 4096)

#: The most elements one ``--input-shapes`` shape may have (2**31, 8 GiB of float32).
MAX_SHAPE_ELEMENTS = 2**31


def split_targets(values: list[str] | None) -> list[str]:
    """``["dnnl,ccompiler", "jsonref"]`` -> ``["dnnl", "ccompiler", "jsonref"]``.

    ``host`` (or TVM's ``llvm``, ``c``, ``cpu``) names the host, which runs whatever no
    target takes: it is left out, so ``--target host`` alone is ``[]``, a host-only build.

    >>> split_targets(["dnnl,host"]), split_targets(["llvm"])
    (['dnnl'], [])
    """
    targets = [t.strip() for v in values or () for t in v.split(",") if t.strip()]
    if not targets:
        raise UsageError(
            "--target needs at least one backend name, or host (see 'relaykit backends')"
        )
    return [t for t in targets if not is_host_target(t)]


def targets_label(targets: list[str]) -> str:
    """How a command names its targets: ``dnnl, ccompiler``, or ``host`` for none."""
    return ", ".join(targets) if targets else "host"


def _pin_names(targets: list[str]) -> list[str]:
    """What ``--pin`` may name: every operator, and the patterns of ``targets``."""
    names = list(default_registry.names())
    for t in targets:
        names.extend(str(entry[0]) for entry in get_pattern_table(t) or ())
    return names


def parse_pins(values: list[str] | None, targets: list[str] | None = None) -> list[Any]:
    """``["nn.softmax", "nn.dense=ccompiler"]`` -> pins to the host and to ccompiler.

    An operator that does not exist (nor a pattern of ``targets``), or, when ``targets``
    are given, a target not among them, is a UsageError naming it and close matches."""
    pins = []
    for value in values or ():
        op, _, to = (part.strip() for part in value.partition("="))
        if not op:
            raise UsageError(f"--pin {value!r}: give an operator name, e.g. --pin nn.softmax")
        if op not in default_registry:
            names = _pin_names(targets or [])
            if op not in names:
                close = difflib.get_close_matches(op, names, n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise UsageError(f"--pin {value!r}: no operator named {op!r}{hint}")
        to = "host" if to in ("", "default") or is_host_target(to) else to
        if targets is not None and to != "host" and to not in targets:
            raise UsageError(
                f"--pin {value!r}: {to!r} is not one of the targets "
                f"({targets_label(targets)}); pin to host or to one of them"
            )
        pins.append(pin(op, to=to))
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
    # sizes below 1 are refused against the model, naming its declared shape
    count = 1
    for d in dims:
        count *= abs(d)
    if count > MAX_SHAPE_ELEMENTS:
        raise UsageError(
            f"input shape {item!r} has {count} elements, more than the {MAX_SHAPE_ELEMENTS} "
            "relaykit accepts"
        )
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
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes
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


def plural(n: int, word: str) -> str:
    """``1 output``, ``2 outputs``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def output_name(i: int) -> str:
    """The name of output ``i`` of a model that does not name its outputs (as tvmc names
    them); an ONNX model's outputs keep the model's names."""
    return f"output_{i}"


def artifact_signature(factory: Any, path: str = "the module") -> tuple[list[TensorSpec], ...]:
    """The inputs and outputs of a built or loaded graph-executor module (outputs by the
    model's names where it has them, else ``output_0``, ...)."""
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
        TensorSpec(plan.output_name(i), tuple(plan.entries[h].shape), plan.entries[h].dtype)
        for i, h in enumerate(plan.heads)
    ]
    return inputs, outputs
