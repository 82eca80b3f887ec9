"""``tvm.ir.load_json``: IR values back from the JSON node graphs of :func:`save_json`.

Reads the layout :mod:`relaykit.ir.json_save` writes and TVM's own for the Relay
nodes, including the older spellings of TVM 0.6-0.8 (``relay.TypeVar`` with a
``Variable`` inside, ``relay.GlobalVar``, ``relay.Op``, ``Variable`` and
``SizeVar`` dimensions, modules and functions written before later fields
existed). A node kind outside Relay (TIR statements, buffers) is an
:class:`~relaykit.errors.ArtifactError` naming it. Nodes are built bottom-up from
an explicit stack, so deep graphs load without recursion; a node referred to
twice is built once and shared.

>>> from relaykit.ir import TupleType, save_json
>>> str(load_json(save_json(TupleType([]))))
'()'
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from relaykit.errors import ArtifactCorruptError, ArtifactError

from . import adt
from .attrs import Attrs
from .env_func import EnvFunc
from .expr import (
    Call,
    Constant,
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
from .op import get_op
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
    TypeKind,
    TypeRelation,
    TypeVar,
)

__all__ = ["load_json", "ndarray_from_bytes"]

_NDARRAY_MAGIC = 0xDD5E40F096B4A13F
_DTYPE_KINDS = {0: "int", 1: "uint", 2: "float"}


def ndarray_from_bytes(blob: bytes) -> np.ndarray:
    """The array of one of TVM's binary NDArray records."""
    try:
        magic, _, _, _, ndim = struct.unpack_from("<QQiii", blob, 0)
        if magic != _NDARRAY_MAGIC:
            raise ArtifactCorruptError("a constant's tensor record has a wrong magic number")
        code, bits, lanes = struct.unpack_from("<BBH", blob, 28)
        shape = struct.unpack_from(f"<{ndim}q", blob, 32)
        (size,) = struct.unpack_from("<q", blob, 32 + 8 * ndim)
        data = blob[40 + 8 * ndim : 40 + 8 * ndim + size]
    except struct.error as err:
        raise ArtifactCorruptError(f"a constant's tensor record is truncated ({err})") from None
    if code == 1 and bits == 1:
        return np.frombuffer(data, dtype=np.uint8).astype(bool).reshape(shape)
    if code not in _DTYPE_KINDS or lanes != 1:
        raise ArtifactError(f"a constant has a dtype relaykit does not read (code {code})")
    dtype = np.dtype(f"{_DTYPE_KINDS[code]}{bits}")
    if len(data) != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
        raise ArtifactCorruptError("a constant's tensor record has the wrong number of bytes")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


Build = Callable[["_Reader", dict[str, Any]], Any]

# type key -> (fields that are node references, the builder of the value)
_KINDS: dict[str, tuple[tuple[str, ...], Build]] = {}


def _kind(*keys: str, refs: tuple[str, ...] = ()) -> Callable[[Build], Build]:
    def register(fn: Build) -> Build:
        for key in keys:
            _KINDS[key] = (refs, fn)
        return fn

    return register


def _kind_of(f: dict[str, Any]) -> TypeKind:
    return TypeKind(int(f.get("kind") or 0))


def _list(value: Any) -> list[Any]:
    return [] if value is None else list(value)


@_kind("relay.Id", refs=())
def _id(r: _Reader, f: dict[str, Any]) -> Any:
    return str(f.get("name_hint", ""))


@_kind("relay.Var", refs=("vid", "type_annotation", "span"))
def _var(r: _Reader, f: dict[str, Any]) -> Any:
    return Var(f.get("vid") or "", f.get("type_annotation"), f.get("span"))


@_kind("relay.Constant", refs=("span",))
def _constant(r: _Reader, f: dict[str, Any]) -> Any:
    return Constant(r.array(int(f["data"])), f.get("span"))


@_kind("relay.Call", refs=("op", "args", "attrs", "type_args", "span"))
def _call(r: _Reader, f: dict[str, Any]) -> Any:
    return Call(
        f["op"], _list(f.get("args")), f.get("attrs"), _list(f.get("type_args")), f.get("span")
    )


