"""Relay expression nodes.

Nodes are immutable and compared by identity (``==`` is ``is``); use
:func:`relaykit.ir.structural_equal` to compare structure. ``with_fields``
returns the node itself when nothing changes, so rewriters get copy-on-write
for free.

>>> x = Var("x", TensorType((2,), "float32"))
>>> y = x + x
>>> y.op.name, y.args[0] is x
('add', True)
>>> y.with_fields(args=[x, x]) is y
True
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from relaykit.errors import IRError, TypeNotInferredError

from .attrs import Attrs
from .types import TensorType, Type

if TYPE_CHECKING:
    from relaykit.runtime.ndarray import NDArray

__all__ = [
    "Span",
    "Expr",
    "RelayExpr",
    "Var",
    "Constant",
    "Call",
    "Tuple",
    "TupleGetItem",
    "Function",
    "Let",
    "If",
    "GlobalVar",
    "TupleWrapper",
    "const",
    "checked_type_or_none",
]

_EMPTY_ATTRS = Attrs({})
_set = object.__setattr__


class Span:
    """A source location: ``source_name:line:column`` (1-based)."""

    __slots__ = ("source_name", "line", "column", "end_line", "end_column")

    def __init__(
        self, source_name: str, line: int, column: int, end_line: int = 0, end_column: int = 0
    ) -> None:
        self.source_name = source_name
        self.line = line
        self.column = column
        self.end_line = end_line or line
        self.end_column = end_column or column

    def __repr__(self) -> str:
        return f"{self.source_name}:{self.line}:{self.column}"


class Expr:
    """Base class of every Relay expression."""

    __slots__ = ("_checked_type", "span", "__weakref__")

    _checked_type: Type | None
    span: Span | None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"{type(self).__name__} nodes are immutable; "
            "use with_fields(...) to make a changed copy"
        )

    # -- types -------------------------------------------------------------
    @property
    def checked_type(self) -> Type:
        """The type inferred by ``relay.transform.InferType()``."""
        t = self._checked_type
        if t is None:
            raise TypeNotInferredError(
                f"checked_type of this {type(self).__name__} is not available yet: "
                "run relay.transform.InferType() on the module (or use "
                "relaykit.transform.infer_type(expr)) first"
            )
        return t

    @property
    def has_checked_type(self) -> bool:
        return self._checked_type is not None

    def _set_checked_type(self, ty: Type) -> None:
        _set(self, "_checked_type", ty)

    # -- printing ----------------------------------------------------------
    def astext(self, show_meta_data: bool = True, annotate: Any = None) -> str:
        """This expression in Relay's text format."""
        from relaykit.text.printer import astext

        return astext(self, show_meta_data=show_meta_data, annotate=annotate)

    def __str__(self) -> str:
        return self.astext(show_meta_data=False)

    def __repr__(self) -> str:
        try:
            return self.astext(show_meta_data=False)
        except Exception:  # pragma: no cover - repr must never fail
            return f"<{type(self).__name__} at {id(self):#x}>"

    # -- operator sugar ----------------------------------------------------
    def _binary(self, op_name: str, other: Any, reverse: bool = False) -> Call:
        from .op import get_op

        if not isinstance(other, Expr):
            if isinstance(other, (numbers.Number, np.generic, np.ndarray)):
                other = const(other, _dtype_hint(self, other))
            else:
                return NotImplemented
        lhs, rhs = (other, self) if reverse else (self, other)
        return Call(get_op(op_name), [lhs, rhs])

    def __add__(self, other: Any) -> Call:
        return self._binary("add", other)

    def __radd__(self, other: Any) -> Call:
        return self._binary("add", other, reverse=True)

    def __sub__(self, other: Any) -> Call:
        return self._binary("subtract", other)

    def __rsub__(self, other: Any) -> Call:
        return self._binary("subtract", other, reverse=True)

    def __mul__(self, other: Any) -> Call:
        return self._binary("multiply", other)

    def __rmul__(self, other: Any) -> Call:
        return self._binary("multiply", other, reverse=True)

    def __truediv__(self, other: Any) -> Call:
        return self._binary("divide", other)

    def __rtruediv__(self, other: Any) -> Call:
        return self._binary("divide", other, reverse=True)

    def __neg__(self) -> Call:
        from .op import get_op

        return Call(get_op("negative"), [self])

    def __lt__(self, other: Any) -> Call:
        return self._binary("less", other)

    def __le__(self, other: Any) -> Call:
        return self._binary("less_equal", other)

    def __gt__(self, other: Any) -> Call:
        return self._binary("greater", other)

    def __ge__(self, other: Any) -> Call:
        return self._binary("greater_equal", other)

    __hash__ = object.__hash__

    def astype(self, dtype: str) -> Call:
        from .op import get_op

        return Call(get_op("cast"), [self], Attrs({"dtype": dtype}, "relay.attrs.CastAttrs"))


