"""Relay types: frozen values that validate themselves on construction.

>>> t = TensorType((1, 3), "float32")
>>> t
TensorType((1, 3), float32)
>>> str(t)
'Tensor[(1, 3), float32]'
>>> str(TensorType((), "int32"))
'int32'
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from relaykit.dtypes import DTYPES, ML_DTYPES
from relaykit.errors import IRError, MissingDependencyError, SymbolicDimError

from .symbolic import Any as AnyDim
from .symbolic import PrimExpr

__all__ = [
    "TypeKind",
    "Type",
    "TensorType",
    "TupleType",
    "FuncType",
    "RefType",
    "TypeRelation",
    "IncompleteType",
    "TypeVar",
    "DTYPES",
    "ML_DTYPES",
    "MissingDtypeError",
    "check_dtype",
    "dtype_kind",
    "scalar_type",
    "check_dim",
    "is_dynamic",
    "type_key",
    "AnyDim",
    "PrimExpr",
]


def dtype_kind(dtype: str) -> str:
    """``"f"``, ``"i"``, ``"u"`` or ``"b"`` for a dtype name of :data:`DTYPES`; unlike
    NumPy's ``dtype.kind`` this also classifies the ``ml_dtypes`` types
    (``dtype_kind("bfloat16") == "f"``, ``dtype_kind("int4") == "i"``).

    >>> dtype_kind("float32"), dtype_kind("uint8"), dtype_kind("bool")
    ('f', 'u', 'b')
    """
    if dtype in ML_DTYPES:
        return "u" if dtype.startswith("uint") else ("i" if dtype.startswith("int") else "f")
    return DTYPES[dtype].kind


class MissingDtypeError(IRError, MissingDependencyError):
    """A dtype that needs the optional ``ml_dtypes`` package, which is not installed."""


_TVM_BARE = {"int": "int32", "uint": "uint32", "float": "float32", "uint1": "bool"}


def check_dtype(dtype: Any) -> str:
    """Normalise a dtype (string, NumPy dtype or type) to its canonical name. The bare
    names ``"int"``, ``"uint"`` and ``"float"`` are 32-bit, as in TVM (not NumPy's 64), and
    ``"uint1"`` (TVM's one-bit unsigned integer) is ``bool``."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    if isinstance(dtype, str) and dtype in _TVM_BARE:
        return _TVM_BARE[dtype]
    if not isinstance(dtype, str) and isinstance(getattr(dtype, "dtype", None), str):
        return check_dtype(dtype.dtype)  # an object naming its dtype (a scalar TensorType)
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    if name not in DTYPES:
        if name in ML_DTYPES or (isinstance(dtype, str) and dtype in ML_DTYPES):
            raise MissingDtypeError(
                f"dtype {dtype!r} needs the ml_dtypes package: pip install ml_dtypes "
                "(or pip install 'relaykit[onnx]')"
            )
        known = ", ".join(DTYPES)
        raise IRError(f"unknown dtype {dtype!r}; relaykit supports: {known}")
    return name


class Type:
    """Base class of all Relay types."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    """A tensor of ``shape`` and element type ``dtype``; shape ``()`` is a scalar.

    A dimension is an ``int``, ``relay.Any()`` (unknown until run time, printed ``?``)
    or a symbolic size (``te.var("n")`` and arithmetic on it); equality is structural.

    >>> from relaykit.ir.symbolic import Any, Var
    >>> n = Var("n")
    >>> str(TensorType((Any(), n, n * 2), "float32"))
    'Tensor[(?, n, (2*n)), float32]'
    """

    shape: tuple[Any, ...]  # int | relay.Any() | symbolic PrimExpr (relaykit.ir.symbolic.Dim)
    dtype: str = "float32"

    def __init__(self, shape: Iterable[Any] = (), dtype: Any = "float32") -> None:
        object.__setattr__(self, "shape", tuple(check_dim(d, shape) for d in shape))
        object.__setattr__(self, "dtype", check_dtype(dtype))

    @property
    def is_static(self) -> bool:
        """Whether every dimension is an integer (no ``?`` and no size variable)."""
        return all(type(d) is int for d in self.shape)

    @property
    def concrete_shape(self) -> tuple[int, ...]:
        """The shape as integers; a :class:`SymbolicDimError` if a dim is ``?``/symbolic."""
        if not self.is_static:
            raise SymbolicDimError(
                f"{self} has a dynamic shape; this needs a static one (or the VM, "
                "relay.vm.compile, which computes shapes at run time)"
            )
        return self.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements: an int, or a symbolic expression / ``Any``."""
        n = 1
        for d in self.shape:
            n = n * d
        return n

    def __str__(self) -> str:
        if not self.shape:
            return self.dtype
        dims = ", ".join(str(d) for d in self.shape)
        return f"Tensor[({dims}), {self.dtype}]"

    def __repr__(self) -> str:
        return f"TensorType({self.shape}, {self.dtype})"


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    """The type of a tuple value."""

    fields: tuple[Type, ...]

    def __init__(self, fields: Sequence[Type] = ()) -> None:
        fs = tuple(fields)
        for f in fs:
            if not isinstance(f, Type):
                raise IRError(f"TupleType field {f!r} is not a Type")
        object.__setattr__(self, "fields", fs)

    def __str__(self) -> str:
        if len(self.fields) == 1:
            return f"({self.fields[0]},)"
        return "(" + ", ".join(str(f) for f in self.fields) + ")"

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, i: int) -> Type:
        return self.fields[i]


class TypeKind(enum.IntEnum):
    """What a type variable ranges over (TVM's ``relay.TypeKind``)."""

    Type = 0
    ShapeVar = 1
    BaseType = 2
    Constraint = 4
    AdtHandle = 5
    TypeData = 6


@dataclass(frozen=True, slots=True, eq=False)
class TypeVar(Type):
    """A type parameter of a polymorphic function (printed, not solved).

    Compared by identity, as TVM's type variables are: two ``TypeVar("a")`` are
    different variables; function types that bind them are equal up to renaming.
    """

    name_hint: str
    kind: TypeKind = TypeKind.Type

    def __str__(self) -> str:
        return self.name_hint


@dataclass(frozen=True, slots=True)
class FuncType(Type):
    """The type of a function: argument types and return type; a polymorphic one has
    type parameters and may constrain them with :class:`TypeRelation` values."""

    arg_types: tuple[Type, ...]
    ret_type: Type
    type_params: tuple[TypeVar, ...] = ()
    type_constraints: tuple[Type, ...] = ()

    def __init__(
        self,
        arg_types: Sequence[Type],
        ret_type: Type,
        type_params: Sequence[TypeVar] = (),
        type_constraints: Sequence[Any] = (),
    ) -> None:
        args = tuple(arg_types)
        for a in (*args, ret_type):
            if not isinstance(a, Type):
                raise IRError(f"FuncType member {a!r} is not a Type")
        constraints = tuple(type_constraints or ())
        for c in constraints:
            if not isinstance(c, Type):
                raise IRError(f"FuncType constraint {c!r} is not a Type (a TypeRelation)")
        object.__setattr__(self, "arg_types", args)
        object.__setattr__(self, "ret_type", ret_type)
        object.__setattr__(self, "type_params", tuple(type_params or ()))
        object.__setattr__(self, "type_constraints", constraints)

    def __str__(self) -> str:
        args = ", ".join(str(a) for a in self.arg_types)
        params = f"[{', '.join(map(str, self.type_params))}]" if self.type_params else ""
        return f"fn {params}({args}) -> {self.ret_type}"

    def __eq__(self, other: object) -> bool:
        # Equal up to a renaming of the type parameters (alpha-equivalence).
        if self is other:
            return True
        if type(other) is not FuncType:
            return NotImplemented
        return type_key(self) == type_key(other)

    def __hash__(self) -> int:
        return hash(type_key(self))


@dataclass(frozen=True, slots=True)
class TypeRelation(Type):
    """A constraint between types: ``func(args..., attrs)`` relates the first
    ``num_inputs`` of ``args`` (inputs) to the rest (outputs). Its kind is
    ``TypeKind.Constraint``; ``func`` is an :class:`relaykit.ir.EnvFunc` (or ``None``).

    >>> t = TensorType((2,))
    >>> TypeRelation(None, [t, t], 1).num_inputs
    1
    """

    func: Any
    args: tuple[Type, ...]
    num_inputs: int
    attrs: Any = None

    def __init__(self, func: Any, args: Sequence[Type], num_inputs: int, attrs: Any = None):
        items = tuple(args)
        for a in items:
            if not isinstance(a, Type):
                raise IRError(f"TypeRelation argument {a!r} is not a Type")
        if not 0 <= int(num_inputs) <= len(items):
            raise IRError(
                f"TypeRelation num_inputs={num_inputs} is not between 0 and its "
                f"{len(items)} arguments"
            )
        object.__setattr__(self, "func", func)
        object.__setattr__(self, "args", items)
        object.__setattr__(self, "num_inputs", int(num_inputs))
        object.__setattr__(self, "attrs", attrs)

    def __str__(self) -> str:
        name = getattr(self.func, "name", "?")
        return f"{name}({', '.join(str(a) for a in self.args)})"


@dataclass(frozen=True, slots=True)
class RefType(Type):
    """The type of a mutable reference cell holding a ``value``: ``ref(Tensor[(2), float32])``.

    >>> str(RefType(TensorType((2,), "float32")))
    'ref(Tensor[(2), float32])'
    """

    value: Type

    def __init__(self, value: Type) -> None:
        if not isinstance(value, Type):
            raise IRError(f"RefType holds a Type, got {value!r}")
        object.__setattr__(self, "value", value)

    def __str__(self) -> str:
        return f"ref({self.value})"


@dataclass(frozen=True, slots=True)
class IncompleteType(Type):
    """A type still to be inferred (printed as ``?``)."""

    kind: int = 0

    def __str__(self) -> str:
        return "?"


def type_key(t: Any, bound: dict[int, tuple[int, int]] | None = None) -> Any:
    """A hashable key of ``t`` equal for types equal up to renaming the type parameters
    functions bind (bound variables become their binding position and kind; free ones
    stay themselves)."""
    env = {} if bound is None else bound
    if isinstance(t, TypeVar):
        hit = env.get(id(t))
        return ("bound", *hit) if hit is not None else t
    if isinstance(t, FuncType):
        inner = dict(env)
        depth = len(env)
        for i, tv in enumerate(t.type_params):
            inner[id(tv)] = (depth + i, int(tv.kind))
        return (
            "fn",
            len(t.type_params),
            tuple(int(tv.kind) for tv in t.type_params),
            tuple(type_key(a, inner) for a in t.arg_types),
            type_key(t.ret_type, inner),
            tuple(type_key(c, inner) for c in t.type_constraints),
        )
    if isinstance(t, TupleType):
        return ("tuple", tuple(type_key(f, env) for f in t.fields))
    if isinstance(t, RefType):
        return ("ref", type_key(t.value, env))
    if isinstance(t, TypeRelation):
        attrs: Any = t.attrs
        try:
            hash(attrs)
        except TypeError:
            attrs = id(attrs)
        args = tuple(type_key(a, env) for a in t.args)
        return ("rel", t.func, args, t.num_inputs, attrs)
    args_of = getattr(t, "args", None)
    if args_of is not None and hasattr(t, "func"):  # a TypeCall
        return ("call", t.func, tuple(type_key(a, env) for a in args_of))
    return t


def check_dim(d: Any, shape: Any = ()) -> Any:
    """A tensor dimension checked and normalised: a non-negative ``int``, ``Any()``
    (unknown, printed ``?``) or a symbolic expression over ``te.var`` size variables."""
    if isinstance(d, PrimExpr):
        return d
    if d is None:
        return AnyDim()
    try:
        v = int(d)
    except (TypeError, ValueError):
        raise IRError(
            f"TensorType dimension {d!r} is not an integer, relay.Any() or a symbolic "
            "size (tvm.te.var / te.size_var)"
        ) from None
    if v < 0:
        raise IRError(
            f"TensorType dimension {v} is negative in shape {tuple(shape)}; use relay.Any() "
            "for a dimension unknown until run time"
        )
    return v


def is_dynamic(t: Type) -> bool:
    """Whether a type mentions a dimension that is ``?`` or symbolic (in any field)."""
    if isinstance(t, TensorType):
        return not t.is_static
    if isinstance(t, TupleType):
        return any(is_dynamic(f) for f in t.fields)
    if isinstance(t, FuncType):
        return any(is_dynamic(a) for a in (*t.arg_types, t.ret_type))
    if isinstance(t, RefType):
        return is_dynamic(t.value)
    return False


def scalar_type(dtype: Any) -> TensorType:
    """The rank-0 tensor type of ``dtype``: ``scalar_type("int32")``."""
    return TensorType((), dtype)