@_kind("relay.Tuple", refs=("fields", "span"))
def _tuple(r: _Reader, f: dict[str, Any]) -> Any:
    return Tuple(_list(f.get("fields")), f.get("span"))


@_kind("relay.TupleGetItem", refs=("tuple_value", "span"))
def _projection(r: _Reader, f: dict[str, Any]) -> Any:
    return TupleGetItem(f["tuple_value"], int(f.get("index") or 0), f.get("span"))


@_kind("relay.Function", refs=("params", "body", "ret_type", "type_params", "attrs", "span"))
def _function(r: _Reader, f: dict[str, Any]) -> Any:
    body = f.get("body")
    if body is None:  # written before the function had a body (a declaration)
        body = Tuple([])
    attrs = f.get("attrs")
    return Function(
        _list(f.get("params")),
        body,
        f.get("ret_type"),
        _list(f.get("type_params")),
        dict(attrs) if attrs is not None else None,
        f.get("span"),
    )


@_kind("relay.Let", refs=("var", "value", "body", "span"))
def _let(r: _Reader, f: dict[str, Any]) -> Any:
    return Let(f["var"], f["value"], f["body"], f.get("span"))


@_kind("relay.If", refs=("cond", "true_branch", "false_branch", "span"))
def _if(r: _Reader, f: dict[str, Any]) -> Any:
    return If(f["cond"], f["true_branch"], f["false_branch"], f.get("span"))


@_kind("GlobalVar", "relay.GlobalVar", refs=("span",))
def _global_var(r: _Reader, f: dict[str, Any]) -> Any:
    return GlobalVar(str(f.get("name_hint", "")), f.get("span"))


@_kind("relay.RefCreate", refs=("value", "span"))
def _ref_create(r: _Reader, f: dict[str, Any]) -> Any:
    return RefCreate(f["value"], f.get("span"))


@_kind("relay.RefRead", refs=("ref", "span"))
def _ref_read(r: _Reader, f: dict[str, Any]) -> Any:
    return RefRead(f["ref"], f.get("span"))


@_kind("relay.RefWrite", refs=("ref", "value", "span"))
def _ref_write(r: _Reader, f: dict[str, Any]) -> Any:
    return RefWrite(f["ref"], f["value"], f.get("span"))


@_kind("relay.Constructor", refs=("inputs", "belong_to", "span"))
def _constructor(r: _Reader, f: dict[str, Any]) -> Any:
    con = adt.Constructor(str(f.get("name_hint", "")), _list(f.get("inputs")), f["belong_to"])
    object.__setattr__(con, "tag", int(f.get("tag") or 0))
    return con


@_kind("relay.Match", refs=("data", "clauses", "span"))
def _match(r: _Reader, f: dict[str, Any]) -> Any:
    return adt.Match(f["data"], _list(f.get("clauses")), bool(int(f.get("complete", 1))))


@_kind("relay.Clause", refs=("lhs", "rhs"))
def _clause(r: _Reader, f: dict[str, Any]) -> Any:
    return adt.Clause(f["lhs"], f["rhs"])


@_kind("relay.PatternWildcard")
def _wildcard(r: _Reader, f: dict[str, Any]) -> Any:
    return adt.PatternWildcard()


@_kind("relay.PatternVar", refs=("var",))
def _pattern_var(r: _Reader, f: dict[str, Any]) -> Any:
    return adt.PatternVar(f["var"])


@_kind("relay.PatternConstructor", refs=("constructor", "patterns"))
def _pattern_con(r: _Reader, f: dict[str, Any]) -> Any:
    return adt.PatternConstructor(f["constructor"], _list(f.get("patterns")))


@_kind("relay.PatternTuple", refs=("patterns",))
def _pattern_tuple(r: _Reader, f: dict[str, Any]) -> Any:
    return adt.PatternTuple(_list(f.get("patterns")))


@_kind("relay.TensorType", "TensorType", refs=("shape", "span"))
def _tensor_type(r: _Reader, f: dict[str, Any]) -> Any:
    return TensorType(_list(f.get("shape")), f.get("dtype") or "float32")


@_kind("TupleType", "relay.TupleType", refs=("fields", "span"))
def _tuple_type(r: _Reader, f: dict[str, Any]) -> Any:
    return TupleType(_list(f.get("fields")))


