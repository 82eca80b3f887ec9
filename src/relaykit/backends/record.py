"""The :class:`Backend` record: everything relaykit knows about one backend, in one value.

A backend is a name plus the pieces the BYOC flow asks for: operator rules
(read as the operator attribute :func:`target_key`), a pattern table, an
optimize hook run before partitioning, a codegen, the runtime-module loaders of
its artifacts, and partitioning options. The record is frozen;
``dataclasses.replace`` makes a changed copy.

>>> b = Backend("demo", rules={"nn.relu": True}, description="a demo")
>>> b.name, b.supported_ops(), target_key("demo")
('demo', ['nn.relu'], 'target.demo')
>>> Backend("")
Traceback (most recent call last):
...
relaykit.errors.BackendError: a backend name must be a non-empty string, got ''
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from relaykit.errors import BackendError

__all__ = ["Backend", "Requirement", "target_key", "target_of_key", "HOST_TARGET"]

#: The name of the host: not a backend, never a key of the registry.
HOST_TARGET = "default"

#: Operator attributes ``target.<name>`` hold backend ``<name>``'s rules.
_TARGET_PREFIX = "target."

#: A pattern table: ``(name, pattern)`` or ``(name, pattern, check)`` entries.
PatternEntries = Sequence[tuple[Any, ...]]


def target_key(name: str) -> str:
    """The operator attribute holding backend ``name``'s rule: ``"target.<name>"``.

    The one place this key is spelled; every reader and writer of rules calls it.
    """
    return f"{_TARGET_PREFIX}{name}"


def target_of_key(key: str) -> str | None:
    """The backend whose rules operator attribute ``key`` holds, or None (the inverse of
    :func:`target_key`).

    >>> target_of_key("target.dnnl"), target_of_key("FTypeRelation")
    ('dnnl', None)
    """
    if key.startswith(_TARGET_PREFIX) and len(key) > len(_TARGET_PREFIX):
        return key[len(_TARGET_PREFIX) :]
    return None


@dataclass(frozen=True)
class Requirement:
    """What a backend needs beyond relaykit itself.

    ``extra``: the package extra (``pip install 'relaykit[<extra>]'``); ``install``:
    the command to print; ``check``: returns ``None`` when the requirement is met,
    else a short reason (``"oneDNN is not installed"``).
    """

    extra: str = ""
    install: str = ""
    check: Callable[[], str | None] | None = None

    @property
    def command(self) -> str:
        if self.install:
            return self.install
        return f"pip install 'relaykit[{self.extra}]'" if self.extra else ""

    def missing(self) -> str | None:
        """``None`` when met; otherwise why not (a check that raises counts as unmet)."""
        if self.check is None:
            return None
        try:
            return self.check()
        except Exception as err:  # a status probe must not take the caller down
            return f"{type(err).__name__}: {err}"


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Backend:
    """One backend (see the module docstring).

    - ``rules``: operator name -> rule (a checker ``fn(call)`` / ``fn(attrs, args)`` or a
      bool); the operator table shows it as attribute ``target.<name>``, and an attribute
      registered there explicitly (TVM's ``register_op_attr``) wins over it;
    - ``patterns``: the pattern table, or a zero-argument function returning it;
    - ``options``: option defaults (read from ``PassContext`` config by the codegen);
    - ``optimize``: ``optimize(mod, params) -> mod``, run before partitioning;
    - ``codegen``: ``codegen(func)`` (or ``codegen([funcs])`` when ``per_module``) ->
      runtime module;
    - ``loaders``: runtime-module ``type_key`` -> ``loader(blob)`` for exported artifacts;
    - ``functions``: global functions the backend provides beside its codegen (TVM's
      ``tvm.get_global_func`` names, e.g. ``runtime.DNNLJSONRuntimeCreate``);
    - ``transparent_ops``, ``min_region_ops``, ``min_region_macs``: partitioning options
      (``None`` transparent ops: the default set);
    - ``description``, ``version``, ``requires``: what ``relaykit backends`` shows;
    - ``exports``: the names the backend publishes under TVM's ``relay.op.contrib.<name>``
      (e.g. ``partition_for_dnnl``), for scripts written against TVM.
    """

    name: str
    rules: Mapping[str, Any] = field(default_factory=dict)
    patterns: PatternEntries | Callable[[], PatternEntries] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    optimize: Callable[..., Any] | None = None
    codegen: Callable[[Any], Any] | None = None
    per_module: bool = False
    loaders: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    functions: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    transparent_ops: frozenset[str] | None = None
    min_region_ops: int = 0
    min_region_macs: int = 0
    description: str = ""
    version: str = ""
    requires: Requirement = field(default_factory=Requirement)
    exports: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise BackendError(f"a backend name must be a non-empty string, got {self.name!r}")
        if self.name == HOST_TARGET:
            raise BackendError(f"{HOST_TARGET!r} is the host, not a backend")
        for key in ("rules", "options", "loaders", "functions", "exports"):
            value = getattr(self, key)
            if not isinstance(value, Mapping):
                raise BackendError(
                    f"{key} of backend {self.name!r} must be a mapping, got {type(value).__name__}"
                )
            object.__setattr__(self, key, _frozen(value))
        for key in ("optimize", "codegen"):
            value = getattr(self, key)
            if value is not None and not callable(value):
                raise BackendError(f"the {key} of backend {self.name!r} must be callable")
        ops = self.transparent_ops
        if ops is not None:
            if isinstance(ops, str):
                ops = [ops]
            object.__setattr__(self, "transparent_ops", frozenset(ops))

    @property
    def key(self) -> str:
        """The operator attribute of this backend's rules (``target.<name>``)."""
        return target_key(self.name)

    def pattern_table(self) -> list[tuple[Any, ...]] | None:
        """The pattern table (calling ``patterns`` when it is a function), or None."""
        table = self.patterns() if callable(self.patterns) else self.patterns
        return None if table is None else list(table)

    def supported_ops(self) -> list[str]:
        """The operators this backend has a rule for, sorted."""
        return sorted(self.rules)
