"""The ``jsonref`` runtime: a JSON graph run with the backend's own NumPy kernels."""

from __future__ import annotations

from typing import ClassVar

from relaykit.runtime.json_runtime import JSONRuntimeBase

from .kernels import KERNELS

__all__ = ["JSONRefRuntime"]


class JSONRefRuntime(JSONRuntimeBase):
    """Parses its JSON graph once; each call site binds the kernels to its buffers once."""

    type_key: ClassVar[str] = "jsonref_json"
    provider: ClassVar[str] = "relaykit.backends.jsonref"
    kernels = KERNELS
