"""The codegen plug-in interface: ``relay.ext.<target>``.

A backend registers a codegen for its target; ``relay.build`` hands it every
function that ``PartitionGraph`` made for that target (attribute
``Compiler=<target>``) and gets back a runtime :class:`~relaykit.runtime.Module`
exposing one function per ``global_symbol``::

    @register_codegen("mylib")
    def mylib_codegen(func):              # a partitioned relay Function
        return MyLibModule(...)           # runtime module with func's global_symbol

``per_module=True`` hands the codegen all of the target's functions at once,
as a list, so it can compile them into one library. An ``optimize`` hook,
``optimize(mod, params) -> mod``, runs on the module before partitioning
(:func:`run_optimize_hook`; :func:`relaykit.byoc.partition_for` and the backends'
``partition_for_<target>`` call it). TVM's spelling works too:
``tvm.register_func("relay.ext.mylib", fn)`` (and ``"relay.ext.mylib.optimize"``).

>>> from relaykit.runtime.module import PythonModule
>>> with scoped_codegens():
...     _ = register_codegen("demo", lambda f: PythonModule("demo", {}))
...     get_codegen("demo").name
'demo'
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from relaykit.backends import backend_registry, find_backend, update_backend
from relaykit.byoc.pipeline import partition_for, run_optimize_hook
from relaykit.errors import CodegenError
from relaykit.ir.module import IRModule
from relaykit.runtime.module import Module
from relaykit.runtime.registry import EXT_PREFIX, func_registry, get_global_func

__all__ = [
    "CodegenInfo",
    "register_codegen",
    "get_codegen",
    "list_codegens",
    "scoped_codegens",
    "run_optimize_hook",
    "partition_for_target",
]

#: :func:`relaykit.byoc.partition_for` under its older name here: each target's
#: ``optimize`` hook, then BYOC partitioning (``params`` bound into ``main`` first).
partition_for_target = partition_for

Optimize = Callable[[IRModule, Mapping[str, Any] | None], IRModule]


@dataclass(frozen=True)
class CodegenInfo:
    """A backend's codegen: ``compile(func)`` (or ``compile([funcs])`` when
    ``per_module``) returns a runtime module; ``optimize`` runs before partitioning."""

    name: str
    compile: Callable[[Any], Module]
    optimize: Optimize | None = None
    per_module: bool = False


def _set_codegen(info: CodegenInfo, override: bool) -> None:
    """Write ``info`` into backend ``info.name``'s record (a bare record when it has none)."""
    old = find_backend(info.name)
    taken = old is not None and old.codegen is not None and old.codegen is not info.compile
    if taken and not override:
        raise CodegenError(
            f"a codegen for target {info.name!r} is already registered; "
            "pass override=True to replace it"
        )
    changes: dict[str, Any] = {"codegen": info.compile, "per_module": info.per_module}
    if info.optimize is not None:
        changes["optimize"] = info.optimize
    update_backend(info.name, **changes)


def _codegen_of(name: str) -> CodegenInfo | None:
    """Backend ``name``'s codegen, read from its record, else registered the TVM way as
    ``relay.ext.<name>``."""
    backend = find_backend(name)
    if backend is not None and backend.codegen is not None:
        return CodegenInfo(name, backend.codegen, backend.optimize, backend.per_module)
    fn = func_registry.get(EXT_PREFIX + name)
    if fn is None:
        return None
    return CodegenInfo(name, fn, get_global_func(f"{EXT_PREFIX}{name}.optimize", True))


@contextlib.contextmanager
def scoped_codegens() -> Iterator[None]:
    """Codegens (backend records and ``relay.ext.*`` functions) registered in the block are
    undone at its end."""
    with backend_registry.scoped(), func_registry.scoped():
        yield None


def register_codegen(
    name: str,
    fn: Callable[[Any], Module] | None = None,
    *,
    optimize: Optimize | None = None,
    per_module: bool = False,
    override: bool = False,
) -> Any:
    """Register the codegen of target ``name``; a decorator when ``fn`` is omitted.

    It sets the ``codegen`` of backend ``name``'s record (creating a bare record when
    the backend has none).
    """
    if not isinstance(name, str) or not name:
        raise CodegenError(f"a codegen target name must be a non-empty string, got {name!r}")

    def _register(f: Callable[[Any], Module]) -> Callable[[Any], Module]:
        if not callable(f):
            raise CodegenError(f"the codegen of {name!r} must be callable, got {f!r}")
        _set_codegen(CodegenInfo(name, f, optimize, per_module), override)
        return f

    return _register(fn) if fn is not None else _register


def get_codegen(name: str) -> CodegenInfo:
    """The codegen of target ``name``; a missing one is a :class:`CodegenError`."""
    info = _codegen_of(name)
    if info is None:
        known = list_codegens()
        close = difflib.get_close_matches(name, known, n=2)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise CodegenError(
            f"no codegen is registered for target {name!r} (relay.ext.{name}){hint}. "
            f"Registered: {', '.join(known) or 'none'}. Install a package that provides "
            f"backend {name!r} (entry-point group 'relaykit.backends'), register a "
            f"relaykit.backends.Backend, or register_codegen({name!r}, fn)"
        )
    return info


def list_codegens() -> list[str]:
    """Targets with a codegen: loaded, built-in and installed backends, and ``relay.ext.*``
    functions registered the TVM way."""
    ext = {n[len(EXT_PREFIX) :] for n in func_registry if n.startswith(EXT_PREFIX)}
    loaded = {n for n, b in backend_registry.items() if b.codegen is not None}
    unloaded = set(backend_registry.known()) - set(backend_registry)
    return sorted(loaded | unloaded | {n for n in ext if not n.endswith(".optimize")})