@_kind(
    "FuncType",
    "relay.FuncType",
    refs=("arg_types", "ret_type", "type_params", "type_constraints", "span"),
)
def _func_type(r: _Reader, f: dict[str, Any]) -> Any:
    ret = f.get("ret_type") or TupleType([])
    return FuncType(
        _list(f.get("arg_types")),
        ret,
        _list(f.get("type_params")),
        _list(f.get("type_constraints")),
    )


@_kind("TypeVar", "relay.TypeVar", refs=("var", "span"))
def _type_var(r: _Reader, f: dict[str, Any]) -> Any:
    return TypeVar(_type_var_name(f), _kind_of(f))


@_kind("GlobalTypeVar", "relay.GlobalTypeVar", refs=("var", "span"))
def _global_type_var(r: _Reader, f: dict[str, Any]) -> Any:
    return adt.GlobalTypeVar(_type_var_name(f), _kind_of(f))


def _type_var_name(f: dict[str, Any]) -> str:
    """TVM 0.6 kept a type variable's name in a TIR variable (``var``)."""
    if "name_hint" in f:
        return str(f["name_hint"])
    var = f.get("var")
    return str(getattr(var, "name_hint", var) or "")


@_kind("IncompleteType", "relay.IncompleteType", refs=("span",))
def _incomplete(r: _Reader, f: dict[str, Any]) -> Any:
    return IncompleteType(_kind_of(f))


@_kind("relay.RefType", "RefType", refs=("value", "span"))
def _ref_type(r: _Reader, f: dict[str, Any]) -> Any:
    return RefType(f["value"])


@_kind("TypeCall", "relay.TypeCall", refs=("func", "args", "span"))
def _type_call(r: _Reader, f: dict[str, Any]) -> Any:
    return adt.TypeCall(f["func"], _list(f.get("args")))


@_kind("TypeRelation", "relay.TypeRelation", refs=("func", "args", "attrs", "span"))
def _type_relation(r: _Reader, f: dict[str, Any]) -> Any:
    return TypeRelation(
        f.get("func"), _list(f.get("args")), int(f.get("num_inputs") or 0), f.get("attrs")
    )


@_kind("relay.TypeData", "TypeData", refs=("header", "type_vars", "constructors", "span"))
def _type_data(r: _Reader, f: dict[str, Any]) -> Any:
    return adt.TypeData(f["header"], _list(f.get("type_vars")), _list(f.get("constructors")))


@_kind("Span", refs=("source_name",))
def _span(r: _Reader, f: dict[str, Any]) -> Any:
    ints = {k: int(f.get(k) or 0) for k in ("line", "end_line", "column", "end_column")}
    return Span(f.get("source_name"), **ints)


@_kind("SourceName", refs=("name",))
def _source_name(r: _Reader, f: dict[str, Any]) -> Any:
    return f.get("name")


@_kind("IRModule", refs=("functions", "type_definitions", "attrs"))
def _module(r: _Reader, f: dict[str, Any]) -> Any:
    defs = f.get("type_definitions") or {}
    attrs = f.get("attrs")
    return IRModule(
        dict(f.get("functions") or {}),
        type_definitions=list(defs.values()),
        attrs=dict(attrs) if attrs is not None else None,
    )


@_kind("DictAttrs", refs=("__dict__",))
def _dict_attrs(r: _Reader, f: dict[str, Any]) -> Any:
    return Attrs(f.get("__dict__") or {})


@_kind("IntImm", refs=("span",))
def _int(r: _Reader, f: dict[str, Any]) -> Any:
    value = int(f.get("value") or 0)
    return bool(value) if f.get("dtype") == "bool" else value


@_kind("FloatImm", refs=("span",))
def _float(r: _Reader, f: dict[str, Any]) -> Any:
    return float(f.get("value") or 0.0)


# A TIR variable's name is a String node; TVM 0.6 wrote it inline (``Variable``).
@_kind("tir.Var", refs=("name", "type_annotation", "span"))
@_kind("Variable", refs=("type_annotation", "span"))
def _sym_var(r: _Reader, f: dict[str, Any]) -> Any:
    return SymVar(str(f.get("name") or "v"), f.get("dtype") or "int32")


