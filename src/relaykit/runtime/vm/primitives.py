"""Primitives: what an ``InvokePacked`` instruction calls, once resolved.

The machine resolves each :class:`~relaykit.runtime.vm.bytecode.PrimitiveRecord` of an
executable into a :class:`Primitive` when it is created (see
:func:`~relaykit.runtime.vm.executable.register_primitive_kind`). ``"extern"`` records (a
backend function of the executable's library, called destination-passing) become
:class:`ExternPrimitive`; the execution layer registers the operator kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.errors import ExecutionError, FunctionNotFoundError
from relaykit.runtime.container import ADT
from relaykit.runtime.module import Module

from .bytecode import PrimitiveRecord
from .typespec import shape_checker, static_shape, type_spec_str

__all__ = ["Primitive", "ExternPrimitive"]


class Primitive:
    """A resolved ``InvokePacked`` target.

    ``call(inputs)`` returns the output value (a new array, or a tuple/list of them);
    ``bind(inputs, out)`` returns a no-argument callable computing into the fixed
    array ``out`` (used for planned storage), or ``None`` when it cannot.
    ``inputs`` are already regrouped: a tuple argument is a list of arrays.
    """

    def __init__(self, record: PrimitiveRecord) -> None:
        self.record = record
        self.name = record.name
        self.in_checks = [
            shape_checker(s, f"{self.describe()} argument {i}")
            for i, s in enumerate(record.in_types)
        ]

    def call(self, inputs: list[Any]) -> Any:
        raise NotImplementedError

    def bind(self, inputs: list[Any], out: np.ndarray) -> Callable[[], Any] | None:
        return None

    def bind_dynamic(
        self, inputs: list[Any], previous: Any
    ) -> tuple[np.ndarray, Callable[[], Any]] | None:
        """For an output of dynamic shape kept by the frame (``planned dynamic``): the
        output array for these inputs (``previous`` when it has the right shape and
        dtype, else a new one) and a callable computing into it; ``None`` when the
        primitive cannot say the output shape before running (``call`` is used)."""
        return None

    def describe(self) -> str:
        return f"{self.record.kind} {self.record.name}"

    def check_inputs(self, flat: list[Any]) -> None:
        """The argument values against the call's argument types (dynamic dimensions
        match any size): a mismatch names the operator and both shapes."""
        for v, check in zip(flat, self.in_checks, strict=False):
            check(v)


def _alloc_outputs(spec: Any, where: str) -> list[np.ndarray]:
    """Fresh arrays for a static output type spec (a tensor or a tuple of tensors)."""
    specs = spec["fields"] if isinstance(spec, dict) and spec.get("t") == "tuple" else [spec]
    outs = []
    for s in specs:
        shape = static_shape(s)
        if shape is None:
            raise ExecutionError(
                f"{where}: the output type {type_spec_str(s)} has dynamic dimensions and the "
                "backend function has no shape function; it cannot be allocated"
            )
        outs.append(np.empty(shape, s["dtype"]))
    return outs


def _flat_tensors(values: list[Any]) -> list[Any]:
    """The tensors of ``values``, tuples (lists or ADTs) flattened in order."""
    flat: list[Any] = []
    for v in values:
        if isinstance(v, ADT):
            flat.extend(_flat_tensors(list(v.fields)))
        elif isinstance(v, list):
            flat.extend(_flat_tensors(v))
        else:
            flat.append(v)
    return flat


class ExternPrimitive(Primitive):
    """A backend (BYOC) function of the executable's library, called
    destination-passing with flattened inputs and freshly allocated outputs."""

    def __init__(self, record: PrimitiveRecord, lib: Module | None) -> None:
        super().__init__(record)
        if lib is None or not lib.implements_function(record.name, query_imports=True):
            raise FunctionNotFoundError(
                f"the VM executable calls backend function {record.name!r}, but its library "
                "has no such function (was the library attached? load the whole artifact "
                "with runtime.load_module)"
            )
        self.lib = lib
        self.fn = lib.get_function(record.name, query_imports=True)
        self.tuple_out = isinstance(record.out_type, dict) and record.out_type.get("t") == "tuple"

    def call(self, inputs: list[Any]) -> Any:
        flat = _flat_tensors(inputs)
        outs = _alloc_outputs(self.record.out_type, f"backend function {self.name}")
        self.fn(*flat, *outs)
        return ADT(0, outs) if self.tuple_out else outs[0]  # a tuple as the VM's GetField reads

    def bind(self, inputs: list[Any], out: np.ndarray) -> Callable[[], Any] | None:
        if self.tuple_out:
            return None
        flat = _flat_tensors(inputs)
        return self.lib.bind_function(self.name, flat, [out])
