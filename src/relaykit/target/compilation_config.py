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

from .target import HOST_KINDS, Target
from .virtual_device import VirtualDevice, device_type_of_target

__all__ = ["CompilationConfig", "make_compilation_config"]


class CompilationConfig:
    """The targets of one build (see the module docstring).

    ``default_device_type`` is the DLPack code of the device that unplaced
    primitives run on (the pass config ``relay.fallback_device_type``, else the one
    device type of the targets, else the cpu)."""

    def __init__(
        self,
        primitive_targets: Sequence[Target],
        host_target: Target,
        default_device_type: int | None = None,
    ) -> None:
        if not primitive_targets:
            raise ArgumentError("a compilation config needs at least one target")
        self.host_target = host_target
        self.primitive_targets = [t.with_host(host_target) for t in primitive_targets]
        self.host_virtual_device = VirtualDevice.make(
            device_type_of_target(host_target), 0, host_target, ""
        )
        kinds = {device_type_of_target(t) for t in self.primitive_targets}
        if default_device_type is None:
            default_device_type = kinds.pop() if len(kinds) == 1 else 1
        if default_device_type <= 0:
            raise ArgumentError(
                f"relay.fallback_device_type must be a DLPack device code (1 cpu, 2 cuda, ...), "
                f"got {default_device_type}"
            )
        self.default_primitive_virtual_device = self.canonical_virtual_device(
            VirtualDevice.make(default_device_type, 0, None, "")
        )

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

    def find_primitive_target_for_device(self, device_type: int) -> Target:
        """The first primitive target running on DLPack device ``device_type``."""
        for t in self.primitive_targets:
            if device_type_of_target(t) == device_type:
                return t
        kinds = ", ".join(
            f"{t.kind.name} ({device_type_of_target(t)})" for t in self.primitive_targets
        )
        raise ArgumentError(
            f"no target of the build runs on device type {device_type}; the targets are "
            f"{kinds}: add a target for that device, or place the value elsewhere"
        )

    def canonical_virtual_device(self, vd: VirtualDevice) -> VirtualDevice:
        """``vd`` with its target replaced by the build's equal target, or, when it names
        a device type but no target, the build's target for that device type."""
        target = vd.target
        if target is not None:
            for known in (*self.primitive_targets, self.host_target):
                if known == target:
                    target = known
                    break
        elif vd.device_type_int != -1:
            target = self.find_primitive_target_for_device(vd.device_type_int)
        if target is vd.target:
            return vd
        return VirtualDevice.make(vd.device_type_int, vd.virtual_device_id, target, vd.memory_scope)

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

    ``ctx`` (the pass context, or None) may set ``relay.fallback_device_type``, the
    device unplaced primitives run on."""
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
    fallback = None
    config = getattr(ctx, "config", None)
    if isinstance(config, Mapping) and config.get("relay.fallback_device_type") is not None:
        value = config["relay.fallback_device_type"]
        try:
            fallback = int(value)
        except (TypeError, ValueError):
            raise ArgumentError(
                "the pass config relay.fallback_device_type must be a DLPack device code "
                f"(1 cpu, 2 cuda, ...), got {value!r}"
            ) from None
    return CompilationConfig(list(seen.values()), host, fallback)
