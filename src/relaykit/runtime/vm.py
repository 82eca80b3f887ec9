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

>>> obj = ADT(0, [np.zeros(2), np.ones(1)])
>>> len(obj), obj.tag
(2, 0)
"""

from __future__ import annotations

import io
import json
import math
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from relaykit.errors import (
    ArtifactCorruptError,
    ArtifactError,
    ExecutionError,
    ExecutorUsageError,
    FunctionNotFoundError,
)

from .module import BenchmarkResult, Module, ModuleBlob, PythonModule, register_module_loader
from .ndarray import Device, NDArray, cpu

__all__ = [
    "ADT",
    "VMClosure",
    "Instruction",
    "OPCODES",
    "VMFunction",
    "PrimitiveRecord",
    "Primitive",
    "ExternPrimitive",
    "VMExecutableModule",
    "Executable",
    "VirtualMachine",
    "register_primitive_kind",
    "check_shape",
    "type_spec_str",
    "BenchmarkResult",
]

# -- values ---------------------------------------------------------------------------------


class ADT:
    """A tuple or constructor value: a ``tag`` and fields (TVM's ``runtime.container.ADT``).

    Tuples have tag 0. Fields are NumPy arrays, ADTs or closures inside the
    machine; values handed to users are :class:`~relaykit.runtime.NDArray`.
    """

    __slots__ = ("fields", "tag")

    def __init__(self, tag: int, fields: Sequence[Any]) -> None:
        self.tag = int(tag)
        self.fields = list(fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, index: int) -> Any:
        return self.fields[index]

    def __iter__(self) -> Any:
        return iter(self.fields)

    def __repr__(self) -> str:
        return f"ADT(tag={self.tag}, {self.fields!r})"


class VMClosure:
    """A function value: the index of its (lifted) VM function and its captured values."""

    __slots__ = ("captured", "func_index")

    def __init__(self, func_index: int, captured: list[Any]) -> None:
        self.func_index = func_index
        self.captured = captured

    def __repr__(self) -> str:
        return f"<VMClosure of function {self.func_index}, {len(self.captured)} captured>"


# -- bytecode --------------------------------------------------------------------------------

#: Opcode numbers and their operand names (an instruction is ``(opcode, *operands)``).
OPCODES: dict[str, tuple[int, tuple[str, ...]]] = {
    "Move": (0, ("src", "dst")),
    "Ret": (1, ("result",)),
    "InvokePacked": (2, ("packed_index", "args", "dst", "planned")),
    "InvokeFunc": (3, ("func_index", "args", "dst")),
    "InvokeClosure": (4, ("closure", "args", "dst")),
    "AllocTensor": (5, ("storage", "offset", "shape", "dtype", "dst")),
    "AllocStorage": (6, ("nbytes", "alignment", "dtype_hint", "dst")),
    "AllocADT": (7, ("tag", "fields", "dst")),
    "AllocClosure": (8, ("func_index", "captured", "dst", "self_slot")),
    "GetField": (9, ("object", "index", "dst")),
    "GetTag": (10, ("object", "dst")),
    "If": (11, ("test", "target", "false_pc")),
    "Goto": (12, ("pc",)),
    "LoadConst": (13, ("const_index", "dst")),
    "LoadConsti": (14, ("value", "dst")),
    "Fatal": (15, ("message",)),
    "ReshapeTensor": (16, ("tensor", "shape", "dst")),
}
_NAMES = {code: name for name, (code, _) in OPCODES.items()}
(
    MOVE,
    RET,
    INVOKE_PACKED,
    INVOKE_FUNC,
    INVOKE_CLOSURE,
    ALLOC_TENSOR,
    ALLOC_STORAGE,
    ALLOC_ADT,
    ALLOC_CLOSURE,
    GET_FIELD,
    GET_TAG,
    IF,
    GOTO,
    LOAD_CONST,
    LOAD_CONSTI,
    FATAL,
    RESHAPE_TENSOR,
) = range(17)

#: Operand positions that hold register numbers (single registers, and lists of them).
_REG_OPERANDS = {
    MOVE: ((1, 2), ()),
    RET: ((1,), ()),
    INVOKE_PACKED: ((3,), (2,)),
    INVOKE_FUNC: ((3,), (2,)),
    INVOKE_CLOSURE: ((1, 3), (2,)),
    ALLOC_TENSOR: ((1, 5), ()),
    ALLOC_STORAGE: ((4,), ()),
    ALLOC_ADT: ((3,), (2,)),
    ALLOC_CLOSURE: ((3,), (2,)),
    GET_FIELD: ((1, 3), ()),
    GET_TAG: ((1, 2), ()),
    IF: ((1, 2), ()),
    GOTO: ((), ()),
    LOAD_CONST: ((2,), ()),
    LOAD_CONSTI: ((2,), ()),
    FATAL: ((), ()),
    RESHAPE_TENSOR: ((1, 3), ()),
}

Instruction = tuple[Any, ...]


def _regs(regs: Sequence[int]) -> str:
    return ", ".join(f"${r}" for r in regs)


_TEXT: dict[int, Callable[[Instruction], str]] = {
    MOVE: lambda i: f"move ${i[2]} ${i[1]}",
    RET: lambda i: f"ret ${i[1]}",
    INVOKE_PACKED: lambda i: (
        f"invoke_packed PackedFunc[{i[1]}] (in: {_regs(i[2])}, out: ${i[3]})"
        + ("" if i[4] in (0, 5, 6) else " planned dynamic" if i[4] in (2, 4) else " planned")
    ),
    INVOKE_FUNC: lambda i: f"invoke ${i[3]} VMFunc[{i[1]}]({_regs(i[2])})",
    INVOKE_CLOSURE: lambda i: f"invoke_closure ${i[3]} ${i[1]}({_regs(i[2])})",
    ALLOC_TENSOR: lambda i: f"alloc_tensor ${i[5]} ${i[1]} offset={i[2]} {i[3]} {i[4]}",
    ALLOC_STORAGE: lambda i: f"alloc_storage ${i[4]} {i[1]} {i[2]} {i[3]}",
    ALLOC_ADT: lambda i: f"alloc_data ${i[3]} tag({i[1]}) [{_regs(i[2])}]",
    ALLOC_CLOSURE: lambda i: f"alloc_closure ${i[3]} VMFunc[{i[1]}]({_regs(i[2])})",
    GET_FIELD: lambda i: f"get_field ${i[3]} ${i[1]}[{i[2]}]",
    GET_TAG: lambda i: f"get_tag ${i[2]} ${i[1]}",
    IF: lambda i: f"if ${i[1]} ${i[2]} else {i[3]}",
    GOTO: lambda i: f"goto {i[1]}",
    LOAD_CONST: lambda i: f"load_const ${i[2]} Const[{i[1]}]",
    LOAD_CONSTI: lambda i: f"load_consti ${i[2]} {i[1]}",
    FATAL: lambda i: f"fatal {i[1]!r}",
    RESHAPE_TENSOR: lambda i: (
        f"reshape_tensor ${i[3]} ${i[1]} {i[2] if type(i[2]) is list else f'${i[2]}'}"
    ),
}


def format_instruction(ins: Instruction) -> str:
    """One instruction in the text form of TVM's VM: ``invoke_packed PackedFunc[3]
    (in: $0, $1, out: $2)``, ``alloc_tensor $2 $1 offset=0 [2, 3] float32``..."""
    text = _TEXT.get(ins[0])
    return text(ins) if text is not None else f"op{ins[0]} {list(ins[1:])}"


@dataclass
class VMFunction:
    """One compiled function: parameters, register count, prologue and body."""

    name: str
    params: list[str]
    num_regs: int
    prologue: list[Instruction]
    code: list[Instruction]
    param_types: list[Any] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": self.params,
            "num_regs": self.num_regs,
            "prologue": [list(i) for i in self.prologue],
            "code": [list(i) for i in self.code],
            "param_types": self.param_types,
        }


@dataclass
class PrimitiveRecord:
    """What an ``InvokePacked`` calls: ``kind`` (``"op"``, ``"extern"``...), ``name`` (the
    operator or the backend symbol), JSON-able ``attrs``, how flat arguments regroup
    into the callee's inputs (``groups``: -1 one register, -2 an ADT register to
    unpack, n >= 0 the next n registers as one tuple), and the output type spec."""

    kind: str
    name: str
    attrs: dict[str, Any]
    groups: list[int]
    out_type: Any
    #: Type specs of the flat register arguments (checked when a kernel is bound).
    in_types: list[Any] = field(default_factory=list)
    #: In-memory payload of the compiler (e.g. the attributes object), not saved.
    live: Any = None

    def to_json(self) -> dict[str, Any]:
        if self.attrs is None:
            raise ArtifactError(
                f"the attributes of primitive {self.name} cannot be stored in a file"
            )
        return {
            "kind": self.kind,
            "name": self.name,
            "attrs": self.attrs,
            "groups": self.groups,
            "out_type": self.out_type,
            "in_types": self.in_types,
        }


# -- type specs (JSON): {"t": "tensor", "shape": [int | null], "dtype": str} ... ---------------


def type_spec_str(spec: Any) -> str:
    """A type spec as Relay prints the type (``?`` for a dynamic dimension)."""
    if not isinstance(spec, dict):
        return "?"
    if spec.get("t") == "tensor":
        dims = ", ".join("?" if d is None else str(d) for d in spec["shape"])
        return f"Tensor[({dims}), {spec['dtype']}]" if spec["shape"] else str(spec["dtype"])
    if spec.get("t") == "tuple":
        return "(" + ", ".join(type_spec_str(f) for f in spec["fields"]) + ")"
    return "?"


def _static_shape(spec: Any) -> tuple[int, ...] | None:
    if isinstance(spec, dict) and spec.get("t") == "tensor":
        shape = spec["shape"]
        if all(isinstance(d, int) for d in shape):
            return tuple(shape)
    return None


_DTYPE_NAMES: dict[Any, str] = {}


def _dtype_name(dtype: Any) -> str:
    """``dtype.name``, which NumPy computes in Python on every read: cached."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = dtype.name
    return name