RelayExpr = Expr


def checked_type_or_none(expr: Expr) -> Type | None:
    """The type inference gave ``expr``, or ``None`` when it has not been typed yet.

    >>> x = Var("x", TensorType((2,), "float32"))
    >>> checked_type_or_none(x) is None
    True
    """
    return expr._checked_type


def _dtype_hint(expr: Expr, value: Any) -> str:
    """The dtype a Python scalar takes when combined with ``expr``."""
    ty = expr._checked_type
    if ty is None and isinstance(expr, Var):
        ty = expr.type_annotation
    if isinstance(ty, TensorType):
        return ty.dtype
    arr = np.asarray(value)
    if arr.dtype.kind == "f":
        return "float32"
    if arr.dtype.kind == "b":
        return "bool"
    return "int32"


def _as_expr(value: Any, where: str) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, TupleWrapper):
        return value.tuple_value
    raise IRError(f"{where} must be a relay expression, got {type(value).__name__}: {value!r}")


def _as_expr_list(values: Any, where: str) -> tuple[Expr, ...]:
    if type(values) is tuple or type(values) is list:
        for v in values:
            if not isinstance(v, Expr):
                break
        else:
            return tuple(values)
    if isinstance(values, Expr) or not isinstance(values, Sequence | tuple | list):
        raise IRError(f"{where} must be a list of relay expressions, got {values!r}")
    return tuple(_as_expr(v, f"{where}[{i}]") for i, v in enumerate(values))


def _as_attrs(attrs: Any) -> Attrs:
    if attrs is None:
        return _EMPTY_ATTRS
    if isinstance(attrs, Attrs):
        return attrs
    if isinstance(attrs, Mapping):
        return Attrs(attrs)
    raise IRError(f"attrs must be a mapping, got {type(attrs).__name__}")


class Var(Expr):
    """A local variable; ``name_hint`` is only a hint (the printer makes names unique)."""

    __slots__ = ("name_hint", "type_annotation")

    name_hint: str
    type_annotation: Type | None

    def __init__(
        self, name_hint: str, type_annotation: Type | None = None, span: Span | None = None
    ):
        if type_annotation is not None and not isinstance(type_annotation, Type):
            raise IRError(
                f"type annotation of %{name_hint} must be a Type, got {type_annotation!r}"
            )
        _set(self, "name_hint", str(name_hint))
        _set(self, "type_annotation", type_annotation)
        _set(self, "_checked_type", None)
        _set(self, "span", span)

    @property
    def vid(self) -> Var:  # TVM spells the name as var.vid.name_hint
        return self

    def with_fields(
        self, name_hint: str | None = None, type_annotation: Any = ..., span: Any = ...
    ) -> Var:
        name = self.name_hint if name_hint is None else name_hint
        ann = self.type_annotation if type_annotation is ... else type_annotation
        if name == self.name_hint and ann is self.type_annotation:
            return self
        return Var(name, ann, self.span if span is ... else span)


class Constant(Expr):
    """A constant tensor; ``data`` is an :class:`relaykit.runtime.NDArray`."""

    __slots__ = ("data",)

    data: NDArray

    def __init__(self, data: Any, span: Span | None = None) -> None:
        from relaykit.runtime.ndarray import NDArray, array

        nd = data if isinstance(data, NDArray) else array(data)
        _set(self, "data", nd)
        _set(self, "_checked_type", TensorType(nd.shape, nd.dtype))
        _set(self, "span", span)

    @property
    def is_scalar(self) -> bool:
        return len(self.data.shape) == 0

    def with_fields(self, data: Any = None, span: Any = ...) -> Constant:
        if data is None or data is self.data:
            return self
        return Constant(data, self.span if span is ... else span)


class Call(Expr):
    """A call of an operator, a function or a global: ``op(args..., **attrs)``."""

    __slots__ = ("op", "args", "attrs", "type_args")

    op: Expr
    args: tuple[Expr, ...]
    attrs: Attrs
    type_args: tuple[Type, ...]

    def __init__(
        self,
        op: Any,
        args: Sequence[Any],
        attrs: Any = None,
        type_args: Sequence[Type] | None = None,
        span: Span | None = None,
    ) -> None:
        _set(self, "op", _as_expr(op, "Call.op"))
        _set(self, "args", _as_expr_list(args, "Call.args"))
        _set(self, "attrs", _as_attrs(attrs))
        _set(self, "type_args", tuple(type_args or ()))
        _set(self, "_checked_type", None)
        _set(self, "span", span)

    def with_fields(
        self,
        op: Any = None,
        args: Sequence[Expr] | None = None,
        attrs: Any = None,
        span: Any = ...,
    ) -> Call:
        new_op = self.op if op is None else op
        new_args = self.args if args is None else tuple(args)
        new_attrs = self.attrs if attrs is None else _as_attrs(attrs)
        if (
            new_op is self.op
            and new_attrs is self.attrs
            and len(new_args) == len(self.args)
            and all(a is b for a, b in zip(new_args, self.args, strict=False))
        ):
            return self
        return Call(new_op, new_args, new_attrs, self.type_args, self.span if span is ... else span)