@_kind("tir.SizeVar", refs=("name", "type_annotation", "span"))
@_kind("SizeVar", refs=("type_annotation", "span"))
def _size_var(r: _Reader, f: dict[str, Any]) -> Any:
    return SizeVar(str(f.get("name") or "v"), f.get("dtype") or "int32")


@_kind("tir.Any", refs=("span",))
def _any(r: _Reader, f: dict[str, Any]) -> Any:
    return AnyDim()


class _Reader:
    def __init__(self, doc: Mapping[str, Any]) -> None:
        nodes = doc.get("nodes")
        if not isinstance(nodes, list) or not nodes:
            raise ArtifactCorruptError("load_json: the document has no 'nodes' list")
        self.nodes: list[Any] = nodes
        self.arrays: list[Any] = list(doc.get("b64ndarrays") or [])
        self.values: dict[int, Any] = {0: None}

    def array(self, i: int) -> np.ndarray:
        if not 0 <= i < len(self.arrays):
            raise ArtifactCorruptError(f"load_json: a constant refers to missing tensor {i}")
        return ndarray_from_bytes(base64.b64decode(self.arrays[i]))

    def node(self, i: int) -> dict[str, Any]:
        if not 0 <= i < len(self.nodes) or not isinstance(self.nodes[i], dict):
            raise ArtifactCorruptError(f"load_json: a node refers to missing node {i}")
        return self.nodes[i]

    def deps(self, i: int) -> list[int]:
        """The node indices node ``i`` is built from."""
        node = self.node(i)
        key = node.get("type_key", "")
        if key in ("Array", "Map", "StrMap"):
            return [int(x) for x in node.get("data") or []]
        attrs = node.get("attrs") or {}
        entry = _KINDS.get(key)
        if entry is not None:
            refs: tuple[str, ...] = entry[0]
        elif key.startswith("relay.attrs."):
            refs = tuple(attrs)
        else:
            return []
        return [int(attrs[f]) for f in refs if f in attrs]

    def load(self, root: int) -> Any:
        values = self.values
        stack = [root]
        while stack:
            i = stack[-1]
            if i in values:
                stack.pop()
                continue
            missing = [d for d in self.deps(i) if d not in values]
            if missing:
                if len(stack) > 10 * len(self.nodes):
                    raise ArtifactCorruptError("load_json: the node graph has a cycle")
                stack.extend(missing)
                continue
            values[i] = self.build(i)
            stack.pop()
        return values[root]

    def build(self, i: int) -> Any:
        node = self.node(i)
        key = node.get("type_key", "")
        get = self.values.__getitem__
        if key == "Array":
            return tuple(get(int(x)) for x in node.get("data") or [])
        if key == "Map":
            data = [get(int(x)) for x in node.get("data") or []]
            return dict(zip(data[::2], data[1::2], strict=True))
        if key == "StrMap":
            vals = [get(int(x)) for x in node.get("data") or []]
            return dict(zip(node.get("keys") or [], vals, strict=True))
        if key in ("runtime.String", "String"):
            return str(node.get("repr_str", ""))
        if key in ("Op", "relay.Op"):
            return get_op(str(node.get("global_key")))
        if key == "EnvFunc":
            return EnvFunc(str(node.get("global_key")))
        entry = _KINDS.get(key)
        attrs = dict(node.get("attrs") or {})
        if entry is None and key.startswith("relay.attrs."):
            return Attrs({k: get(int(v)) for k, v in attrs.items()}, key)
        if entry is None:
            raise ArtifactError(
                f"load_json: node kind {key!r} is not a Relay IR node relaykit reads "
                "(TIR statements and buffers are out of scope)"
            )
        refs, fn = entry
        fields: dict[str, Any] = {}
        for name, text in attrs.items():
            fields[name] = get(int(text)) if name in refs else text
        return fn(self, fields)


def load_json(json_str: str) -> Any:
    """The IR value :func:`save_json` (or TVM's ``save_json``) wrote."""
    try:
        doc = json.loads(json_str)
    except (TypeError, ValueError) as err:
        raise ArtifactCorruptError(f"load_json: the text is not JSON ({err})") from None
    if not isinstance(doc, Mapping) or "root" not in doc:
        raise ArtifactCorruptError("load_json: the document has no 'root'")
    return _Reader(doc).load(int(doc["root"]))
