"""``tvm.ir.save_json``: an IR value as a JSON node graph, in TVM's layout.

The document is ``{"root": i, "nodes": [...], "b64ndarrays": [...], "attrs":
{"tvm_version": ...}}``. ``nodes[0]`` is the null node; every other node has a
``type_key`` and, by kind, ``attrs`` (field name -> string: a node index for an
object, the value's text for a number or a dtype), ``data`` (the node indices
of an ``Array``, or keys and values of a ``Map``), ``keys`` (a ``StrMap``'s
keys), ``repr_str`` (a ``runtime.String``) or ``global_key`` (an ``Op``'s name).
Constants' tensors are TVM's binary NDArray records, base64-encoded, in
``b64ndarrays``. Shared nodes are written once, so sharing survives the round
trip; :func:`relaykit.ir.json_load.load_json` reads it back (and the layouts of
TVM 0.6 to 0.19 for the Relay nodes).

>>> from relaykit.ir import TensorType, Var, load_json
>>> x = Var("x", TensorType((2,), "float32"))
>>> back = load_json(save_json(x + x))
>>> back.op.name, back.args[0] is back.args[1], str(back.args[0].type_annotation)
('add', True, 'Tensor[(2), float32]')
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError

from . import adt
from .attrs import Attrs
from .env_func import EnvFunc
from .expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Span,
    Tuple,
    TupleGetItem,
    Var,
)
from .module import IRModule
from .op import Op
from .ref import RefCreate, RefRead, RefWrite
from .symbolic import Any as AnyDim
from .symbolic import SizeVar
from .symbolic import Var as SymVar
from .types import (
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeRelation,
    TypeVar,
)

__all__ = ["save_json", "ndarray_to_bytes"]

#: the version written in the document's attributes (TVM's, whose layout this is)
JSON_VERSION = "0.19.0"
_NDARRAY_MAGIC = 0xDD5E40F096B4A13F
_DTYPE_CODES = {"i": 0, "u": 1, "f": 2, "b": 1}


def ndarray_to_bytes(arr: np.ndarray) -> bytes:
    """``arr`` as TVM's binary NDArray record (magic, device, shape, dtype, bytes)."""
    arr = np.array(arr, order="C", copy=True)
    kind = arr.dtype.kind
    if kind not in _DTYPE_CODES:
        raise ArgumentError(f"save_json cannot write a constant of dtype {arr.dtype}")
    bits = 1 if kind == "b" else arr.dtype.itemsize * 8
    head = struct.pack("<QQiii", _NDARRAY_MAGIC, 0, 1, 0, arr.ndim)
    head += struct.pack("<BBH", _DTYPE_CODES[kind], bits, 1)
    head += struct.pack(f"<{arr.ndim}q", *arr.shape)
    data = arr.astype(np.uint8).tobytes() if kind == "b" else arr.tobytes()
    return head + struct.pack("<q", len(data)) + data


def _expr_fields(node: Any) -> dict[str, Any]:
    """An expression's fields as TVM names them; its span last."""
    t = type(node)
    if t is Var:
        out: dict[str, Any] = {"vid": _Id(node.name_hint), "type_annotation": node.type_annotation}
    elif t is Call:
        keep = len(node.attrs) or node.attrs.type_key != "DictAttrs"
        out = {
            "op": node.op,
            "args": list(node.args),
            "attrs": node.attrs if keep else None,
            "type_args": list(node.type_args),
        }
    elif t is Function:
        out = {
            "params": list(node.params),
            "body": node.body,
            "ret_type": node.ret_type,
            "type_params": list(node.type_params),
            "attrs": node.attrs if len(node.attrs) else None,
        }
    elif t is adt.Constructor:
        out = {
            "name_hint": node.name_hint,
            "inputs": list(node.inputs),
            "belong_to": node.belong_to,
        }
        out["tag"] = node.tag
    elif t is adt.Match:
        out = {"data": node.data, "clauses": list(node.clauses), "complete": int(node.complete)}
    else:  # the field declaration is TVM's layout
        out = {f: _as_field(getattr(node, f)) for f in t._fields}
    if t is not adt.Clause:
        out["span"] = node.span
    return out


