"""The Relay virtual machine: bytecode, executables and the machine that runs them.

``relay.vm.compile(mod, target)`` (:mod:`relaykit.execution.vm`) turns every
global function of a module into a :class:`VMFunction`: a register machine
program of :data:`OPCODES` instructions. Registers hold tensors
(``numpy.ndarray``), :class:`ADT` objects (tuples and constructor values) and
:class:`VMClosure` values. Calls of Relay functions push a frame on the
machine's own frame stack, so recursion in the program never touches Python's
recursion limit.

Operator calls are *primitives*: an ``InvokePacked`` instruction names one of
the executable's primitive records, which the machine resolves once, when it
is created, into a :class:`Primitive`. Kinds are pluggable
(:func:`register_primitive_kind`): ``"extern"`` (a backend function of the
executable's library, called destination-passing) is resolved here; ``"op"``
(an operator's host kernel) is registered by :mod:`relaykit.execution.vm`, which
this layer may not import.

Storage is planned per function for static shapes: a function's *prologue*
(``AllocStorage`` / ``AllocTensor``) runs once per frame of the function and
gives every intermediate whose value never leaves the function a fixed buffer;
kernels are bound to those buffers (and re-bound only when their inputs change
identity), so a steady-state call of a static model allocates only its
outputs. Frames are pooled per function and machine.

An :class:`Executable` saves to bytes (``save()`` / ``Executable.load_exec``)
and into relaykit's single-file artifact format (``exe.mod.export_library``
/ ``runtime.load_module``); neither uses pickle, and loading validates every
instruction before anything runs.

The package's modules: :mod:`~relaykit.runtime.vm.bytecode` (opcodes, functions,
primitive records), :mod:`~relaykit.runtime.vm.typespec` (the type specs the machine
checks values against), :mod:`~relaykit.runtime.vm.primitives` (what ``InvokePacked``
calls), :mod:`~relaykit.runtime.vm.executable` (the executable module, its
serialisation and validation, the primitive kinds) and
:mod:`~relaykit.runtime.vm.machine` (the :class:`VirtualMachine`).

>>> import numpy as np
>>> obj = ADT(0, [np.zeros(2), np.ones(1)])
>>> len(obj), obj.tag
(2, 0)
"""

from relaykit.runtime.container import ADT
from relaykit.runtime.module import BenchmarkResult

from .bytecode import (
    ALLOC_ADT,
    ALLOC_CLOSURE,
    ALLOC_STORAGE,
    ALLOC_TENSOR,
    FATAL,
    GET_FIELD,
    GET_TAG,
    GOTO,
    IF,
    INVOKE_CLOSURE,
    INVOKE_FUNC,
    INVOKE_PACKED,
    LOAD_CONST,
    LOAD_CONSTI,
    MOVE,
    OPCODES,
    RESHAPE_TENSOR,
    RET,
    Instruction,
    PrimitiveRecord,
    VMFunction,
    format_instruction,
)
from .executable import (
    Executable,
    PrimitiveResolver,
    VMExecutableModule,
    register_primitive_kind,
    validate,
)
from .machine import VirtualMachine, VMClosure
from .primitives import ExternPrimitive, Primitive
from .typespec import check_shape, shape_checker, type_spec_str

__all__ = [
    "ADT",
    "VMClosure",
    "Instruction",
    "OPCODES",
    "VMFunction",
    "PrimitiveRecord",
    "Primitive",
    "ExternPrimitive",
    "PrimitiveResolver",
    "VMExecutableModule",
    "Executable",
    "VirtualMachine",
    "register_primitive_kind",
    "check_shape",
    "shape_checker",
    "type_spec_str",
    "format_instruction",
    "validate",
    "BenchmarkResult",
    "MOVE",
    "RET",
    "INVOKE_PACKED",
    "INVOKE_FUNC",
    "INVOKE_CLOSURE",
    "ALLOC_TENSOR",
    "ALLOC_STORAGE",
    "ALLOC_ADT",
    "ALLOC_CLOSURE",
    "GET_FIELD",
    "GET_TAG",
    "IF",
    "GOTO",
    "LOAD_CONST",
    "LOAD_CONSTI",
    "FATAL",
    "RESHAPE_TENSOR",
]
