"""Backends as plug-in records: :class:`Backend`, the one registry, discovery.

A backend is one :class:`Backend` value registered in :data:`backend_registry`.
relaykit's own (``ccompiler``, ``jsonref``, ``dnnl``) are found by name and
imported on first use; third-party ones are found through the
``relaykit.backends`` entry-point group::

    # pyproject.toml of a backend package
    [project.entry-points."relaykit.backends"]
    mylib = "mylib_relaykit:BACKEND"

This package imports nothing but relaykit's errors and its generic registry, so
every layer may read the registry; the layers that own codegens, pattern tables,
target options and artifact loaders present views of it.

>>> "ccompiler" in backend_names()
True
"""

from .record import HOST_TARGET, Backend, Requirement, target_key, target_of_key
from .registry import (
    BUILTIN,
    ENTRY_POINT_GROUP,
    backend_names,
    backend_registry,
    backend_rule,
    find_backend,
    get_backend,
    refresh_entry_points,
    register_backend,
    update_backend,
)

__all__ = [
    "Backend",
    "Requirement",
    "target_key",
    "target_of_key",
    "HOST_TARGET",
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
