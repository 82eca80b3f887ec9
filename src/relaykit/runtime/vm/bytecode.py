"""VM bytecode: the opcodes, their text form, compiled functions and primitive records.

An instruction is a tuple ``(opcode, *operands)``; :data:`OPCODES` names each opcode's
operands. A :class:`VMFunction` holds a function's prologue and body; a
:class:`PrimitiveRecord` says what an ``InvokePacked`` instruction calls.

>>> format_instruction((INVOKE_PACKED, 3, [0, 1], 2, 0))
'invoke_packed PackedFunc[3] (in: $0, $1, out: $2)'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from relaykit.errors import ArtifactError

__all__ = [
    "OPCODES",
    "Instruction",
    "VMFunction",
    "PrimitiveRecord",
    "format_instruction",
    "OPCODE_NAMES",
    "REGISTER_OPERANDS",
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
#: Opcode number -> name.
OPCODE_NAMES = {code: name for name, (code, _) in OPCODES.items()}
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
REGISTER_OPERANDS: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {
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
