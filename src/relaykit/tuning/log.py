"""The tuning log: measurements as JSON lines, reused instead of measuring again.

One line per measurement::

    {"format": 1, "region": "<key>", "backend": "dnnl", "version": "0.1.0",
     "threads": 2, "machine": "<fingerprint>", "latency": 1.2e-4, "error": null,
     "ops": ["dnnl.conv2d_bias_relu"], "time": "2026-01-01T00:00:00Z"}

A measurement is reused when its region key, backend, backend version, thread count
and machine fingerprint all match (``any_machine=True`` drops the machine). A line
that is not such a record is skipped with a :class:`~relaykit.errors.TuningLogWarning`
naming the line (or, with ``strict=True``, a :class:`~relaykit.errors.TuningLogError`).
A backend that failed on a region is recorded with its error and no latency.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "t.jsonl")
>>> log = TuningLog(path)
>>> key = MeasureKey("abc", "onnxruntime", "1.0", 2, "m")
>>> log.add(Record(key, 1e-4))
>>> TuningLog(path).get(key).latency
0.0001
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relaykit.errors import TuningLogError, TuningLogWarning

__all__ = ["MeasureKey", "Record", "TuningLog", "machine_fingerprint", "LOG_FORMAT"]

LOG_FORMAT = 1


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine_fingerprint() -> str:
    """A short hash of what makes timings comparable: CPU model, architecture, core
    count and operating system."""
    parts = [_cpu_model(), platform.machine(), str(os.cpu_count()), platform.system()]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class MeasureKey:
    """What a measurement depends on."""

    region: str
    backend: str
    version: str
    threads: int
    machine: str

    def loose(self) -> tuple[str, str, str, int]:
        """The key without the machine (for ``any_machine`` reuse)."""
        return (self.region, self.backend, self.version, self.threads)


@dataclass(frozen=True)
class Record:
    """One measurement: seconds per run, or the error the backend raised."""

    key: MeasureKey
    latency: float | None
    error: str | None = None
    ops: tuple[str, ...] = ()
    when: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    def to_json(self) -> str:
        k = self.key
        obj = {
            "format": LOG_FORMAT,
            "region": k.region,
            "backend": k.backend,
            "version": k.version,
            "threads": k.threads,
            "machine": k.machine,
            "latency": self.latency,
            "error": self.error,
            "ops": list(self.ops),
            "time": self.when,
        }
        return json.dumps(obj, separators=(",", ":"))

    @staticmethod
    def from_json(obj: Any) -> Record:
        """Parse one line's object; raises :class:`TuningLogError` saying what is wrong."""
        if not isinstance(obj, dict):
            raise TuningLogError("not a JSON object")
        if obj.get("format") != LOG_FORMAT:
            raise TuningLogError(f"format {obj.get('format')!r}, expected {LOG_FORMAT}")
        for name, kind in (("region", str), ("backend", str), ("version", str), ("machine", str)):
            if not isinstance(obj.get(name), kind):
                raise TuningLogError(f"field {name!r} is missing or not a string")
        threads = obj.get("threads")
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
            raise TuningLogError("field 'threads' is not a positive integer")
        latency, error = obj.get("latency"), obj.get("error")
        if latency is None and not isinstance(error, str):
            raise TuningLogError("neither a latency nor an error")
        if latency is not None and (
            not isinstance(latency, (int, float)) or isinstance(latency, bool) or not latency >= 0
        ):
            raise TuningLogError(f"latency {latency!r} is not a non-negative number")
        ops = obj.get("ops", [])
        key = MeasureKey(obj["region"], obj["backend"], obj["version"], threads, obj["machine"])
        return Record(
            key,
            None if latency is None else float(latency),
            error if isinstance(error, str) else None,
            tuple(str(o) for o in ops) if isinstance(ops, list) else (),
            str(obj.get("time", "")),
        )


class TuningLog:
    """A JSON-lines file of :class:`Record` s, read once and appended to.

    ``any_machine``: reuse measurements taken on another machine too (off by default:
    timings from other hardware mislead). ``strict``: a bad line raises instead of
    being skipped with a warning.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        any_machine: bool = False,
        strict: bool = False,
    ) -> None:
        self.path = None if path is None else Path(path)
        self.any_machine = any_machine
        self._exact: dict[MeasureKey, Record] = {}
        self._loose: dict[tuple[str, str, str, int], Record] = {}
        self._lock = threading.Lock()
        self.skipped = 0
        if self.path is not None and self.path.exists():
            self._read(strict)

    def _read(self, strict: bool) -> None:
        assert self.path is not None
        with open(self.path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = Record.from_json(json.loads(line))
                except ValueError as err:  # json.JSONDecodeError is a ValueError
                    where = f"{self.path}:{lineno}"
                    if strict:
                        raise TuningLogError(
                            f"{where}: not a tuning record ({err}); delete the line or the file"
                        ) from err
                    self.skipped += 1
                    warnings.warn(
                        f"{where}: ignored, not a tuning record ({err})",
                        TuningLogWarning,
                        stacklevel=3,
                    )
                    continue
                self._remember(record)

    def _remember(self, record: Record) -> None:
        self._exact[record.key] = record
        self._loose[record.key.loose()] = record

    def get(self, key: MeasureKey) -> Record | None:
        """The recorded measurement of ``key``, or None."""
        hit = self._exact.get(key)
        if hit is None and self.any_machine:
            hit = self._loose.get(key.loose())
        return hit

    def add(self, record: Record) -> None:
        """Remember ``record`` and append it to the file (when there is one)."""
        with self._lock:
            self._remember(record)
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(record.to_json() + "\n")

    def __len__(self) -> int:
        return len(self._exact)

    def records(self) -> list[Record]:
        """Every record read or added."""
        return list(self._exact.values())
