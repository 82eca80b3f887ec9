"""Runtime modules: named functions, imported modules, and how each kind is saved.

A :class:`Module` exposes callables by symbol (``mod["run"]``,
``mod.get_function("tvmgen_default_ccompiler_main_0")``) and may import other
modules, as a host library imports the modules of its BYOC backends. Each
module kind has a ``type_key``; it saves itself as a :class:`ModuleBlob`
(JSON-able metadata, raw files, arrays — never pickle), and a loader
registered for its ``type_key`` rebuilds it (see :mod:`relaykit.runtime.export` and
:mod:`relaykit.runtime.artifact`).

A backend function follows TVM's destination-passing convention:
``f(*inputs, *outputs)`` writes into the output arrays.

>>> import numpy as np
>>> m = PythonModule("demo", {"twice": lambda x, out: np.multiply(x, 2, out=out)})
>>> out = np.empty(2, "float32")
>>> _ = m["twice"](np.ones(2, "float32"), out)
>>> out.tolist()
[2.0, 2.0]
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from relaykit.backends import backend_registry, find_backend
from relaykit.errors import ArtifactError, BackendLoadError, FunctionNotFoundError
from relaykit.registry import Registry

from .export import ModuleBlob, export_module

__all__ = [
    "enabled",
    "Module",
    "ModuleBlob",
    "PythonModule",
    "ModuleLoaderRegistry",
    "module_loaders",
    "register_module_loader",
    "BenchmarkResult",
    "time_calls",
]


class Module:
    """Base class of runtime modules."""

    type_key: ClassVar[str] = "module"

    def __init__(self) -> None:
        self.imported_modules: list[Module] = []

    # -- functions --------------------------------------------------------------------------
    def _own_function(self, name: str) -> Callable[..., Any] | None:
        """This module's function ``name`` (subclasses override), or None."""
        return None

    def function_names(self) -> list[str]:
        """The names of this module's own functions."""
        return []

    def get_function(self, name: str, query_imports: bool = False) -> Callable[..., Any]:
        """The function ``name``; with ``query_imports`` also searched in imported modules."""
        owner = self._owner_of(name) if query_imports else self
        fn = owner._own_function(name) if owner is not None else None
        if fn is None:
            known = ", ".join(self.function_names()) or "none"
            where = " or its imported modules" if query_imports else ""
            raise FunctionNotFoundError(
                f"{self.type_key} module has no function {name!r}{where} (its functions: {known})"
            )
        return fn

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self.get_function(name, query_imports=True)

    def implements_function(self, name: str, query_imports: bool = False) -> bool:
        if query_imports:
            return self._owner_of(name) is not None
        return self._own_function(name) is not None

    def _owner_of(self, name: str) -> Module | None:
        """The first module (self, then imports depth-first) with function ``name``."""
        seen: set[int] = set()
        stack: list[Module] = [self]
        while stack:
            m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            if m._own_function(name) is not None:
                return m
            stack.extend(reversed(m.imported_modules))
        return None

    def time_evaluator(
        self,
        func_name: str,
        dev: Any = None,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: float = 0.0,
        **_: Any,
    ) -> Callable[..., BenchmarkResult]:
        """A function timing ``func_name`` (TVM's ``Module.time_evaluator``): ``repeat``
        measurements, each the mean of ``number`` calls (doubled until a measurement
        takes ``min_repeat_ms``), in seconds."""
        fn = self.get_function(func_name, query_imports=True)

        def evaluator(*args: Any) -> BenchmarkResult:
            return time_calls(functools.partial(fn, *args), number, repeat, min_repeat_ms)

        return evaluator

    def bind_function(
        self, name: str, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]
    ) -> Callable[[], Any]:
        """A no-argument callable running ``name`` on these fixed arrays.

        Executors call this once per call site; modules override it to precompute
        whatever they can (pointers, engines bound to the buffers).
        """
        owner = self._owner_of(name)
        if owner is None:
            return functools.partial(self.get_function(name, True), *inputs, *outputs)
        if owner is not self:
            return owner.bind_function(name, inputs, outputs)
        return functools.partial(self.get_function(name), *inputs, *outputs)

    # -- imports ----------------------------------------------------------------------------
    def import_module(self, module: Module) -> None:
        if not isinstance(module, Module):
            raise ArtifactError(f"import_module takes a runtime Module, got {module!r}")
        self.imported_modules.append(module)

    # -- saving -----------------------------------------------------------------------------
    def save_blob(self) -> ModuleBlob:
        """This module as metadata, files and arrays (subclasses that can be exported
        override it)."""
        raise ArtifactError(
            f"a {self.type_key!r} module cannot be exported: it does not implement save_blob()"
        )

    def export_library(self, file_name: str, **_: Any) -> None:
        """Write this module and everything it imports to one file (see
        :func:`relaykit.runtime.load_module`)."""
        export_module(self, file_name)

    @property
    def format(self) -> str:
        return self.type_key

    def __repr__(self) -> str:
        return f"Module({self.type_key}, {len(self.imported_modules)} imports)"


