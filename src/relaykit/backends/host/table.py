"""The host kernel table (operator name -> binder), the scratch allocator, and
:func:`bind_kernel`, which falls back to an operator's reference kernel.

A *binder* takes an operator's attributes, its input arrays (a list for a tuple
argument), its output arrays and a :class:`Scratch` allocator, and returns a
no-argument callable that computes the outputs in place, or ``None`` when it does
not handle that case. The kernels themselves are in :mod:`.elementwise`,
:mod:`.linalg`, :mod:`.convolution` and :mod:`.reduction`; :mod:`.kernels` loads them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.errors import ExecutionError
from relaykit.ir.attrs import Attrs
from relaykit.ir.op import default_registry
from relaykit.registry import Registry

__all__ = [
    "Binder",
    "KernelRegistry",
    "Run",
    "Scratch",
    "bind_kernel",
    "float_same",
    "has_host_kernel",
    "host_kernel_names",
    "kernel_registry",
    "register_host_kernel",
    "sequence",
]

Run = Callable[[], Any]
Binder = Callable[[Attrs, list[Any], list[np.ndarray], "Scratch"], Run | None]
_ALIGN = 64


class Scratch:
    """Scratch memory shared by all steps (each step may use it all).

    Binding runs twice: once with ``Scratch(None)``, which hands out throwaway
    arrays and measures the largest request of any step, then with the real
    arena of that size.
    """

    def __init__(self, arena: np.ndarray | None) -> None:
        self.arena = arena
        self.offset = 0
        self.peak = 0

    def reset(self) -> None:
        """Start a new step: its requests may reuse everything."""
        self.offset = 0

    def take(self, shape: Sequence[int], dtype: Any) -> np.ndarray:
        dt = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        start = -(-self.offset // _ALIGN) * _ALIGN
        self.offset = start + nbytes
        self.peak = max(self.peak, self.offset)
        if self.arena is None:
            return np.empty(tuple(shape), dt)
        return self.arena[start : start + nbytes].view(dt).reshape(tuple(shape))


class KernelRegistry(Registry[str, Binder]):
    """The host kernel table: operator name -> binder. A :class:`~relaykit.registry.Registry`
    (snapshot, restore, scoped); item assignment replaces a binder, as
    ``register(..., override=True)`` does, so ``monkeypatch.setitem`` works on it."""

    def __setitem__(self, op_name: str, binder: Binder) -> None:
        self.register(op_name, binder, override=True)

    def __delitem__(self, op_name: str) -> None:
        self.unregister(op_name)


#: The dedicated host kernels, by operator name.
kernel_registry = KernelRegistry("host kernel")


def register_host_kernel(*op_names: str) -> Callable[[Binder], Binder]:
    """Register a binder for operators ``op_names`` (later registrations win)."""

    def _register(fn: Binder) -> Binder:
        for name in op_names:
            kernel_registry.register(name, fn, override=True)
        return fn

    return _register


def host_kernel_names() -> list[str]:
    """Operators with a dedicated (in-place) host kernel."""
    return sorted(kernel_registry)


def has_host_kernel(op_name: str) -> bool:
    """Whether the graph executor can run ``op_name`` (a dedicated or a reference kernel)."""
    return op_name in kernel_registry or default_registry.get_attr(op_name, "FCompute") is not None


def bind_kernel(
    op_name: str, attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run:
    """The bound kernel of one operator call (dedicated binder, else the reference kernel)."""
    binder = kernel_registry.get(op_name)
    if binder is not None:
        run = binder(attrs, args, outs, scratch)
        if run is not None:
            return run
    kernel = default_registry.get_attr(op_name, "FCompute")
    if kernel is None:
        raise ExecutionError(f"operator {op_name} has no kernel")
    return _fallback(kernel, attrs, args, outs)


def _fallback(kernel: Any, attrs: Attrs, args: list[Any], outs: list[np.ndarray]) -> Run:
    ins = [tuple(a) if isinstance(a, list) else a for a in args]

    if len(outs) == 1:
        out = outs[0]

        def run_one() -> None:
            r = kernel(ins, attrs)
            if isinstance(r, (tuple, list)):  # a tuple of one tensor (split into 1 section)
                flat = _flatten(r)
                r = flat[0] if len(flat) == 1 else r
            if not isinstance(r, np.ndarray) or r.shape != out.shape:
                raise ExecutionError(
                    f"kernel returned {getattr(r, 'shape', type(r).__name__)}, "
                    f"expected shape {out.shape}"
                )
            np.copyto(out, r)

        return run_one

    def run_many() -> None:
        r = _flatten(kernel(ins, attrs))
        if len(r) != len(outs):
            raise ExecutionError(f"kernel returned {len(r)} values, expected {len(outs)}")
        for o, v in zip(outs, r, strict=True):
            np.copyto(o, v)

    return run_many


def _flatten(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flatten(v)]
    return [np.asarray(value)]


def sequence(steps: list[Run]) -> Run:
    """One callable running ``steps`` in order."""

    def run() -> None:
        for step in steps:
            step()

    return run


def float_same(*arrays: np.ndarray) -> bool:
    """Whether all arrays share one float dtype of at least 32 bits."""
    dt = arrays[0].dtype
    return dt.kind == "f" and dt.itemsize >= 4 and all(a.dtype == dt for a in arrays)
