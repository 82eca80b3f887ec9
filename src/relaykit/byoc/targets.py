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

The options are fields of the target's :class:`~relaykit.backends.Backend` record,
read from it and written to it here. :func:`scoped_registries` undoes, at the end
of a ``with`` block, every rule, backend, pattern table and spec registered in it.

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
from dataclasses import dataclass, field, replace

from relaykit.backends import Backend, backend_registry, find_backend, update_backend
from relaykit.ir.op import default_registry

from ._common import DEFAULT_TARGET, PartitionError

__all__ = [
    "DEFAULT_TRANSPARENT_OPS",
    "TargetSpec",
    "configure_target",
    "get_target_spec",
    "scoped_registries",
    "spec_of",
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
    spec = get_target_spec(name)
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
    update_backend(
        spec.name,
        min_region_ops=spec.min_region_ops,
        min_region_macs=spec.min_region_macs,
        transparent_ops=spec.transparent_ops,
    )
    return spec


_DEFAULT_SPECS: dict[str, TargetSpec] = {}


def get_target_spec(name: str) -> TargetSpec:
    """The options of target ``name``, read from its backend record (defaults when it has
    none)."""
    backend = find_backend(name)
    if backend is not None:
        return spec_of(backend)
    spec = _DEFAULT_SPECS.get(name)
    if spec is None:
        spec = TargetSpec(name)
        if len(_DEFAULT_SPECS) > 256:
            _DEFAULT_SPECS.clear()
        _DEFAULT_SPECS[name] = spec
    return spec


@contextlib.contextmanager
def scoped_registries() -> Iterator[None]:
    """Undo, at the end of the block, every operator attribute (target rules),
    pattern table and target spec registered inside it."""
    with default_registry.scoped(), backend_registry.scoped():
        yield None
