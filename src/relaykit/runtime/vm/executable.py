"""The VM executable: its runtime module, serialisation, validation and primitive kinds.

A :class:`VMExecutableModule` holds the functions, primitive records and constants of a
compiled program and imports the library of backend modules it calls; it saves to bytes
(``save_bytes``) and into relaykit's single-file artifact format (``save_blob``), neither
with pickle, and loading validates every instruction (:func:`validate`) before anything
runs. :class:`Executable` is TVM's ``runtime.vm.Executable`` around it.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from relaykit.errors import (
    ArtifactCorruptError,
    ExecutorUsageError,
    FunctionNotFoundError,
)
from relaykit.runtime.export import ModuleBlob
from relaykit.runtime.module import Module, register_module_loader
from relaykit.runtime.ndarray import NDArray

from .bytecode import (
    ALLOC_CLOSURE,
    ALLOC_STORAGE,
    ALLOC_TENSOR,
    GOTO,
    IF,
    INVOKE_FUNC,
    INVOKE_PACKED,
    LOAD_CONST,
    OPCODE_NAMES,
    OPCODES,
    REGISTER_OPERANDS,
    RESHAPE_TENSOR,
    Instruction,
    PrimitiveRecord,
    VMFunction,
    format_instruction,
)
from .primitives import ExternPrimitive, Primitive

__all__ = [
    "VMExecutableModule",
    "Executable",
    "PrimitiveResolver",
    "register_primitive_kind",
    "primitive_resolver",
    "validate",
]

# -- primitive kinds --------------------------------------------------------------------------

#: ``resolver(record, executable module, per-machine shared state) -> Primitive``
PrimitiveResolver = Callable[[PrimitiveRecord, "VMExecutableModule", dict[str, Any]], Primitive]
_PRIMITIVE_KINDS: dict[str, PrimitiveResolver] = {
    "extern": lambda rec, exe, shared: ExternPrimitive(rec, exe.lib),
}


def register_primitive_kind(kind: str, resolver: PrimitiveResolver) -> None:
    """Register how primitive records of ``kind`` become callables (the backend layer
    registers ``"op"``: an operator's host kernel)."""
    _PRIMITIVE_KINDS[kind] = resolver


def primitive_resolver(kind: str) -> PrimitiveResolver | None:
    """The resolver registered for primitive records of ``kind``, or None."""
    return _PRIMITIVE_KINDS.get(kind)


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
    if not ins or ins[0] not in REGISTER_OPERANDS:
        raise _bad(fn, pc, f"unknown opcode {ins[:1]}")
    op = ins[0]
    if len(ins) != len(OPCODES[OPCODE_NAMES[op]][1]) + 1:
        raise _bad(fn, pc, "wrong number of operands")
    if section == "prologue" and op not in (ALLOC_STORAGE, ALLOC_TENSOR, LOAD_CONST):
        raise _bad(fn, pc, "only alloc_storage, alloc_tensor and load_const may be in a prologue")
    singles, lists = REGISTER_OPERANDS[op]
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