def check_shape(value: Any, spec: Any, where: str) -> None:
    """A run-time value against a type spec; dynamic dimensions match any size.

    A mismatch is an :class:`ExecutionError` naming ``where`` and both shapes.
    """
    if not isinstance(spec, dict):
        return
    t = spec.get("t")
    if t == "tensor":
        shape = getattr(value, "shape", None)
        if shape is None:
            raise ExecutionError(
                f"{where}: expected a tensor {type_spec_str(spec)}, got {type(value).__name__}"
            )
        want = spec["shape"]
        dtype = getattr(value, "dtype", None)
        if dtype is not None and _dtype_name(dtype) != spec["dtype"]:
            raise ExecutionError(
                f"{where}: got a {_dtype_name(dtype)} tensor of shape {tuple(shape)}, "
                f"the type says {type_spec_str(spec)}"
            )
        if len(shape) != len(want) or any(
            w is not None and w != d for w, d in zip(want, shape, strict=False)
        ):
            raise ExecutionError(
                f"{where}: shape mismatch at run time: got {tuple(shape)}, the type says "
                f"{type_spec_str(spec)}"
            )
    elif t == "tuple":
        fields = value.fields if isinstance(value, ADT) else value
        if not isinstance(fields, (list, tuple)) or len(fields) != len(spec["fields"]):
            raise ExecutionError(
                f"{where}: expected a tuple {type_spec_str(spec)}, got {type(value).__name__}"
            )
        for i, (v, s) in enumerate(zip(fields, spec["fields"], strict=True)):
            check_shape(v, s, f"{where} field {i}")


def shape_checker(spec: Any, where: str) -> Callable[[Any], None]:
    """:func:`check_shape` for one spec, with a fast path for static tensor types."""
    static = _static_shape(spec)
    if static is None:
        if isinstance(spec, dict) and spec.get("t") == "tensor":
            return _dynamic_checker(spec, where)
        return lambda value: check_shape(value, spec, where)
    want_dtype = np.dtype(spec["dtype"])

    def check(value: Any) -> None:
        if (
            type(value) is not np.ndarray
            or value.shape != static
            or (value.dtype is not want_dtype and value.dtype != want_dtype)
        ):
            check_shape(value, spec, where)

    return check