class BenchmarkResult:
    """Seconds per call: ``mean``, ``median``, ``min``, ``max``, ``std`` and ``results``
    (TVM's ``runtime.module.BenchmarkResult``)."""

    def __init__(self, results: Sequence[float]) -> None:
        self.results = list(results)
        arr = np.asarray(self.results, dtype=np.float64)
        self.mean = float(arr.mean())
        self.median = float(np.median(arr))
        self.min = float(arr.min())
        self.max = float(arr.max())
        self.std = float(arr.std())

    def __repr__(self) -> str:
        ms = 1000.0
        return (
            "Execution time summary:\n"
            " mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)\n"
            f" {self.mean * ms:9.4f}   {self.median * ms:9.4f}   {self.max * ms:9.4f}   "
            f"{self.min * ms:9.4f}   {self.std * ms:9.4f}"
        )


def time_calls(
    call: Callable[[], object], number: int, repeat: int, min_repeat_ms: float | None = 0.0
) -> BenchmarkResult:
    """Time ``call`` as TVM's time evaluator does: ``repeat`` measurements, each the mean
    of ``number`` calls in seconds; a measurement that takes less than ``min_repeat_ms``
    is redone with twice as many calls (up to about a million).

    Serves :meth:`Module.time_evaluator` and
    :meth:`relaykit.contrib.graph_executor.GraphModule.benchmark`.
    """
    results = []
    for _ in range(max(1, repeat)):
        n = max(1, number)
        while True:
            start = time.perf_counter()
            for _ in range(n):
                call()
            elapsed = time.perf_counter() - start
            if elapsed * 1000 >= (min_repeat_ms or 0) or n > 1 << 20:
                break
            n *= 2
        results.append(elapsed / n)
    return BenchmarkResult(results)


class PythonModule(Module):
    """A module of Python callables. It cannot be exported: use it in tests and for
    backends that live only in-process."""

    type_key: ClassVar[str] = "python"

    def __init__(self, name: str, functions: Mapping[str, Callable[..., Any]]) -> None:
        super().__init__()
        self.name = name
        self._functions = dict(functions)

    def _own_function(self, name: str) -> Callable[..., Any] | None:
        return self._functions.get(name)

    def function_names(self) -> list[str]:
        return sorted(self._functions)


Loader = Callable[[ModuleBlob], Module]


def _backend_loader(type_key: str) -> Loader | None:
    """The loader that a backend record declares for ``type_key`` (loaded backends first,
    then the built-in and installed ones, loaded on demand)."""
    for name in [*backend_registry, *backend_registry.known()]:
        try:
            backend = find_backend(name)
        except BackendLoadError:
            continue  # a broken third-party backend must not hide another's loader
        if backend is not None and type_key in backend.loaders:
            loader: Loader = backend.loaders[type_key]
            return loader
    return None


class ModuleLoaderRegistry(Registry[str, Loader]):
    """Loaders by ``type_key`` (TVM's ``runtime.module.loadbinary_<type_key>``).

    Holds the loaders of relaykit's own module types; a backend's loaders are read from
    its :class:`~relaykit.backends.Backend` record (``loaders``), not copied here.
    """

    def get(self, key: str, default: Any = None) -> Any:
        loader = self._entries.get(key)
        if loader is None:
            loader = _backend_loader(key)
        return default if loader is None else loader

    def names(self) -> list[str]:
        return sorted(self)


module_loaders = ModuleLoaderRegistry("module loader")


def register_module_loader(type_key: str, loader: Loader | None = None) -> Any:
    """Register how modules of ``type_key`` are rebuilt from a :class:`ModuleBlob`."""

    def _register(fn: Loader) -> Loader:
        module_loaders.register(str(type_key), fn, override=True)
        return fn

    return _register(loader) if loader is not None else _register


def enabled(target: Any) -> bool:
    """Whether code can be built and run for ``target`` here (TVM's ``runtime.enabled``):
    True for the host CPU (``llvm``, ``c``, ``cpu``), False for any other device."""
    name = str(getattr(getattr(target, "kind", None), "name", target)).split()
    return bool(name) and name[0] in ("llvm", "c", "cpu", "stackvm")
