"""Virtual devices (TVM's ``tvm.target.VirtualDevice``): where a value is stored.

A virtual device names up to four things, each of which may be left open: the
device type (DLPack's code: 1 cpu, 2 cuda, ...), a virtual device id, the
:class:`~relaykit.target.Target` whose code computes the value, and a memory
scope. Device planning (``relay.transform.PlanDevices``) joins the constraints
it collects: two virtual devices *join* when every field they both fix agrees.

>>> from relaykit.runtime.ndarray import cpu
>>> a = VirtualDevice(cpu(), "llvm")
>>> b = VirtualDevice(memory_scope="global")
>>> joined = join_virtual_devices(a, b)
>>> joined.device_type, joined.target.kind.name, joined.memory_scope
(1, 'llvm', 'global')
>>> join_virtual_devices(joined, VirtualDevice(memory_scope="texture")) is None
True
>>> VirtualDevice().is_fully_unconstrained
True
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import ArgumentError, ImmutableError

from .target import Target

__all__ = [
    "VirtualDevice",
    "DEVICE_TYPE_CODES",
    "FULLY_UNCONSTRAINED",
    "device_type_of_target",
    "join_virtual_devices",
    "default_virtual_device",
]

#: DLPack's device-type codes (TVM's ``Device.device_type`` integers), by device name.
DEVICE_TYPE_CODES: dict[str, int] = {
    "cpu": 1, "cuda": 2, "cuda_host": 3, "opencl": 4, "vulkan": 7, "metal": 8, "vpi": 9,
    "rocm": 10, "rocm_host": 11, "ext_dev": 12, "cuda_managed": 13, "oneapi": 14,
    "webgpu": 15, "hexagon": 16,
}  # fmt: skip
_DEVICE_NAMES = {code: name for name, code in DEVICE_TYPE_CODES.items()}

#: The device a target's code runs on, by target kind.
_KIND_DEVICE = {
    "llvm": "cpu", "c": "cpu", "hybrid": "cpu", "ccompiler": "cpu", "cuda": "cuda",
    "nvptx": "cuda", "rocm": "rocm", "opencl": "opencl", "vulkan": "vulkan",
    "metal": "metal", "webgpu": "webgpu", "hexagon": "hexagon", "ext_dev": "ext_dev",
}  # fmt: skip


def device_type_of_target(target: Target) -> int:
    """The DLPack device code a target's code runs on (``llvm`` 1, ``cuda`` 2, ...)."""
    return DEVICE_TYPE_CODES.get(_KIND_DEVICE.get(target.kind.name, "cpu"), 1)


def _device_code(device: Any) -> tuple[int, int]:
    """``(device type code, device id)`` of a ``Device``, or ``(-1, -1)`` for none."""
    if device is None:
        return -1, -1
    kind = getattr(device, "device_type", None)
    if isinstance(kind, str):
        if kind not in DEVICE_TYPE_CODES:
            known = ", ".join(DEVICE_TYPE_CODES)
            raise ArgumentError(f"unknown device type {kind!r}; the device names are: {known}")
        code = DEVICE_TYPE_CODES[kind]
    elif isinstance(kind, int):
        code = kind
    else:
        raise ArgumentError(
            f"a VirtualDevice takes a device such as tvm.cpu() or tvm.cuda(1), "
            f"not {type(device).__name__}"
        )
    return code, int(getattr(device, "device_id", 0))


