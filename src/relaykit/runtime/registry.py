"""Global functions by name, as TVM's ``tvm.register_func`` / ``tvm.get_global_func``.

BYOC codegens are found here under ``relay.ext.<target>`` (and their optimize
hooks under ``relay.ext.<target>.optimize``): those names are views of the
backend registry (:mod:`relaykit.backends`), so ``relay.ext.ccompiler`` exists
as soon as relaykit is imported and loads its backend on first use. The
registry is an object a test can snapshot and restore.

>>> with func_registry.scoped():
...     @register_func("demo.twice")
...     def twice(x):
...         return 2 * x
...     get_global_func("demo.twice")(21)
42
>>> get_global_func("demo.twice", allow_missing=True) is None
True
>>> callable(get_global_func("relay.ext.ccompiler"))
True
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from relaykit.backends import backend_registry, find_backend
from relaykit.errors import RegistryKeyError, RelayKitError
from relaykit.registry import Registry

__all__ = [
    "EXT_PREFIX",
    "FunctionRegistry",
    "func_registry",
    "register_func",
    "get_global_func",
    "list_global_func_names",
    "remove_global_func",
]

#: Global functions ``relay.ext.<backend>`` are backends' codegens.
EXT_PREFIX = "relay.ext."


class FunctionRegistry(Registry[str, Callable[..., Any]]):
    """Named callables. Registering a taken name needs ``override=True``."""

    def register(self, key: str, value: Any = None, *, override: bool = False) -> Any:
        if not isinstance(key, str) or not key:
            raise RelayKitError(f"a global function name must be a non-empty string, got {key!r}")
        if not callable(value):
            raise RelayKitError(f"global function {key!r} must be callable, got {value!r}")
        return super().register(key, value, override=override)

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self)


func_registry = FunctionRegistry("global function")


#: Global functions a built-in backend provides (TVM registers them when built with that
#: library), by the backend whose record lists them (``Backend.functions``).
BACKEND_FUNCTIONS = {"runtime.DNNLJSONRuntimeCreate": "dnnl"}


def _backend_function(name: str) -> Callable[..., Any] | None:
    """A global function read from a backend record: ``relay.ext.<b>`` -> backend ``b``'s
    codegen, ``relay.ext.<b>.optimize`` -> its hook, a :data:`BACKEND_FUNCTIONS` name ->
    the function the backend's record lists under it."""
    if name in BACKEND_FUNCTIONS:
        owner = find_backend(BACKEND_FUNCTIONS[name])
        return None if owner is None else owner.functions.get(name)
    if not name.startswith(EXT_PREFIX):
        return None
    rest = name[len(EXT_PREFIX) :]
    target, _, tail = rest.partition(".")
    if tail not in ("", "optimize"):
        return None
    backend = find_backend(target)
    if backend is None:
        return None
    return backend.optimize if tail else backend.codegen


def register_func(
    func_name: str | Callable[..., Any], f: Callable[..., Any] | None = None, override: bool = False
) -> Any:
    """Register ``f`` as the global function ``func_name``; a decorator when ``f`` is omitted.

    As in TVM, ``@register_func`` on a plain function registers it under its own name.
    """
    if callable(func_name) and f is None:
        fn = func_name
        func_registry.register(fn.__name__, fn, override=override)
        return fn

    def _register(fn: Callable[..., Any]) -> Callable[..., Any]:
        func_registry.register(str(func_name), fn, override=override)
        return fn

    return _register(f) if f is not None else _register


def get_global_func(name: str, allow_missing: bool = False) -> Callable[..., Any] | None:
    """The global function ``name``; ``None`` if missing and ``allow_missing``."""
    fn = func_registry.get(name)
    if fn is None:
        fn = _backend_function(name)
    if fn is None and not allow_missing:
        close = difflib.get_close_matches(name, list_global_func_names(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise RegistryKeyError(f"global function {name!r} is not registered{hint}")
    return fn


def list_global_func_names() -> list[str]:
    """Registered functions, and ``relay.ext.<name>`` of every known backend."""
    ext = {EXT_PREFIX + n for n in backend_registry.known()}
    return sorted(set(func_registry) | ext)


def remove_global_func(name: str) -> None:
    func_registry.remove(name)