def _dynamic_checker(spec: Any, where: str) -> Callable[[Any], None]:
    """:func:`check_shape` for a tensor type with dynamic dimensions (the fast path
    compares the rank, the dtype and the static dimensions)."""
    want_dtype = np.dtype(spec["dtype"])
    rank = len(spec["shape"])
    fixed = [(i, d) for i, d in enumerate(spec["shape"]) if d is not None]

    def check(value: Any) -> None:
        if (
            type(value) is not np.ndarray
            or value.ndim != rank
            or (value.dtype is not want_dtype and value.dtype != want_dtype)
        ):
            check_shape(value, spec, where)
            return
        shape = value.shape
        for i, d in fixed:
            if shape[i] != d:
                check_shape(value, spec, where)

    return check


# -- primitives ------------------------------------------------------------------------------


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
        shape = _static_shape(s)
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


#: ``resolver(record, executable module, per-machine shared state) -> Primitive``
PrimitiveResolver = Callable[[PrimitiveRecord, "VMExecutableModule", dict[str, Any]], Primitive]
_PRIMITIVE_KINDS: dict[str, PrimitiveResolver] = {
    "extern": lambda rec, exe, shared: ExternPrimitive(rec, exe.lib),
}


def register_primitive_kind(kind: str, resolver: PrimitiveResolver) -> None:
    """Register how primitive records of ``kind`` become callables (the backend layer
    registers ``"op"``: an operator's host kernel)."""
    _PRIMITIVE_KINDS[kind] = resolver


# -- the executable --------------------------------------------------------------------------

_MAGIC = b"RKVMEXE1"
#: Format 2: ``InvokePacked`` storage modes 2-6, ``alloc_storage``/``alloc_tensor`` in
#: function bodies, a ``-1`` or a shape register in ``reshape_tensor``. Format 1 still loads.
_FORMAT = 2
_READABLE_FORMATS = (1, 2)


class VMExecutableModule(Module):
    """The runtime module of a VM executable: functions, primitives, constants and the
    library of backend modules it imports."""

    type_key: ClassVar[str] = "relaykit_vm_executable"

    def __init__(
        self,
        functions: list[VMFunction],
        primitives: list[PrimitiveRecord],
        constants: list[np.ndarray],
        lib: Module | None = None,
    ) -> None:
        super().__init__()
        self.functions = functions
        self.primitives = primitives
        self.constants = constants
        self.func_index = {f.name: i for i, f in enumerate(functions)}
        self.late_bound: dict[int, tuple[str, Any]] = {}
        if lib is not None:
            self.imported_modules.append(lib)

    @property
    def lib(self) -> Module | None:
        return self.imported_modules[0] if self.imported_modules else None

    def function_names(self) -> list[str]:
        return ["load_late_bound_consts", "load_late_bound_consts_from_map"]

    def _own_function(self, name: str) -> Any:
        if name == "load_late_bound_consts":
            return self.load_late_bound_consts
        if name == "load_late_bound_consts_from_map":
            return self.load_late_bound_consts_from_map
        return None

    # -- text ---------------------------------------------------------------------------------
    @property
    def bytecode(self) -> str:
        lines = []
        for i, f in enumerate(self.functions):
            lines.append(f"VM Function[{i}]: {f.name}({', '.join(f.params)})")
            lines.append(f"# reg file size = {f.num_regs}")
            lines.append(f"# instruction count = {len(f.prologue) + len(f.code)}")
            for k, ins in enumerate(f.prologue):
                lines.append(f"prologue {k}: {format_instruction(ins)}")
            for k, ins in enumerate(f.code):
                lines.append(f"{k}: {format_instruction(ins)}")
            lines.append("")
        return "\n".join(lines)

    @property
    def constants_text(self) -> str:
        out = []
        for i, c in enumerate(self.constants):
            if c is None:
                out.append(f"VM Const[{i}]: late-bound (not loaded)")
                continue
            dims = ",".join(str(d) for d in c.shape)
            out.append(f"VM Const[{i}]: NDArray[({dims}),{c.dtype}] on device index 0")
        return "\n".join(out)

    # -- late-bound constants -------------------------------------------------------------------
    def get_late_bound_consts(self, byte_limit: int) -> dict[str, np.ndarray]:
        """Constants of at least ``byte_limit`` bytes, by name, removed from the executable
        (loaded back with :meth:`load_late_bound_consts_from_map`)."""
        out: dict[str, np.ndarray] = {}
        for i, c in enumerate(self.constants):
            if c is not None and c.nbytes >= byte_limit:
                name = f"const_{i}"
                out[name] = c
                self.late_bound[i] = (name, (c.shape, c.dtype.str))
                self.constants[i] = None  # type: ignore[call-overload]
        return out

    def move_late_bound_consts(self, path: str, byte_limit: int) -> None:
        """Write the constants of at least ``byte_limit`` bytes to ``path`` (an ``.npz``
        without pickle) and remove them from the executable."""
        consts = self.get_late_bound_consts(byte_limit)
        with open(path, "wb") as fh:
            np.savez(fh, **consts)  # type: ignore[arg-type]

    def load_late_bound_consts(self, path: str) -> None:
        with np.load(path, allow_pickle=False) as data:
            self.load_late_bound_consts_from_map({k: data[k] for k in data.files})

    def load_late_bound_consts_from_map(self, consts: Mapping[str, Any]) -> None:
        for i, (name, (shape, dtype)) in list(self.late_bound.items()):
            if name not in consts:
                raise ExecutorUsageError(f"late-bound constant {name} is missing from the map")
            arr = np.asarray(
                consts[name].numpy() if isinstance(consts[name], NDArray) else consts[name]
            )
            if arr.shape != tuple(shape) or arr.dtype.str != dtype:
                raise ExecutorUsageError(
                    f"late-bound constant {name} must be {dtype}{list(shape)}, got "
                    f"{arr.dtype.str}{list(arr.shape)}"
                )
            self.constants[i] = arr
            del self.late_bound[i]

    # -- serialisation --------------------------------------------------------------------------
    def header(self) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "functions": [f.to_json() for f in self.functions],
            "primitives": [p.to_json() for p in self.primitives],
            "num_constants": len(self.constants),
            "late_bound": {str(i): [n, [list(s), d]] for i, (n, (s, d)) in self.late_bound.items()},
        }

    def save_blob(self) -> ModuleBlob:
        arrays = {f"const_{i}": c for i, c in enumerate(self.constants) if c is not None}
        return ModuleBlob(
            self.type_key,
            meta={"format": _FORMAT},
            files={"bytecode.json": json.dumps(self.header()).encode()},
            arrays=arrays,
            provider="relaykit.execution.vm",
        )

    @staticmethod
    def load_blob(blob: ModuleBlob) -> VMExecutableModule:
        data = blob.files.get("bytecode.json")
        if data is None:
            raise ArtifactCorruptError("the VM executable has no bytecode.json")
        return _from_header(_parse_header(data), blob.arrays)

    def save_bytes(self) -> bytes:
        """The executable (without its library) as bytes: a JSON header and ``.npy``
        constants (no pickle)."""
        header = json.dumps(self.header()).encode()
        parts = [_MAGIC, struct.pack("<Q", len(header)), header]
        for c in self.constants:
            if c is None:
                parts.append(struct.pack("<Q", 0))
                continue
            buf = io.BytesIO()
            np.save(buf, c, allow_pickle=False)
            raw = buf.getvalue()
            parts.append(struct.pack("<Q", len(raw)))
            parts.append(raw)
        return b"".join(parts)

    @staticmethod
    def load_bytes(code: bytes) -> VMExecutableModule:
        code = bytes(code)
        if not code.startswith(_MAGIC) or len(code) < len(_MAGIC) + 8:
            raise ArtifactCorruptError("these bytes are not a relaykit VM executable")
        pos = len(_MAGIC)
        (n,) = struct.unpack_from("<Q", code, pos)
        pos += 8
        header = _parse_header(code[pos : pos + n])
        pos += n
        arrays: dict[str, np.ndarray] = {}
        for i in range(header["num_constants"]):
            if pos + 8 > len(code):
                raise ArtifactCorruptError("the VM executable's constants are truncated")
            (m,) = struct.unpack_from("<Q", code, pos)
            pos += 8
            if m:
                try:
                    arrays[f"const_{i}"] = np.load(
                        io.BytesIO(code[pos : pos + m]), allow_pickle=False
                    )
                except ValueError as err:
                    raise ArtifactCorruptError(f"VM constant {i} is corrupt: {err}") from None
            pos += m
        return _from_header(header, arrays)