class VirtualDevice:
    """Where a value lives: device type, virtual device id, target, memory scope.

    ``VirtualDevice(device=None, target=None, memory_scope="")`` as in TVM; a field
    left open is -1 (device type, id), ``None`` (target) or ``""`` (scope). With a
    target but no device the device type is the target's. Virtual devices are
    values: equal when all four fields are (targets compare with their hosts).

    >>> from relaykit.runtime.ndarray import cuda
    >>> vd = VirtualDevice(cuda(1), "cuda")
    >>> vd.device_type, vd.virtual_device_id, vd.device_name
    (2, 1, 'cuda')
    """

    __slots__ = ("device_type_int", "virtual_device_id", "target", "memory_scope")

    device_type_int: int
    virtual_device_id: int
    target: Target | None
    memory_scope: str

    def __init__(
        self, device: Any = None, target: Target | str | None = None, memory_scope: str = ""
    ) -> None:
        code, dev_id = _device_code(device)
        tgt = Target(target) if isinstance(target, str) else target
        if tgt is not None and not isinstance(tgt, Target):
            raise ArgumentError(f"a VirtualDevice's target must be a Target, got {tgt!r}")
        if tgt is not None:
            implied = device_type_of_target(tgt)
            if code == -1:
                code = implied
            elif code != implied:
                raise ArgumentError(
                    f"target {tgt} runs on device type {implied} "
                    f"({_DEVICE_NAMES.get(implied, '?')}) but the virtual device's device "
                    f"is of type {code} ({_DEVICE_NAMES.get(code, '?')}): give a matching "
                    "device or target"
                )
        object.__setattr__(self, "device_type_int", code)
        object.__setattr__(self, "virtual_device_id", dev_id)
        object.__setattr__(self, "target", tgt)
        object.__setattr__(self, "memory_scope", str(memory_scope))

    @classmethod
    def make(
        cls, device_type: int, virtual_device_id: int, target: Target | None, memory_scope: str
    ) -> VirtualDevice:
        """A virtual device from its four fields (no checks against the target)."""
        vd = cls.__new__(cls)
        object.__setattr__(vd, "device_type_int", int(device_type))
        object.__setattr__(vd, "virtual_device_id", int(virtual_device_id))
        object.__setattr__(vd, "target", target)
        object.__setattr__(vd, "memory_scope", str(memory_scope))
        return vd

    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError("a VirtualDevice is a value: make a new one instead")

    @property
    def device_type(self) -> int:
        """The DLPack device-type code (TVM's ``VirtualDevice.device_type``), -1 when open."""
        return self.device_type_int

    @property
    def device_name(self) -> str:
        """The device type's name (``"cpu"``, ``"cuda"``...), ``""`` when open."""
        return _DEVICE_NAMES.get(self.device_type_int, "")

    @property
    def is_fully_unconstrained(self) -> bool:
        """No field is fixed."""
        return (
            self.device_type_int == -1
            and self.virtual_device_id == -1
            and self.target is None
            and not self.memory_scope
        )

    @property
    def is_fully_constrained(self) -> bool:
        """The id, target and memory scope are all fixed (the target fixes the type)."""
        return self.target is not None and self.virtual_device_id != -1 and bool(self.memory_scope)

    def __bool__(self) -> bool:
        return not self.is_fully_unconstrained

    def _key(self) -> tuple[Any, ...]:
        host = self.target.host if self.target is not None else None
        return (
            self.device_type_int,
            self.virtual_device_id,
            None if self.target is None else str(self.target),
            None if host is None else str(host),
            self.memory_scope,
        )

    def same_as(self, other: object) -> bool:
        return self is other

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VirtualDevice) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        if self.is_fully_unconstrained:
            return "VirtualDevice(?)"
        parts = []
        if self.device_type_int != -1:
            parts.append(f"device_type={self.device_type_int}")
        if self.virtual_device_id >= 0:
            parts.append(f"virtual_device_id={self.virtual_device_id}")
        if self.target is not None:
            parts.append(f"target={self.target!r}")
        if self.memory_scope:
            parts.append(f"memory_scope={self.memory_scope!r}")
        return f"VirtualDevice({', '.join(parts)})"

    __str__ = __repr__


#: The virtual device that fixes nothing.
FULLY_UNCONSTRAINED = VirtualDevice()


def _pick(a: Any, b: Any, unset: Any) -> tuple[Any, bool]:
    """The field both agree on (or the one fixed), and whether they agree."""
    if a == unset:
        return b, True
    return a, b == unset or a == b


def join_virtual_devices(lhs: VirtualDevice, rhs: VirtualDevice) -> VirtualDevice | None:
    """The virtual device fixing what either fixes, or None when a field disagrees."""
    if lhs == rhs:
        return lhs
    dev, ok1 = _pick(lhs.device_type_int, rhs.device_type_int, -1)
    vid, ok2 = _pick(lhs.virtual_device_id, rhs.virtual_device_id, -1)
    tgt, ok3 = _pick(lhs.target, rhs.target, None)
    if ok3 and lhs.target is not None and rhs.target is not None:
        ok3 = str(lhs.target.host) == str(rhs.target.host)
    scope, ok4 = _pick(lhs.memory_scope, rhs.memory_scope, "")
    if not (ok1 and ok2 and ok3 and ok4):
        return None
    return VirtualDevice.make(dev, vid, tgt, scope)


def default_virtual_device(lhs: VirtualDevice, rhs: VirtualDevice) -> VirtualDevice:
    """``lhs`` with each open field taken from ``rhs`` (a target only when it runs on
    the resulting device type)."""
    if lhs == rhs:
        return lhs
    dev = lhs.device_type_int if lhs.device_type_int != -1 else rhs.device_type_int
    vid = lhs.virtual_device_id if lhs.virtual_device_id != -1 else rhs.virtual_device_id
    tgt = lhs.target
    if tgt is None and rhs.target is not None and device_type_of_target(rhs.target) == dev:
        tgt = rhs.target
    scope = lhs.memory_scope or rhs.memory_scope
    return VirtualDevice.make(dev, vid, tgt, scope)
