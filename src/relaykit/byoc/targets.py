"""Per-target partitioning options: transparent operators and minimum region size.

Every backend gets the same knobs, instead of each writing its own pruning
pass as in TVM::

    configure_target("mylib", min_region_ops=3, min_region_macs=1_000_000,
                     transparent_ops=["annotation.stop_fusion", "copy"])

- ``transparent_ops``: identity-like operators that join the region of the
  operator feeding them when that producer runs on this target, so they never
  split a region. ``annotation.stop_fusion`` (inserted by quantization) is
  transparent for every target unless a spec says otherwise.
- ``min_region_ops`` / ``min_region_macs``: after regions are merged, a region
  of this target with fewer operators (transparent ones not counted; composite
  calls count their operators) or fewer multiply-accumulates (conv2d, dense,
  batch_matmul) goes back to the host. Both default to 0: no pruning, as in TVM.

The options are fields of the target's :class:`~relaykit.backends.Backend` record;
:data:`target_registry` is a view of them. :func:`scoped_registries` undoes, at
the end of a ``with`` block, every rule, backend, pattern table and spec
registered in it.

>>> with scoped_registries():
...     spec = configure_target("demo", min_region_ops=2)
...     get_target_spec("demo").min_region_ops
2
>>> get_target_spec("demo").min_region_ops
0
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any

from relaykit.backends import Backend, backend_registry, find_backend, update_backend
from relaykit.ir.op import default_registry

from ._common import DEFAULT_TARGET, PartitionError

__all__ = [
    "DEFAULT_TRANSPARENT_OPS",
    "TargetSpec",
    "TargetRegistry",
    "target_registry",
    "configure_target",
    "get_target_spec",
    "scoped_registries",
    "spec_of",
    "install_rules",
    "activate_targets",
]

#: Operators that are transparent for every target unless its spec overrides them.
DEFAULT_TRANSPARENT_OPS: frozenset[str] = frozenset({"annotation.stop_fusion"})


@dataclass(frozen=True)
class TargetSpec:
    """Partitioning options of one target (see the module docstring)."""

    name: str
    min_region_ops: int = 0
    min_region_macs: int = 0
    transparent_ops: frozenset[str] = field(default=DEFAULT_TRANSPARENT_OPS)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise PartitionError(f"a target name must be a non-empty string, got {self.name!r}")
        if self.name == DEFAULT_TARGET:
            raise PartitionError(f"{DEFAULT_TARGET!r} is the host, not a configurable target")
        for key in ("min_region_ops", "min_region_macs"):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise PartitionError(
                    f"{key} of target {self.name!r} must be an int >= 0, got {value!r}"
                )
        ops = self.transparent_ops
        if isinstance(ops, str) or not isinstance(ops, Iterable):
            raise PartitionError(
                f"transparent_ops of target {self.name!r} must be a list of operator names, "
                f"got {ops!r}"
            )
        ops = frozenset(ops)
        for name in ops:
            if name not in default_registry:
                raise PartitionError(
                    f"transparent op {name!r} of target {self.name!r} is not a registered operator"
                )
        object.__setattr__(self, "transparent_ops", ops)

    def is_transparent(self, op_name: str) -> bool:
        return op_name in self.transparent_ops


class TargetRegistry:
    """Target specs by name: a view of the backend registry (a backend's
    ``min_region_ops``, ``min_region_macs`` and ``transparent_ops`` fields); a target
    without a backend record gets the defaults."""

    def __init__(self) -> None:
        self._defaults: dict[str, TargetSpec] = {}

    def get(self, name: str) -> TargetSpec:
        backend = find_backend(name)
        if backend is None:
            spec = self._defaults.get(name)
            if spec is None:
                spec = self._defaults[name] = TargetSpec(name)
            return spec
        return spec_of(backend)

    def set(self, spec: TargetSpec) -> None:
        update_backend(
            spec.name,
            min_region_ops=spec.min_region_ops,
            min_region_macs=spec.min_region_macs,
            transparent_ops=spec.transparent_ops,
        )

    def names(self) -> list[str]:
        return sorted(n for n, b in backend_registry.items() if spec_of(b) != TargetSpec(n))

    def scoped(self) -> AbstractContextManager[Any]:
        return backend_registry.scoped()


_SPECS: dict[int, tuple[Backend, TargetSpec]] = {}


def spec_of(backend: Backend) -> TargetSpec:
    """The partitioning options of ``backend``, validated (one :class:`TargetSpec` per
    record, so reading them in a hot loop costs a dict lookup)."""
    hit = _SPECS.get(id(backend))
    if hit is not None and hit[0] is backend:
        return hit[1]
    ops = DEFAULT_TRANSPARENT_OPS if backend.transparent_ops is None else backend.transparent_ops
    spec = TargetSpec(backend.name, backend.min_region_ops, backend.min_region_macs, ops)
    if len(_SPECS) > 256:
        _SPECS.clear()
    _SPECS[id(backend)] = (backend, spec)
    return spec


target_registry = TargetRegistry()


def configure_target(
    name: str,
    *,
    min_region_ops: int | None = None,
    min_region_macs: int | None = None,
    transparent_ops: Iterable[str] | None = None,
) -> TargetSpec:
    """Set partitioning options of target ``name``; options not given keep their value.

    ``transparent_ops`` replaces the target's list (include
    ``"annotation.stop_fusion"`` to keep it).
    """
    spec = target_registry.get(name)
    changes: dict[str, object] = {}
    if min_region_ops is not None:
        changes["min_region_ops"] = min_region_ops
    if min_region_macs is not None:
        changes["min_region_macs"] = min_region_macs
    if transparent_ops is not None:
        if isinstance(transparent_ops, str):
            transparent_ops = [transparent_ops]
        changes["transparent_ops"] = frozenset(transparent_ops)
    spec = replace(spec, **changes)  # type: ignore[arg-type]
    target_registry.set(spec)
    return spec


def get_target_spec(name: str) -> TargetSpec:
    """The options of target ``name`` (defaults when it was never configured)."""
    return target_registry.get(name)


@contextlib.contextmanager
def scoped_registries() -> Iterator[None]:
    """Undo, at the end of the block, every operator attribute (target rules),
    pattern table and target spec registered inside it."""
    with default_registry.scoped(), backend_registry.scoped():
        yield None


def install_rules(backend: Backend, *, replace_existing: bool = False) -> None:
    """Put ``backend``'s rules into the operator attribute table (``target.<name>``).

    An operator that already has a rule for the backend keeps it (a rule the user
    registered wins) unless ``replace_existing``. Operators that are not registered
    are skipped.
    """
    key = backend.key
    for op_name, rule in backend.rules.items():
        if op_name not in default_registry:
            continue
        current = default_registry.get_attr(op_name, key)
        if current is rule or (current is not None and not replace_existing):
            continue
        if current is not None:
            default_registry.reset_attr(op_name, key)
        default_registry.set_attr(op_name, key, rule)


def activate_targets(targets: Iterable[str]) -> None:
    """Load each target's backend (built-in and installed ones are found by name) and
    install its operator rules where missing. A target with no backend is left alone:
    its rules may have been registered directly as operator attributes."""
    for name in targets:
        backend = find_backend(name)
        if backend is not None and backend.rules:
            install_rules(backend)
