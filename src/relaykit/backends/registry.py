"""The one registry of backends, with lazy discovery of built-in and installed ones.

``backend_registry[name]`` returns the :class:`~relaykit.backends.Backend` of
``name``. A name not registered yet is looked up, on first use, in

1. :data:`BUILTIN`: relaykit's own backends, ``name -> "module:attribute"``; the module
   is imported only then (so importing relaykit loads no backend);
2. the ``relaykit.backends`` entry-point group of installed packages: an entry point
   names a :class:`Backend` or a zero-argument function returning one.

Every other per-backend table (codegens, ``relay.ext.<name>`` functions, pattern
tables, target options, artifact loaders) is a view of this registry.

>>> with backend_registry.scoped():
...     _ = register_backend(Backend("demo", description="a demo"))
...     get_backend("demo").description
'a demo'
>>> find_backend("demo") is None
True
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
from dataclasses import replace
from pathlib import Path
from typing import Any

from relaykit.errors import BackendError, BackendLoadError, BackendNotFoundError
from relaykit.registry import Registry

from .record import Backend

__all__ = [
    "BUILTIN",
    "ENTRY_POINT_GROUP",
    "backend_registry",
    "register_backend",
    "update_backend",
    "get_backend",
    "find_backend",
    "backend_rule",
    "backend_names",
    "refresh_entry_points",
]

#: Where the built-in backends live: one folder each, declaring ``BACKEND`` in ``backend.py``.
BUILTIN_PACKAGE = "relaykit.backends"


def _builtin_backends() -> dict[str, str]:
    """Every folder of :data:`BUILTIN_PACKAGE` with a ``backend.py``, read from the file
    system (nothing is imported): adding a built-in backend is adding its folder."""
    spec = importlib.util.find_spec(BUILTIN_PACKAGE)
    found: dict[str, str] = {}
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        for folder in sorted(Path(location).iterdir()):
            if (folder / "backend.py").is_file() and not folder.name.startswith("_"):
                found[folder.name] = f"{BUILTIN_PACKAGE}.{folder.name}.backend:BACKEND"
    return found


#: Built-in backends: name -> ``"module:attribute"`` of their :class:`Backend` record.
BUILTIN: dict[str, str] = _builtin_backends()

#: The entry-point group third-party backends declare in their pyproject.
ENTRY_POINT_GROUP = "relaykit.backends"

_entry_points: dict[str, importlib.metadata.EntryPoint] | None = None


def _installed() -> dict[str, importlib.metadata.EntryPoint]:
    """The group's entry points by name (read once; :func:`refresh_entry_points` rereads)."""
    global _entry_points
    if _entry_points is None:
        _entry_points = {
            ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
        }
    return _entry_points


def refresh_entry_points() -> None:
    """Forget the cached entry points (after installing a backend package in-process)."""
    global _entry_points
    _entry_points = None
    importlib.invalidate_caches()


def _as_backend(obj: Any, name: str, origin: str) -> Backend:
    if not isinstance(obj, Backend) and callable(obj):
        obj = obj()
    if not isinstance(obj, Backend):
        raise BackendLoadError(
            f"backend {name!r} ({origin}) is a {type(obj).__name__}, not a relaykit.backends."
            "Backend (nor a zero-argument function returning one)"
        )
    if obj.name != name:
        raise BackendLoadError(
            f"backend {name!r} ({origin}) declares the name {obj.name!r}; the entry point and "
            "the record must use the same name"
        )
    return obj


def _load_builtin(name: str, spec: str) -> Backend:
    module, _, attr = spec.partition(":")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise BackendLoadError(
            f"built-in backend {name!r} could not be loaded from {spec}: "
            f"{type(err).__name__}: {err}"
        ) from err
    return _as_backend(obj, name, f"built in, {spec}")


def _load_entry_point(ep: importlib.metadata.EntryPoint) -> Backend:
    dist = getattr(ep, "dist", None)
    package = getattr(dist, "name", None) or "an unknown package"
    origin = f"entry point {ep.name} = {ep.value} of package {package!r}"
    try:
        obj = ep.load()
    except Exception as err:  # third-party code: any failure becomes one typed error
        raise BackendLoadError(
            f"backend {ep.name!r} could not be loaded ({origin}): {type(err).__name__}: {err}. "
            f"Reinstall or upgrade {package!r}, or uninstall it"
        ) from err
    try:
        return _as_backend(obj, ep.name, origin)
    except BackendLoadError:
        raise
    except Exception as err:
        raise BackendLoadError(
            f"the backend factory of {origin} failed: {type(err).__name__}: {err}"
        ) from err


def _discover(name: str) -> Backend | None:
    spec = BUILTIN.get(name)
    if spec is not None:
        return _load_builtin(name, spec)
    ep = _installed().get(name)
    return None if ep is None else _load_entry_point(ep)


class BackendRegistry(Registry[str, Backend]):
    """The backend registry: a :class:`~relaykit.registry.Registry` that discovers lazily
    and lists built-in and installed backends it has not loaded yet."""

    def known(self) -> list[str]:
        """Every backend name: registered, built in, or installed (not loaded)."""
        return sorted(set(self) | set(BUILTIN) | set(_installed()))

    def _missing_message(self, key: str) -> str:
        names = self.known()
        close = difflib.get_close_matches(str(key), names, n=3)
        hint = f"Did you mean {', '.join(close)}? " if close else ""
        return (
            f"no backend named {key!r} (known: {', '.join(names) or 'none'}). {hint}"
            "Install a package that declares it in the "
            f"{ENTRY_POINT_GROUP!r} entry-point group, or register_backend(Backend(...))"
        )

    def __getitem__(self, key: str) -> Backend:
        try:
            return super().__getitem__(key)
        except BackendNotFoundError:
            raise
        except KeyError as err:
            raise BackendNotFoundError(str(err)) from None


backend_registry = BackendRegistry("backend", fallback=_discover)


def register_backend(backend: Backend, *, override: bool = False) -> Backend:
    """Register ``backend`` under its name (replacing one needs ``override=True``)."""
    if not isinstance(backend, Backend):
        raise BackendError(f"register_backend takes a Backend record, got {type(backend).__name__}")
    return backend_registry.register(backend.name, backend, override=override)


def update_backend(name: str, **changes: Any) -> Backend:
    """Replace fields of backend ``name`` (a bare record is created when there is none)."""
    old = find_backend(name)
    new = Backend(name, **changes) if old is None else replace(old, **changes)
    return backend_registry.register(name, new, override=True)


def get_backend(name: str) -> Backend:
    """The backend ``name``; :class:`BackendNotFoundError` when there is none."""
    return backend_registry[name]


def find_backend(name: str) -> Backend | None:
    """The backend ``name``, or None. A built-in or installed one that fails to load
    raises :class:`~relaykit.errors.BackendLoadError`."""
    if not isinstance(name, str):
        return None
    return backend_registry.get(name)


def backend_rule(target: str, op_name: str) -> Any:
    """Backend ``target``'s rule for operator ``op_name`` as its record states it, or None
    (no such backend, or no rule). The operator table reads rules through this function
    (attribute ``target.<target>``), so the record is never copied into it."""
    backend = find_backend(target)
    return None if backend is None else backend.rules.get(op_name)


def backend_names() -> list[str]:
    """Names of every backend: registered, built in and installed."""
    return backend_registry.known()