def _parse_header(data: bytes) -> dict[str, Any]:
    try:
        header = json.loads(data)
    except (ValueError, UnicodeDecodeError) as err:
        raise ArtifactCorruptError(f"the VM bytecode is not valid JSON: {err}") from None
    if not isinstance(header, dict) or header.get("format") not in _READABLE_FORMATS:
        raise ArtifactCorruptError("the VM bytecode has an unknown format")
    return header


def _from_header(header: dict[str, Any], arrays: Mapping[str, np.ndarray]) -> VMExecutableModule:
    try:
        functions = [
            VMFunction(
                str(f["name"]),
                [str(p) for p in f["params"]],
                int(f["num_regs"]),
                [tuple(i) for i in f["prologue"]],
                [tuple(i) for i in f["code"]],
                list(f.get("param_types", [])),
            )
            for f in header["functions"]
        ]
        prims = [
            PrimitiveRecord(
                str(p["kind"]),
                str(p["name"]),
                dict(p["attrs"]),
                list(p["groups"]),
                p["out_type"],
                list(p.get("in_types", [])),
            )
            for p in header["primitives"]
        ]
        n = int(header["num_constants"])
        late = {
            int(k): (str(v[0]), (tuple(v[1][0]), str(v[1][1])))
            for k, v in header.get("late_bound", {}).items()
        }
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise ArtifactCorruptError(f"the VM bytecode is malformed: {err!r}") from None
    constants: list[Any] = []
    for i in range(n):
        arr = arrays.get(f"const_{i}")
        if arr is None and i not in late:
            raise ArtifactCorruptError(f"VM constant {i} is missing")
        constants.append(arr)
    exe = VMExecutableModule(functions, prims, constants)
    exe.late_bound = late
    validate(exe)
    return exe


def _bad(fn: VMFunction, pc: int, what: str) -> ArtifactCorruptError:
    return ArtifactCorruptError(f"VM function {fn.name}, instruction {pc}: {what}")


def validate(exe: VMExecutableModule) -> None:
    """Every instruction well-formed: known opcodes, registers, jump targets, function,
    primitive and constant indices in range. A loaded executable that fails is corrupt."""
    nf, np_, nc = len(exe.functions), len(exe.primitives), len(exe.constants)
    for p in exe.primitives:
        if p.kind not in _PRIMITIVE_KINDS and p.kind != "op":
            raise ArtifactCorruptError(f"VM primitive {p.name} has unknown kind {p.kind!r}")
    for fn in exe.functions:
        if fn.num_regs < len(fn.params) or fn.num_regs > 1 << 24:
            raise ArtifactCorruptError(f"VM function {fn.name} has a bad register count")
        for section, code in (("prologue", fn.prologue), ("body", fn.code)):
            for pc, ins in enumerate(code):
                _validate_instruction(exe, fn, pc, ins, len(code), (nf, np_, nc), section)