class Tuple(Expr):
    """A tuple of expressions."""

    __slots__ = ("fields",)

    fields: tuple[Expr, ...]

    def __init__(self, fields: Sequence[Any], span: Span | None = None) -> None:
        _set(self, "fields", _as_expr_list(fields, "Tuple.fields"))
        _set(self, "_checked_type", None)
        _set(self, "span", span)

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, index: int) -> Expr:
        return self.fields[index]

    def astuple(self) -> Tuple:
        return self

    def with_fields(self, fields: Sequence[Expr] | None = None, span: Any = ...) -> Tuple:
        if fields is None:
            return self
        fs = tuple(fields)
        if len(fs) == len(self.fields) and all(
            a is b for a, b in zip(fs, self.fields, strict=False)
        ):
            return self
        return Tuple(fs, self.span if span is ... else span)


class TupleGetItem(Expr):
    """Projection ``tuple_value.index``."""

    __slots__ = ("tuple_value", "index")

    tuple_value: Expr
    index: int

    def __init__(self, tuple_value: Any, index: int, span: Span | None = None) -> None:
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise IRError(f"TupleGetItem index must be an integer, got {index!r}")
        _set(self, "tuple_value", _as_expr(tuple_value, "TupleGetItem.tuple_value"))
        _set(self, "index", int(index))
        _set(self, "_checked_type", None)
        _set(self, "span", span)

    def with_fields(
        self, tuple_value: Expr | None = None, index: int | None = None, span: Any = ...
    ):
        tv = self.tuple_value if tuple_value is None else tuple_value
        ix = self.index if index is None else index
        if tv is self.tuple_value and ix == self.index:
            return self
        return TupleGetItem(tv, ix, self.span if span is ... else span)


class Function(Expr):
    """A function: ``fn (params) -> ret_type { body }`` with frozen ``attrs``."""

    __slots__ = ("params", "body", "ret_type", "type_params", "attrs")

    params: tuple[Var, ...]
    body: Expr
    ret_type: Type | None
    type_params: tuple[Any, ...]
    attrs: Attrs

    def __init__(
        self,
        params: Sequence[Var],
        body: Any,
        ret_type: Type | None = None,
        type_params: Sequence[Any] | None = None,
        attrs: Any = None,
        span: Span | None = None,
    ) -> None:
        ps = tuple(params)
        for i, p in enumerate(ps):
            if not isinstance(p, Var):
                raise IRError(f"Function parameter {i} must be a relay Var, got {p!r}")
        if ret_type is not None and not isinstance(ret_type, Type):
            raise IRError(f"Function ret_type must be a Type, got {ret_type!r}")
        _set(self, "params", ps)
        _set(self, "body", _as_expr(body, "Function.body"))
        _set(self, "ret_type", ret_type)
        _set(self, "type_params", tuple(type_params or ()))
        _set(self, "attrs", _as_attrs(attrs))
        _set(self, "_checked_type", None)
        _set(self, "span", span)

    def with_fields(
        self,
        params: Sequence[Var] | None = None,
        body: Expr | None = None,
        ret_type: Any = ...,
        attrs: Any = None,
        span: Any = ...,
    ) -> Function:
        ps = self.params if params is None else tuple(params)
        b = self.body if body is None else body
        rt = self.ret_type if ret_type is ... else ret_type
        at = self.attrs if attrs is None else _as_attrs(attrs)
        if (
            b is self.body
            and rt is self.ret_type
            and at is self.attrs
            and len(ps) == len(self.params)
            and all(a is c for a, c in zip(ps, self.params, strict=False))
        ):
            return self
        return Function(ps, b, rt, self.type_params, at, self.span if span is ... else span)

    def __call__(self, *args: Any) -> Call:
        """``fn(a, b)`` builds ``Call(fn, [a, b])``."""
        return Call(self, list(args))

    def with_attr(self, key: str, value: Any) -> Function:
        """A copy with one attribute set: ``f.with_attr("Composite", "dnnl.conv2d")``."""
        return self.with_fields(attrs=self.attrs.with_updates(**{key: value}))

    def with_attrs(self, items: Mapping[str, Any]) -> Function:
        return self.with_fields(attrs=self.attrs.with_updates(**dict(items)))

    def without_attrs(self, *keys: str) -> Function:
        return self.with_fields(attrs=self.attrs.without(*keys))


