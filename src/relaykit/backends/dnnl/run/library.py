"""Where oneDNN is: the ``onednn-cpu-gomp`` / ``onednn-devel-cpu-gomp`` wheels.

The backend uses oneDNN from PyPI only. The two wheels put ``libdnnl.so`` in
``<prefix>/lib`` and the headers in ``<prefix>/include`` (their data
directories); :func:`find_onednn` reads the wheels' file lists, so it works in
virtual environments and ``--user`` installs alike, and falls back to
``sys.prefix``. Without the wheels it raises :class:`DnnlNotFoundError`,
which says what to install::

    pip install relaykit[dnnl]

>>> try:
...     lib = find_onednn()
... except DnnlNotFoundError as err:
...     "relaykit[dnnl]" in str(err)
... else:
...     lib.library.name.startswith("libdnnl.so")
True
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import sys
from dataclasses import dataclass
from pathlib import Path

from relaykit.errors import MissingDependencyError

__all__ = ["DnnlNotFoundError", "OneDNN", "find_onednn", "INSTALL_HINT", "ONEDNN_VERSION"]

#: The oneDNN wheels' version this backend is written and tested against.
ONEDNN_VERSION = "2023.2.0"

#: What a user without oneDNN should run.
INSTALL_HINT = (
    f"pip install relaykit[dnnl]  (installs onednn-cpu-gomp=={ONEDNN_VERSION} "
    f"and onednn-devel-cpu-gomp=={ONEDNN_VERSION})"
)

_RUNTIME_WHEEL = "onednn-cpu-gomp"
_DEVEL_WHEEL = "onednn-devel-cpu-gomp"


class DnnlNotFoundError(MissingDependencyError):
    """oneDNN (the library or, to compile the runtime, its headers) is not installed."""


@dataclass(frozen=True)
class OneDNN:
    """An installed oneDNN: its shared library and (when the devel wheel is there) headers."""

    library: Path
    include_dir: Path | None
    version: str

    @property
    def lib_dir(self) -> Path:
        return self.library.parent

    def require_headers(self) -> Path:
        """The include directory, or :class:`DnnlNotFoundError` if the headers are missing."""
        if self.include_dir is None:
            raise DnnlNotFoundError(
                f"the dnnl backend compiles its runtime against oneDNN's headers, which are "
                f"not installed (found the library at {self.library}). Install them with: "
                f"{INSTALL_HINT}"
            )
        return self.include_dir


def _wheel_file(dist_name: str, suffix: str) -> tuple[Path | None, str | None]:
    """The installed file of wheel ``dist_name`` whose path ends with ``suffix``."""
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        return None, None
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith(suffix):
            path = Path(str(dist.locate_file(f))).resolve()
            if path.exists():
                return path, dist.version
    return None, dist.version


def _prefix_candidates() -> list[Path]:
    prefixes = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)]
    seen: list[Path] = []
    for p in prefixes:
        if p not in seen:
            seen.append(p)
    return seen


@functools.lru_cache(maxsize=1)
def find_onednn() -> OneDNN:
    """The installed oneDNN; raises :class:`DnnlNotFoundError` naming the extra to install."""
    library, version = _wheel_file(_RUNTIME_WHEEL, "libdnnl.so.3")
    if library is None:
        for prefix in _prefix_candidates():
            candidate = prefix / "lib" / "libdnnl.so.3"
            if candidate.exists():
                library = candidate.resolve()
                break
    if library is None:
        raise DnnlNotFoundError(
            "the dnnl backend needs oneDNN (libdnnl.so from the onednn-cpu-gomp wheel), "
            f"which is not installed. Install it with: {INSTALL_HINT}"
        )
    header, _ = _wheel_file(_DEVEL_WHEEL, "oneapi/dnnl/dnnl.hpp")
    if header is None:
        for prefix in _prefix_candidates():
            candidate = prefix / "include" / "oneapi" / "dnnl" / "dnnl.hpp"
            if candidate.exists():
                header = candidate.resolve()
                break
    include_dir = header.parent.parent.parent if header is not None else None
    return OneDNN(library=library, include_dir=include_dir, version=version or "unknown")