def _validate_instruction(
    exe: VMExecutableModule,
    fn: VMFunction,
    pc: int,
    ins: Instruction,
    ncode: int,
    counts: tuple[int, int, int],
    section: str,
) -> None:
    nf, np_, nc = counts
    if not ins or ins[0] not in _REG_OPERANDS:
        raise _bad(fn, pc, f"unknown opcode {ins[:1]}")
    op = ins[0]
    if len(ins) != len(OPCODES[_NAMES[op]][1]) + 1:
        raise _bad(fn, pc, "wrong number of operands")
    if section == "prologue" and op not in (ALLOC_STORAGE, ALLOC_TENSOR, LOAD_CONST):
        raise _bad(fn, pc, "only alloc_storage, alloc_tensor and load_const may be in a prologue")
    singles, lists = _REG_OPERANDS[op]
    regs = [ins[i] for i in singles] + [r for i in lists for r in ins[i]]
    if not all(type(r) is int and 0 <= r < fn.num_regs for r in regs):
        raise _bad(fn, pc, "register out of range")
    if op in (INVOKE_FUNC, ALLOC_CLOSURE) and not (type(ins[1]) is int and 0 <= ins[1] < nf):
        raise _bad(fn, pc, "function index out of range")
    if op == INVOKE_PACKED and not (
        type(ins[1]) is int and 0 <= ins[1] < np_ and ins[4] in (0, 1, 2, 3, 4, 5, 6)
    ):
        raise _bad(fn, pc, "primitive index out of range or bad storage mode")
    if op == LOAD_CONST and not (type(ins[1]) is int and 0 <= ins[1] < nc):
        raise _bad(fn, pc, "constant index out of range")
    if op == IF and not (type(ins[3]) is int and 0 <= ins[3] < ncode):
        raise _bad(fn, pc, "jump target out of range")
    if op == GOTO and not (type(ins[1]) is int and 0 <= ins[1] < ncode):
        raise _bad(fn, pc, "jump target out of range")
    if op == ALLOC_TENSOR:
        shape = ins[3]
        if not isinstance(shape, list) or not all(
            type(d) is int and 0 <= d < 1 << 40 for d in shape
        ):
            raise _bad(fn, pc, "bad tensor shape")
        try:
            np.dtype(ins[4])
        except TypeError:
            raise _bad(fn, pc, f"bad dtype {ins[4]!r}") from None
    if op == RESHAPE_TENSOR and not (
        (type(ins[2]) is int and 0 <= ins[2] < fn.num_regs)
        or (
            isinstance(ins[2], list)
            and all(type(d) is int and -1 <= d < 1 << 40 for d in ins[2])
            and ins[2].count(-1) <= 1
        )
    ):
        raise _bad(fn, pc, "bad tensor shape")
    if op == ALLOC_STORAGE and not (type(ins[1]) is int and 0 <= ins[1] < 1 << 40):
        raise _bad(fn, pc, "bad storage size")


register_module_loader(VMExecutableModule.type_key, VMExecutableModule.load_blob)


class Executable:
    """A compiled VM program (TVM's ``runtime.vm.Executable``): wraps the runtime module
    ``mod`` (what ``export_library`` writes and ``load_module`` returns)."""

    def __init__(self, mod: Module) -> None:
        if isinstance(mod, Executable):
            mod = mod.mod
        if not isinstance(mod, VMExecutableModule):
            raise ExecutorUsageError(
                f"Executable wraps a VM executable module, got {type(mod).__name__}: compile "
                "with relay.vm.compile, or load a file written by its export_library"
            )
        self.mod = mod

    @property
    def lib(self) -> Module | None:
        return self.mod.lib

    @property
    def bytecode(self) -> str:
        return self.mod.bytecode

    @property
    def constants(self) -> str:
        return self.mod.constants_text

    @property
    def virtual_devices(self) -> str:
        return "VirtualDevice[0]: device type 1, id 0 and mem_scope "

    @property
    def primitive_ops(self) -> list[str]:
        return [p.name for p in self.mod.primitives]

    @property
    def global_names(self) -> list[str]:
        return [f.name for f in self.mod.functions]

    @property
    def stats(self) -> str:
        m = self.mod
        n = sum(len(f.code) + len(f.prologue) for f in m.functions)
        return (
            f"Relay VM executable statistics:\n  Functions: {len(m.functions)}\n"
            f"  Instructions: {n}\n  Primitive ops: {len(m.primitives)}\n"
            f"  Constants: {len(m.constants)}"
        )

    def save(self) -> tuple[bytearray, Module]:
        """``(code, lib)``: the bytecode and constants as bytes, and the library."""
        lib = self.mod.lib
        if lib is None:
            lib = Module()
        return bytearray(self.mod.save_bytes()), lib

    @staticmethod
    def load_exec(bytecode: bytes | bytearray, lib: Module | None = None) -> Executable:
        """The inverse of :meth:`save`."""
        mod = VMExecutableModule.load_bytes(bytes(bytecode))
        if lib is not None and (lib.imported_modules or type(lib) is not Module):
            mod.imported_modules.append(lib)
        return Executable(mod)

    def export_library(self, path: str, **kwargs: Any) -> None:
        self.mod.export_library(path, **kwargs)

    def move_late_bound_consts(self, path: str, byte_limit: int = 256) -> None:
        self.mod.move_late_bound_consts(path, byte_limit)

    def get_late_bound_consts(self, byte_limit: int = 256) -> dict[str, np.ndarray]:
        return self.mod.get_late_bound_consts(byte_limit)

    def load_late_bound_consts(self, path: str) -> None:
        self.mod.load_late_bound_consts(path)

    def load_late_bound_consts_from_map(self, consts: Mapping[str, Any]) -> None:
        self.mod.load_late_bound_consts_from_map(consts)

    def get_function_arity(self, name: str) -> int:
        return len(self._function(name).params)

    def get_function_param_name(self, name: str, index: int) -> str:
        return self._function(name).params[index]

    def _function(self, name: str) -> VMFunction:
        i = self.mod.func_index.get(name)
        if i is None:
            raise FunctionNotFoundError(
                f"the VM executable has no function {name!r} (it has: "
                f"{', '.join(self.global_names)})"
            )
        return self.mod.functions[i]


# -- the machine -----------------------------------------------------------------------------


class _Frame:
    """One activation's registers and bound-kernel slots (pooled per function). The
    last slot counts the times an output of dynamic shape became another array (the
    kernels of ``planned`` mode 4 check their inputs again only then)."""

    __slots__ = ("regs", "slots")

    def __init__(self, regs: list[Any], ncode: int) -> None:
        self.regs = regs
        self.slots: list[Any] = [None] * ncode + [0]