class Let(Expr):
    """``let var = value; body``."""

    __slots__ = ("var", "value", "body")

    var: Var
    value: Expr
    body: Expr

    def __init__(self, var: Var, value: Any, body: Any, span: Span | None = None) -> None:
        if not isinstance(var, Var):
            raise IRError(f"Let binds a relay Var, got {var!r}")
        _set(self, "var", var)
        _set(self, "value", _as_expr(value, "Let.value"))
        _set(self, "body", _as_expr(body, "Let.body"))
        _set(self, "_checked_type", None)
        _set(self, "span", span)

    def with_fields(
        self,
        var: Var | None = None,
        value: Expr | None = None,
        body: Expr | None = None,
        span: Any = ...,
    ):
        v = self.var if var is None else var
        val = self.value if value is None else value
        b = self.body if body is None else body
        if v is self.var and val is self.value and b is self.body:
            return self
        return Let(v, val, b, self.span if span is ... else span)


class If(Expr):
    """``if (cond) { true_branch } else { false_branch }``."""

    __slots__ = ("cond", "true_branch", "false_branch")

    cond: Expr
    true_branch: Expr
    false_branch: Expr

    def __init__(self, cond: Any, true_branch: Any, false_branch: Any, span: Span | None = None):
        _set(self, "cond", _as_expr(cond, "If.cond"))
        _set(self, "true_branch", _as_expr(true_branch, "If.true_branch"))
        _set(self, "false_branch", _as_expr(false_branch, "If.false_branch"))
        _set(self, "_checked_type", None)
        _set(self, "span", span)

    def with_fields(
        self,
        cond: Expr | None = None,
        true_branch: Expr | None = None,
        false_branch: Expr | None = None,
        span: Any = ...,
    ):
        c = self.cond if cond is None else cond
        t = self.true_branch if true_branch is None else true_branch
        f = self.false_branch if false_branch is None else false_branch
        if c is self.cond and t is self.true_branch and f is self.false_branch:
            return self
        return If(c, t, f, self.span if span is ... else span)


class GlobalVar(Expr):
    """The name of a global function in an :class:`IRModule`."""

    __slots__ = ("name_hint",)

    name_hint: str

    def __init__(self, name_hint: str, span: Span | None = None) -> None:
        _set(self, "name_hint", str(name_hint))
        _set(self, "_checked_type", None)
        _set(self, "span", span)

    def __call__(self, *args: Any) -> Call:
        """``gv(a, b)`` builds a call of the global function."""
        return Call(self, list(args))

    def with_fields(self, **_: Any) -> GlobalVar:
        return self


class TupleWrapper:
    """The multi-output result of ops like ``nn.batch_norm``: index it for the fields.

    ``relay.nn.batch_norm(...)[0]`` is ``TupleGetItem(call, 0)``.
    """

    __slots__ = ("tuple_value", "size")

    def __init__(self, tuple_value: Expr, size: int) -> None:
        self.tuple_value = tuple_value
        self.size = size

    def astuple(self) -> Expr:
        return self.tuple_value

    def astext(self, show_meta_data: bool = True, annotate: Any = None) -> str:
        return self.tuple_value.astext(show_meta_data, annotate)

    def __getitem__(self, index: int) -> TupleGetItem:
        if not -self.size <= index < self.size:
            raise IndexError(f"tuple index {index} out of range for {self.size} fields")
        return TupleGetItem(self.tuple_value, index % self.size)

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        return (self[i] for i in range(self.size))

    def __str__(self) -> str:
        return str(self.tuple_value)

    __repr__ = __str__


def const(value: Any, dtype: Any = None, span: Span | None = None) -> Constant:
    """A constant from a Python number, list or NumPy array.

    Python floats become ``float32`` and ints ``int32`` unless ``dtype`` says
    otherwise (as in TVM).

    >>> const(1.0).data.dtype
    'float32'
    """
    from relaykit.runtime.ndarray import NDArray

    if isinstance(value, NDArray):
        value = value.numpy()
    if dtype is None:
        arr = np.asarray(value)
        if not isinstance(value, (np.ndarray, np.generic)):
            if arr.dtype == np.float64:
                arr = arr.astype("float32")
            elif arr.dtype == np.int64:
                arr = arr.astype("int32")
    else:
        from .types import check_dtype

        arr = np.asarray(value, dtype=check_dtype(dtype))
    return Constant(arr, span)