def _as_field(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _pattern_fields(node: Any) -> dict[str, Any]:
    if isinstance(node, adt.PatternVar):
        return {"var": node.var}
    if isinstance(node, adt.PatternConstructor):
        return {"constructor": node.constructor, "patterns": list(node.patterns)}
    if isinstance(node, adt.PatternTuple):
        return {"patterns": list(node.patterns)}
    return {}


def _type_fields(node: Any) -> dict[str, Any]:
    t = type(node)
    if t is TensorType:
        out: dict[str, Any] = {"shape": list(node.shape), "dtype": node.dtype}
    elif t is FuncType:
        out = {
            "arg_types": list(node.arg_types),
            "ret_type": node.ret_type,
            "type_params": list(node.type_params),
            "type_constraints": list(node.type_constraints),
        }
    elif t in (TypeVar, adt.GlobalTypeVar):
        out = {"name_hint": node.name_hint, "kind": int(node.kind)}
    elif t is IncompleteType:
        out = {"kind": int(node.kind)}
    elif t is adt.TypeData:
        out = {
            "header": node.header,
            "type_vars": list(node.type_vars),
            "constructors": list(node.constructors),
        }
    else:  # TupleType, RefType, TypeCall, TypeRelation: the dataclass fields
        out = {f: _as_field(getattr(node, f)) for f in node.__dataclass_fields__}
    out["span"] = None
    return out


def _other_fields(node: Any) -> dict[str, Any]:
    if isinstance(node, Span):
        return {
            "source_name": _SourceName(str(node.source_name)) if node.source_name else None,
            "line": node.line,
            "end_line": node.end_line,
            "column": node.column,
            "end_column": node.end_column,
        }
    return {
        "functions": dict(node.items()),
        "type_definitions": dict(node.type_definitions),
        "attrs": node.attrs if len(node.attrs) else None,
    }


def _fields(node: Any) -> dict[str, Any]:
    """The serialised fields of ``node``: name -> value (objects, numbers or strings)."""
    if isinstance(node, Expr):
        return _expr_fields(node)
    if isinstance(node, adt.Pattern):
        return _pattern_fields(node)
    if isinstance(node, (Type, adt.TypeData)):
        return _type_fields(node)
    return _other_fields(node)


class _Id:
    """TVM's ``relay.Id``: a variable's name, a node of its own."""

    __slots__ = ("name_hint",)

    def __init__(self, name_hint: str) -> None:
        self.name_hint = name_hint


class _SourceName(str):
    """A span's source name, written as a ``SourceName`` node."""


_TYPE_KEYS: dict[type, str] = {
    Var: "relay.Var",
    Constant: "relay.Constant",
    Call: "relay.Call",
    Tuple: "relay.Tuple",
    TupleGetItem: "relay.TupleGetItem",
    Function: "relay.Function",
    Let: "relay.Let",
    If: "relay.If",
    GlobalVar: "GlobalVar",
    RefCreate: "relay.RefCreate",
    RefRead: "relay.RefRead",
    RefWrite: "relay.RefWrite",
    adt.Constructor: "relay.Constructor",
    adt.Match: "relay.Match",
    adt.Clause: "relay.Clause",
    adt.PatternWildcard: "relay.PatternWildcard",
    adt.PatternVar: "relay.PatternVar",
    adt.PatternConstructor: "relay.PatternConstructor",
    adt.PatternTuple: "relay.PatternTuple",
    TensorType: "relay.TensorType",
    TupleType: "TupleType",
    FuncType: "FuncType",
    TypeVar: "TypeVar",
    adt.GlobalTypeVar: "GlobalTypeVar",
    IncompleteType: "IncompleteType",
    RefType: "relay.RefType",
    adt.TypeCall: "TypeCall",
    TypeRelation: "TypeRelation",
    adt.TypeData: "relay.TypeData",
    Span: "Span",
    IRModule: "IRModule",
}


class _Writer:
    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = [{"type_key": ""}]
        self.index: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps the written values alive: ids stay unique
        self.todo: list[tuple[int, Any]] = []
        self.arrays: list[str] = []

    def ref(self, value: Any) -> int:
        """The node index of ``value`` (0 for ``None``), queued for writing if new."""
        if value is None:
            return 0
        key = id(value)
        found = self.index.get(key)
        if found is not None and not isinstance(value, (int, float, str)):
            return found
        slot = len(self.nodes)
        self.nodes.append({})
        self.index[key] = slot
        self.keep.append(value)
        self.todo.append((slot, value))
        return slot

    def run(self, root: Any) -> str:
        root_index = self.ref(root)
        while self.todo:
            slot, value = self.todo.pop()
            self.nodes[slot] = self.node(value)
        doc = {
            "root": root_index,
            "nodes": self.nodes,
            "b64ndarrays": self.arrays,
            "attrs": {"tvm_version": JSON_VERSION},
        }
        return json.dumps(doc, indent=2)

    def node(self, value: Any) -> dict[str, Any]:
        plain = self.plain_node(value)
        if plain is not None:
            return plain
        if isinstance(value, Constant):
            self.arrays.append(base64.b64encode(ndarray_to_bytes(value.data.numpy())).decode())
            attrs = {"data": str(len(self.arrays) - 1), "span": str(self.ref(value.span))}
            return {"type_key": "relay.Constant", "attrs": attrs}
        if isinstance(value, Attrs):
            return self.attrs_node(value)
        if isinstance(value, Mapping):
            if all(isinstance(k, str) for k in value):
                data = [self.ref(v) for v in value.values()]
                return {"type_key": "StrMap", "keys": list(value), "data": data}
            return {"type_key": "Map", "data": [self.ref(x) for kv in value.items() for x in kv]}
        if isinstance(value, SymVar):
            key = "tir.SizeVar" if isinstance(value, SizeVar) else "tir.Var"
            name = str(self.ref(value.name_hint))
            return {"type_key": key, "attrs": {"dtype": value.dtype, "name": name, "span": "0"}}
        type_key = _TYPE_KEYS.get(type(value))
        if type_key is None and isinstance(value, Span):  # a parser's span is a span
            type_key = "Span"
        if type_key is None:
            raise ArgumentError(f"save_json cannot write a {type(value).__name__} value")
        out: dict[str, str] = {}
        for name, field in _fields(value).items():
            if isinstance(field, str) and not isinstance(field, _SourceName):
                out[name] = field
            elif isinstance(field, (bool, int, np.integer)):
                out[name] = str(int(field))
            else:
                out[name] = str(self.ref(field))
        return {"type_key": type_key, "attrs": out}

    def plain_node(self, value: Any) -> dict[str, Any] | None:
        """The node of a number, a string, a sequence or a named handle, else ``None``."""
        if isinstance(value, bool):
            return {"type_key": "IntImm", "attrs": {"dtype": "bool", "value": str(int(value))}}
        if isinstance(value, (int, np.integer)):
            return {"type_key": "IntImm", "attrs": {"dtype": "int64", "value": str(int(value))}}
        if isinstance(value, (float, np.floating)):
            text = repr(float(value))
            return {"type_key": "FloatImm", "attrs": {"dtype": "float64", "value": text}}
        if isinstance(value, _SourceName):
            return {"type_key": "SourceName", "attrs": {"name": str(self.ref(str(value)))}}
        if isinstance(value, str):
            return {"type_key": "runtime.String", "repr_str": value}
        if isinstance(value, (list, tuple)):
            return {"type_key": "Array", "data": [self.ref(v) for v in value]}
        if isinstance(value, _Id):
            return {"type_key": "relay.Id", "attrs": {"name_hint": value.name_hint}}
        if isinstance(value, (Op, EnvFunc)):
            return {"type_key": type(value).__name__, "global_key": value.name}
        if isinstance(value, AnyDim):
            return {"type_key": "tir.Any", "attrs": {"span": "0"}}
        return None

    def attrs_node(self, attrs: Attrs) -> dict[str, Any]:
        if attrs.type_key == "DictAttrs":
            return {"type_key": "DictAttrs", "attrs": {"__dict__": str(self.ref(dict(attrs)))}}
        fields = {k: str(self.ref(v)) for k, v in attrs.items()}
        return {"type_key": attrs.type_key, "attrs": fields}


def save_json(node: Any) -> str:
    """``node`` (an expression, a type, a module, a span...) as a JSON node graph."""
    return _Writer().run(node)
