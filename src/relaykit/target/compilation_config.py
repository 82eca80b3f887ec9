"""TVM's ``CompilationConfig``: the targets a build compiles for, and which is the host.

``make_compilation_config(ctx, targets, target_host=None)`` takes what ``relay.build``
takes (one target, a list of them, or a ``{device: target}`` dict) and returns the
targets with the host attached to each: ``primitive_targets`` (one per device kind),
``host_target`` (``target_host``, else the host a target carries, else a CPU target
among them, else ``llvm``) and the default virtual devices.

>>> cfg = make_compilation_config(None, ["llvm", "cuda"])
>>> [t.kind.name for t in cfg.primitive_targets], cfg.host_target.kind.name
(['llvm', 'cuda'], 'llvm')
>>> cfg.optional_homogeneous_target is None
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from relaykit.errors import ArgumentError

from .target import HOST_KINDS, Target, VirtualDevice

__all__ = ["CompilationConfig", "make_compilation_config"]


class CompilationConfig:
    """The targets of one build (see the module docstring)."""

    def __init__(self, primitive_targets: Sequence[Target], host_target: Target) -> None:
        if not primitive_targets:
            raise ArgumentError("a compilation config needs at least one target")
        self.host_target = host_target
        self.primitive_targets = [t.with_host(host_target) for t in primitive_targets]
        self.host_virtual_device = VirtualDevice(None, host_target)
        self.default_primitive_virtual_device = VirtualDevice(None, self.primitive_targets[0])

    @property
    def optional_homogeneous_target(self) -> Target | None:
        """The one target when the build has exactly one, else None."""
        return self.primitive_targets[0] if len(self.primitive_targets) == 1 else None

    def find_primitive_target_for_kind(self, kind_name: str) -> Target | None:
        """The primitive target of kind ``kind_name``, or None."""
        for t in self.primitive_targets:
            if t.kind.name == kind_name:
                return t
        return None

    def __repr__(self) -> str:
        names = ", ".join(str(t.kind.name) for t in self.primitive_targets)
        return f"CompilationConfig(primitive_targets=[{names}], host={self.host_target.kind.name})"


def _targets(target: Any) -> list[Target]:
    if isinstance(target, (str, Target)):
        return [Target(target) if isinstance(target, str) else target]
    if isinstance(target, Mapping):
        return [t if isinstance(t, Target) else Target(t) for t in target.values()]
    if isinstance(target, Sequence):
        return [t if isinstance(t, Target) else Target(t) for t in target]
    raise ArgumentError(
        f"make_compilation_config takes a target, a list of targets or a {{device: target}} "
        f"dict, not {type(target).__name__}"
    )


def make_compilation_config(ctx: Any, target: Any, target_host: Any = None) -> CompilationConfig:
    """TVM's ``tvm.target.make_compilation_config(pass_ctx, target, target_host=None)``.

    ``ctx`` (the pass context) is accepted for TVM's signature; the targets alone
    decide the config."""
    targets = _targets(target)
    if not targets:
        raise ArgumentError("make_compilation_config: no target given")
    host: Target | None = None
    if target_host is not None:
        host = target_host if isinstance(target_host, Target) else Target(target_host)
    if host is None:
        host = next((t.host for t in targets if t.host is not None), None)
    if host is None:
        host = next((Target(t.kind.name) for t in targets if t.kind.name in HOST_KINDS), None)
    if host is None:
        host = Target("llvm")
    seen: dict[str, Target] = {}
    for t in targets:
        seen.setdefault(t.kind.name, t)
    return CompilationConfig(list(seen.values()), host)