def _to_runtime(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return NDArray(value)
    if isinstance(value, ADT):
        return ADT(value.tag, [_to_runtime(v) for v in value.fields])
    return value


def _from_user(value: Any, spec: Any, name: str) -> Any:
    """A user's input as a machine value: arrays (cast to the parameter's dtype as the
    interpreter does), tuples as ADTs."""
    tensor = isinstance(spec, dict) and spec.get("t") == "tensor"
    if tensor and type(value) is np.ndarray and _dtype_name(value.dtype) == spec["dtype"]:
        return value
    if isinstance(value, NDArray):
        value = value.numpy()
    if tensor and isinstance(value, (ADT, tuple, list)) and len(value) == 1:
        # TVM's VM makes a Python list a tuple object, and an operator given a tuple
        # object takes its fields: one tensor in a list stands for that tensor.
        (only,) = value.fields if isinstance(value, ADT) else value
        if isinstance(only, (np.ndarray, NDArray)):
            return _from_user(only, spec, name)
    if isinstance(value, (ADT, tuple, list)) and not tensor:
        fields = value.fields if isinstance(value, ADT) else list(value)
        sub = (
            spec["fields"]
            if isinstance(spec, dict) and spec.get("t") == "tuple"
            else [None] * len(fields)
        )
        if len(sub) != len(fields):
            raise ExecutorUsageError(
                f"input {name!r} expects a tuple of {len(sub)} fields, got {len(fields)}"
            )
        tag = value.tag if isinstance(value, ADT) else 0
        return ADT(
            tag,
            [
                _from_user(v, s, f"{name}.{i}")
                for i, (v, s) in enumerate(zip(fields, sub, strict=True))
            ],
        )
    if isinstance(value, VMClosure):
        return value
    arr = np.asarray(value)
    if tensor and _dtype_name(arr.dtype) != spec["dtype"]:
        if not isinstance(value, np.ndarray) or np.can_cast(arr.dtype, spec["dtype"], "same_kind"):
            arr = arr.astype(spec["dtype"])
        else:
            raise ExecutorUsageError(
                f"input {name!r} expects {type_spec_str(spec)}, got an array of dtype {arr.dtype}"
            )
        # Shapes are not checked here (TVM's VM does not either): each operator checks
        # the shapes it receives against its call's types.
    return arr


class VirtualMachine:
    """Runs an :class:`Executable` (TVM's ``runtime.vm.VirtualMachine``).

    ``vm.invoke("main", *args)`` (or ``vm["main"](...)``, ``vm.run(...)``) returns an
    :class:`~relaykit.runtime.NDArray` or an :class:`ADT`. A machine keeps pooled frames
    and bound kernels; use one machine per thread.
    """

    def __init__(
        self, exe: Any, device: Device | Sequence[Device] | None = None, memory_cfg: Any = None
    ):
        if isinstance(exe, VMExecutableModule):
            exe = Executable(exe)
        if not isinstance(exe, Executable):
            raise ExecutorUsageError(
                f"VirtualMachine runs a VM Executable, got {type(exe).__name__}"
            )
        if any(c is None for c in exe.mod.constants):
            raise ExecutorUsageError(
                "the executable's late-bound constants are not loaded: call "
                "load_late_bound_consts(path) or load_late_bound_consts_from_map(...) first"
            )
        self.exe = exe
        self.module = exe.mod
        devices = list(device) if isinstance(device, (list, tuple)) else [device or cpu()]
        self.device = devices[0] or cpu()
        self.functions = self.module.functions
        self.constants = self.module.constants
        self.shared: dict[str, Any] = {}
        self.prims: list[Primitive] = [self._resolve(r) for r in self.module.primitives]
        self.pools: list[list[_Frame]] = [[] for _ in self.functions]
        self._inputs: dict[str, list[Any]] = {}
        self._outputs: Any = None
        #: The machine as a runtime module (``invoke``, ``set_input``, ``get_output``...).
        self.vm_module = PythonModule(
            "vm",
            {
                "invoke": self.invoke,
                "set_input": self.set_input,
                "get_output": self.get_output,
                "get_num_outputs": self.get_num_outputs,
                "get_input_index": self.get_input_index,
                "invoke_stateful": self.invoke_stateful,
            },
        )

    def _resolve(self, rec: PrimitiveRecord) -> Primitive:
        resolver = _PRIMITIVE_KINDS.get(rec.kind)
        if resolver is None:
            raise ExecutionError(
                f"the VM executable calls a primitive of kind {rec.kind!r} ({rec.name}), which "
                "no loaded layer provides: import relaykit (relaykit.execution.vm registers 'op')"
            )
        return resolver(rec, self.module, self.shared)

    # -- TVM's interface -------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Callable[..., Any]:
        self._index(name)
        return lambda *args, **kwargs: self.invoke(name, *args, **kwargs)

    def _index(self, name: str) -> int:
        i = self.module.func_index.get(name)
        if i is None:
            raise FunctionNotFoundError(
                f"the VM executable has no function {name!r} (it has: "
                f"{', '.join(f.name for f in self.functions)})"
            )
        return i

    def get_input_index(self, input_name: str, func_name: str = "main") -> int:
        params = self.functions[self._index(func_name)].params
        return params.index(input_name) if input_name in params else -1

    def _arguments(
        self, func_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> list[Any]:
        fn = self.functions[self._index(func_name)]
        if len(args) > len(fn.params):
            raise ExecutorUsageError(
                f"{func_name} takes {len(fn.params)} inputs ({', '.join(fn.params)}), "
                f"got {len(args)}"
            )
        values: list[Any] = list(args) + [None] * (len(fn.params) - len(args))
        for k, v in kwargs.items():
            if k not in fn.params:
                continue  # as TVM's VM: keywords may be a superset (e.g. parameters bound since)
            values[fn.params.index(k)] = v
        return values

    def set_input(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        """Inputs of ``func_name`` for a later ``invoke(func_name)`` / ``run()``."""
        self._inputs[func_name] = self._arguments(func_name, args, kwargs)

    def set_one_input(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        fn = self.functions[self._index(func_name)]
        current = self._inputs.setdefault(func_name, [None] * len(fn.params))
        if args:
            if len(args) != 2:
                raise ExecutorUsageError("set_one_input takes (func_name, index or name, value)")
            key, value = args
            index = key if isinstance(key, int) else self.get_input_index(key, func_name)
            if not 0 <= index < len(fn.params):
                raise ExecutorUsageError(f"{func_name} has no input {key!r}")
            current[index] = value
        for k, v in kwargs.items():
            index = self.get_input_index(k, func_name)
            if index < 0:
                raise ExecutorUsageError(f"{func_name} has no input {k!r}")
            current[index] = v

    def invoke(self, func_name: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``func_name`` on the inputs (or on those given to ``set_input``)."""
        if args or kwargs:
            values = self._arguments(func_name, args, kwargs)
        else:
            values = self._inputs.get(func_name, [])
            fn = self.functions[self._index(func_name)]
            if len(values) != len(fn.params):
                values = [None] * len(fn.params)
        index = self._index(func_name)
        fn = self.functions[index]
        missing = [p for p, v in zip(fn.params, values, strict=False) if v is None]
        if missing:
            raise ExecutorUsageError(
                f"missing inputs of {func_name}: {', '.join(missing)} (pass them to invoke or "
                "set_input)"
            )
        types = fn.param_types or [None] * len(fn.params)
        machine_args = [
            _from_user(v, t, p) for v, t, p in zip(values, types, fn.params, strict=False)
        ]
        return _to_runtime(self.execute(index, machine_args))

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self.invoke("main", *args, **kwargs)

    def invoke_stateful(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        """Run and keep the result for :meth:`get_outputs`."""
        self._outputs = self.invoke(func_name, *args, **kwargs)

    def get_outputs(self) -> list[Any]:
        out = self._outputs
        if out is None:
            raise ExecutorUsageError("no outputs yet: call invoke_stateful first")
        return list(out.fields) if isinstance(out, ADT) else [out]

    def get_num_outputs(self) -> int:
        return len(self.get_outputs())

    def get_output(self, index: int) -> Any:
        return self.get_outputs()[index]

    def invoke_with_outputs(
        self, func_name: str, input_args: Mapping[str, Any], output_args: Sequence[Any]
    ) -> None:
        """Run with named inputs and copy the outputs into ``output_args``."""
        result = self.invoke(func_name, **dict(input_args))
        outs = list(result.fields) if isinstance(result, ADT) else [result]
        if len(outs) != len(output_args):
            raise ExecutorUsageError(
                f"{func_name} has {len(outs)} outputs, {len(output_args)} output arrays given"
            )
        for dst, src in zip(output_args, outs, strict=True):
            if isinstance(dst, NDArray):
                dst.copyfrom(src)
            else:
                np.copyto(dst, src.numpy())

    def benchmark(
        self,
        device: Any = None,
        *args: Any,
        func_name: str = "main",
        repeat: int = 5,
        number: int = 5,
        min_repeat_ms: Any = None,
        end_to_end: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Mean, median, min, max and std of ``repeat`` timings of ``number`` runs (s),
        through the machine module's ``time_evaluator`` as in TVM."""
        if args or kwargs:
            self.set_input(func_name, *args, **kwargs)
        evaluator = self.vm_module.time_evaluator(
            "invoke", device, repeat=repeat, number=number, min_repeat_ms=min_repeat_ms or 0
        )
        return evaluator(func_name)

    # -- the loop --------------------------------------------------------------------------------
    def _new_frame(self, findex: int) -> _Frame:
        fn = self.functions[findex]
        regs: list[Any] = [None] * fn.num_regs
        for ins in fn.prologue:
            op = ins[0]
            if op == LOAD_CONST:
                regs[ins[2]] = self.constants[ins[1]]
            elif op == ALLOC_STORAGE:
                regs[ins[4]] = np.empty(ins[1], np.uint8)
            else:  # ALLOC_TENSOR
                regs[ins[5]] = _tensor_in(regs[ins[1]], ins[2], ins[3], ins[4])
        return _Frame(regs, len(fn.code))

    def execute(self, findex: int, args: list[Any]) -> Any:  # noqa: C901, PLR0912, PLR0915
        """Run function ``findex`` on machine values; its machine result."""
        functions = self.functions
        pools = self.pools
        prims = self.prims
        consts = self.constants
        stack: list[tuple[Any, ...]] = []
        fidx = findex
        pool = pools[fidx]
        frame = pool.pop() if pool else self._new_frame(fidx)
        regs = frame.regs
        regs[: len(args)] = args
        code = functions[fidx].code
        slots = frame.slots
        pc = 0
        while True:
            ins = code[pc]
            op = ins[0]
            if op == INVOKE_PACKED and ins[4] == 4:
                # Dynamic shape, inputs are frame-owned arrays: checked again only when
                # one of them may have become another array.
                slot = slots[pc]
                if slot is None or slot[0] != slots[-1]:
                    prim = prims[ins[1]]
                    vals = [regs[r] for r in ins[2]]
                    if prim.record.groups:
                        vals = _regroup(vals, prim.record.groups)
                    key = tuple(map(id, vals))
                    if slot is None or slot[2] != key:
                        prim.check_inputs([regs[r] for r in ins[2]])
                        bound = prim.bind_dynamic(vals, regs[ins[3]])
                        if bound is None:
                            slots[-1] += 1
                            slots[pc] = None
                            regs[ins[3]] = prim.call(vals)
                            pc += 1
                            continue
                        if bound[0] is not regs[ins[3]]:
                            slots[-1] += 1
                        regs[ins[3]] = bound[0]
                        slot = (0, bound[1], key, vals)
                    slot = slots[pc] = (slots[-1], slot[1], key, slot[3])
                slot[1]()
                pc += 1
            elif op == INVOKE_PACKED and ins[4] == 3:
                # Planned, inputs fixed for the frame: the kernel bound once.
                run = slots[pc]
                if run is None:
                    prim = prims[ins[1]]
                    vals = [regs[r] for r in ins[2]]
                    prim.check_inputs(vals)
                    if prim.record.groups:
                        vals = _regroup(vals, prim.record.groups)
                    run = slots[pc] = prim.bind(vals, regs[ins[3]])
                    if run is None:
                        raise ExecutionError(f"{prim.describe()} cannot run into planned storage")
                run()
                pc += 1
            elif op == INVOKE_PACKED:
                prim = prims[ins[1]]
                groups = prim.record.groups
                vals = [regs[r] for r in ins[2]]
                if groups:
                    vals = _regroup(vals, groups)
                if ins[4] == 1:
                    slot = slots[pc]
                    key = tuple(map(id, vals))
                    if slot is None or slot[0] != key:
                        prim.check_inputs([regs[r] for r in ins[2]])
                        run = prim.bind(vals, regs[ins[3]])
                        if run is None:
                            raise ExecutionError(
                                f"{prim.describe()} cannot run into planned storage"
                            )
                        slot = slots[pc] = (key, run, vals)
                    slot[1]()
                elif ins[4] == 2:
                    # Dynamic shape, frame-owned output: bound again only when an input
                    # is another array (the arrays of one shape are reused run to run).
                    slot = slots[pc]
                    key = tuple(map(id, vals))
                    if slot is None or slot[0] != key:
                        prim.check_inputs([regs[r] for r in ins[2]])
                        bound = prim.bind_dynamic(vals, regs[ins[3]])
                        slots[-1] += 1 if bound is None or bound[0] is not regs[ins[3]] else 0
                        if bound is None:
                            regs[ins[3]] = prim.call(vals)
                            pc += 1
                            continue
                        regs[ins[3]] = bound[0]
                        slot = slots[pc] = (key, bound[1], vals)
                    slot[1]()
                elif ins[4] == 6:
                    # Dynamic shape, a new output each run: sized by the shape function.
                    prim.check_inputs([regs[r] for r in ins[2]])
                    bound = prim.bind_dynamic(vals, None)
                    if bound is None:
                        regs[ins[3]] = prim.call(vals)
                    else:
                        bound[1]()
                        regs[ins[3]] = bound[0]
                elif ins[4] == 5:
                    # A fresh output (allocated just before): the host kernel bound to it.
                    prim.check_inputs([regs[r] for r in ins[2]])
                    run = prim.bind(vals, regs[ins[3]])
                    if run is None:
                        regs[ins[3]] = prim.call(vals)
                    else:
                        run()
                else:
                    regs[ins[3]] = prim.call(vals)
                pc += 1
            elif op == ALLOC_STORAGE:
                regs[ins[4]] = np.empty(ins[1], np.uint8)
                pc += 1
            elif op == ALLOC_TENSOR:
                regs[ins[5]] = _tensor_in(regs[ins[1]], ins[2], ins[3], ins[4])
                pc += 1
            elif op == MOVE:
                regs[ins[2]] = regs[ins[1]]
                pc += 1
            elif op == LOAD_CONST:
                regs[ins[2]] = consts[ins[1]]
                pc += 1
            elif op in (INVOKE_FUNC, INVOKE_CLOSURE):
                if op == INVOKE_FUNC:
                    callee = ins[1]
                    call_args = [regs[r] for r in ins[2]]
                else:
                    clo = regs[ins[1]]
                    if type(clo) is not VMClosure:
                        raise ExecutionError(f"cannot call a {type(clo).__name__} value")
                    callee = clo.func_index
                    call_args = [*clo.captured, *(regs[r] for r in ins[2])]
                stack.append((fidx, frame, code, pc, ins[3]))
                if len(stack) > 10_000_000:
                    raise ExecutionError("the VM's frame stack overflowed (unbounded recursion?)")
                fidx = callee
                pool = pools[fidx]
                frame = pool.pop() if pool else self._new_frame(fidx)
                regs = frame.regs
                regs[: len(call_args)] = call_args
                code = functions[fidx].code
                slots = frame.slots
                pc = 0
            elif op == RET:
                result = regs[ins[1]]
                pools[fidx].append(frame)
                if not stack:
                    return result
                fidx, frame, code, pc, dst = stack.pop()
                regs = frame.regs
                slots = frame.slots
                regs[dst] = result
                pc += 1
            elif op == IF:
                pc = pc + 1 if _truth(regs[ins[1]]) == _truth(regs[ins[2]]) else ins[3]
            elif op == GOTO:
                pc = ins[1]
            elif op == ALLOC_ADT:
                regs[ins[3]] = ADT(ins[1], [regs[r] for r in ins[2]])
                pc += 1
            elif op == GET_FIELD:
                obj = regs[ins[1]]
                if type(obj) is not ADT:
                    raise ExecutionError(f"GetField of a {type(obj).__name__} value")
                regs[ins[3]] = obj.fields[ins[2]]
                pc += 1
            elif op == GET_TAG:
                regs[ins[2]] = regs[ins[1]].tag
                pc += 1
            elif op == LOAD_CONSTI:
                regs[ins[2]] = ins[1]
                pc += 1
            elif op == ALLOC_CLOSURE:
                captured = [regs[r] for r in ins[2]]
                clo = VMClosure(ins[1], captured)
                if ins[4] >= 0:
                    captured[ins[4]] = clo
                regs[ins[3]] = clo
                pc += 1
            elif op == RESHAPE_TENSOR:
                # The same source array gives the same view object (kernels bound to it
                # stay bound).
                src = regs[ins[1]]
                shape = ins[2]
                if type(shape) is not list:  # a register: the shape computed at run time
                    regs[ins[3]] = _reshape(src, [int(d) for d in regs[shape].reshape(-1)])
                    pc += 1
                    continue
                slot = slots[pc]
                if slot is None or slot[0] is not src:
                    slot = slots[pc] = (src, _reshape(src, shape))
                regs[ins[3]] = slot[1]
                pc += 1
            elif op == FATAL:
                raise ExecutionError(ins[1])
            else:
                raise ExecutionError(f"unknown VM instruction {format_instruction(ins)}")


_DTYPES: dict[str, np.dtype[Any]] = {}


def _tensor_in(storage: np.ndarray, offset: int, shape: list[int], dtype: str) -> np.ndarray:
    """``alloc_tensor``: a tensor of ``shape`` and ``dtype`` at ``offset`` of ``storage``."""
    dt = _DTYPES.get(dtype)
    if dt is None:
        dt = _DTYPES[dtype] = np.dtype(dtype)
    n = math.prod(shape) * dt.itemsize
    if offset + n > storage.nbytes:
        raise ExecutionError(
            f"alloc_tensor: {tuple(shape)} {dtype} at offset {offset} does not fit in a "
            f"storage of {storage.nbytes} bytes"
        )
    return storage[offset : offset + n].view(dt).reshape(shape)


def _reshape(value: Any, shape: list[int]) -> np.ndarray:
    try:
        return value.reshape(shape)
    except (AttributeError, ValueError) as err:
        raise ExecutionError(
            f"reshape_tensor: cannot view {getattr(value, 'shape', type(value).__name__)} as "
            f"{tuple(shape)}: {err}"
        ) from None


def _truth(v: Any) -> Any:
    if type(v) is np.ndarray or isinstance(v, np.generic):
        return bool(v)
    return v


def _regroup(vals: list[Any], groups: list[int]) -> list[Any]:
    out: list[Any] = []
    i = 0
    for g in groups:
        if g == -1:
            out.append(vals[i])
            i += 1
        elif g == -2:
            v = vals[i]
            out.append(list(v.fields) if isinstance(v, ADT) else v)
            i += 1
        else:
            out.append(vals[i : i + g])
            i += g
    return out
