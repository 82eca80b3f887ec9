"""What ``relaykit backends`` shows: each backend's version, status and support.

>>> row = describe("ccompiler")
>>> row.name, row.source, row.ops > 0
('ccompiler', 'built-in', True)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from relaykit.errors import BackendLoadError

from .registry import BUILTIN, _installed, backend_names, find_backend

__all__ = [
    "AVAILABLE",
    "PREFERRED",
    "BackendStatus",
    "best_available",
    "describe",
    "describe_all",
    "format_table",
]

AVAILABLE = "available"

#: Built-in backends by speed on whole models, fastest first: what relaykit picks when
#: the user names none (``relaykit demo``, ``torch.compile``). With none of them, the
#: host's own kernels run everything.
PREFERRED = ("dnnl", "ccompiler")


@dataclass(frozen=True)
class BackendStatus:
    """One backend as ``relaykit backends`` lists it.

    ``status``: ``"available"``, ``"missing extra"``, ``"missing requirement"`` (e.g. a
    C compiler) or ``"broken"`` (it failed to load); ``detail`` says why and
    ``install`` what to run.
    """

    name: str
    version: str
    status: str
    source: str
    description: str = ""
    detail: str = ""
    install: str = ""
    ops: int = 0
    patterns: int = 0
    supported_ops: list[str] = field(default_factory=list)
    pattern_names: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _source(name: str) -> str:
    if name in BUILTIN:
        return "built-in"
    ep = _installed().get(name)
    if ep is not None:
        dist = getattr(ep, "dist", None)
        return f"package {getattr(dist, 'name', '?')}"
    return "registered"


def describe(name: str) -> BackendStatus:
    """The status row of backend ``name`` (loading it; a failure is reported, not raised)."""
    source = _source(name)
    try:
        backend = find_backend(name)
    except BackendLoadError as err:
        return BackendStatus(name, "?", "broken", source, detail=str(err))
    if backend is None:
        return BackendStatus(name, "?", "broken", source, detail="no such backend")
    try:
        table = backend.pattern_table() or []
    except Exception as err:  # a backend's table builder failing is part of its status
        detail = f"its pattern table failed: {type(err).__name__}: {err}"
        return BackendStatus(name, backend.version, "broken", source, detail=detail)
    req = backend.requires
    missing = req.missing()
    if missing is None:
        status, install = AVAILABLE, ""
    else:
        status = "missing extra" if req.extra else "missing requirement"
        install = req.command
    return BackendStatus(
        name=name,
        version=backend.version or "?",
        status=status,
        source=source,
        description=backend.description,
        detail=missing or "",
        install=install,
        ops=len(backend.rules),
        patterns=len(table),
        supported_ops=backend.supported_ops(),
        pattern_names=[str(entry[0]) for entry in table],
    )


def best_available(candidates: tuple[str, ...] = PREFERRED) -> tuple[str | None, list[str]]:
    """The first of ``candidates`` that is available (None when none is) and, for each
    one passed over, why.

    >>> name, passed = best_available(("ccompiler",))
    >>> name in ("ccompiler", None)
    True
    """
    passed: list[str] = []
    for name in candidates:
        row = describe(name)
        if row.status == AVAILABLE:
            return name, passed
        passed.append(f"{name} is not available ({row.detail or row.status})")
    return None, passed


def describe_all() -> list[BackendStatus]:
    """Every known backend: built in, installed through entry points, registered."""
    return [describe(n) for n in backend_names()]


def format_table(rows: list[BackendStatus], *, verbose: bool = False) -> str:
    """The rows as a text table (``verbose``: the supported operators and patterns too)."""
    head = ("backend", "version", "status", "ops", "patterns", "source")
    cells = [head] + [
        (r.name, r.version, r.status, str(r.ops), str(r.patterns), r.source) for r in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(len(head))).rstrip() for c in cells]
    for r in rows:
        notes = []
        if r.description:
            notes.append(f"  {r.name}: {r.description}")
        if r.status != AVAILABLE:
            notes.append(f"  {r.name}: {r.status}: {r.detail}")
            if r.install:
                notes.append(f"  {r.name}: install with: {r.install}")
        if verbose:
            notes.append(f"  {r.name}: ops: {', '.join(r.supported_ops) or 'none'}")
            notes.append(f"  {r.name}: patterns: {', '.join(r.pattern_names) or 'none'}")
        lines.extend(notes)
    return "\n".join(lines)
