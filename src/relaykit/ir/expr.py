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
import operator
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from relaykit.errors import ImmutableError, IRError, IRIndexError, TypeNotInferredError
from relaykit.runtime.ndarray import NDArray, array
from relaykit.target.virtual_device import FULLY_UNCONSTRAINED, VirtualDevice

from .attrs import Attrs
from .fields import (
    FieldSpec,
    child_field,
    children_field,
    data_field,
    node_class,
    register_node_class,
)
from .hooks import printer_hook
from .types import TensorType, Type, check_dtype

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
_E = TypeVar("_E", bound="Expr")
_set = object.__setattr__


class Span:
    """A source location: ``source_name:line:column`` (1-based), TVM's argument order
    ``Span(source_name, line, end_line, column, end_column)``."""

    __slots__ = ("source_name", "line", "column", "end_line", "end_column")

    def __init__(
        self, source_name: Any, line: int, end_line: int = 0, column: int = 0, end_column: int = 0
    ) -> None:
        self.source_name = source_name
        self.line = line
        self.column = column
        self.end_line = end_line or line
        self.end_column = end_column or column

    def same_as(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:
        return f"{self.source_name}:{self.line}:{self.column}"


class Expr:
    """Base class of every Relay expression.

    Each node class declares its fields once (see :mod:`relaykit.ir.fields`);
    ``_fields`` lists their names, as ``ast.AST`` does.
    """

    __slots__ = ("_checked_type", "span", "__weakref__")

    _checked_type: Type | None
    span: Span | None
    _layout: tuple[FieldSpec, ...] = ()
    _fields: tuple[str, ...] = ()
    _visitor_name: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        register_node_class(cls)

    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(
            f"{type(self).__name__} nodes are immutable; "
            "use with_fields(...) to make a changed copy"
        )

    # -- construction --------------------------------------------------------
    @classmethod
    def unchecked(
        cls: type[_E], *fields: Any, span: Span | None = None, checked_type: Type | None = None
    ) -> _E:
        """The node built from its fields (in ``_fields`` order) without validation.

        Each node class gets its own version, compiled from its field declaration.
        For passes that build many nodes from parts already known to be valid:
        sequences must already be tuples and attributes an ``Attrs``. The
        ``checked_type`` is trusted; give it only when it is the type the checker
        would compute (for example, the type of the node being rebuilt).

        >>> from relaykit.ir import Attrs, TensorType, Var, get_op
        >>> x = Var("x", TensorType((2,)))
        >>> ty = x.type_annotation
        >>> c = Call.unchecked(get_op("nn.relu"), (x,), Attrs({}), (), checked_type=ty)
        >>> c.args[0] is x, str(c.checked_type)
        (True, 'Tensor[(2), float32]')
        """
        raise IRError(f"{cls.__name__} declares no fields")

    def with_fields(self: _E, *, span: Any = ..., **changes: Any) -> _E:
        """This node with the given fields replaced, or the node itself when nothing
        changes (copy-on-write). A field left out, or given as ``None`` when ``None``
        is not a value it can hold, keeps its value. Each node class gets a
        straight-line version of this method compiled from its field declaration.

        >>> x = Var("x", TensorType((2,)))
        >>> t = Tuple([x, x])
        >>> t.with_fields(fields=[x, x]) is t, len(t.with_fields(fields=[x]).fields)
        (True, 1)
        """
        values: list[Any] = []
        changed = span is not ... and span is not self.span
        for f in type(self)._layout:
            old = getattr(self, f.name)
            new = changes.pop(f.name, ...)
            if new is ... or (new is None and not f.optional):
                values.append(old)
                continue
            if f.is_sequence:
                new = tuple(new)
                same = len(new) == len(old) and all(map(operator.is_, new, old))
            else:
                same = new is old or (type(new) in (int, str) and new == old)
            changed = changed or not same
            values.append(new)
        if changes:
            raise IRError(
                f"{type(self).__name__} has no field {next(iter(changes))!r}; "
                f"its fields are {', '.join(type(self)._fields)}"
            )
        if not changed:
            return self
        node_type: Any = type(self)
        return node_type(*values, span=self.span if span is ... else span)

    def __call__(self, *args: Any) -> Call:
        """``f(x, y)`` is the call ``Call(f, [x, y])``, as in TVM."""
        return Call(self, list(args))

    # -- types -------------------------------------------------------------
    @property
    def checked_type(self) -> Type:
        """The type inferred by ``relay.transform.InferType()``."""
        t = self._checked_type
        if t is None:
            raise TypeNotInferredError(
                f"checked_type of this {type(self).__name__} is not available yet: "
                "run relay.transform.InferType() on the module (or use "
                "relaykit.transform.InferTypeLocal(expr)) first"
            )
        return t

    @property
    def has_checked_type(self) -> bool:
        return self._checked_type is not None

    def set_checked_type(self: _E, ty: Type) -> _E:
        """Record ``ty`` as this node's checked type and return the node.

        For a pass that builds a node whose type it knows, typically a node rebuilt
        from one of the same type; the type checker stays the authority: use
        ``InferTypeLocal(expr)`` to compute a type. A node's type is written once:
        giving a typed node a different type raises :class:`IRError`.

        >>> x = Var("x", TensorType((2,)))
        >>> x.set_checked_type(x.type_annotation) is x
        True
        """
        if not isinstance(ty, Type):
            raise IRError(f"a checked type must be a Type, got {ty!r}")
        old = self._checked_type
        if old is not None and old is not ty and old != ty:
            raise IRError(
                f"this {type(self).__name__} already has checked type {old}; "
                f"it cannot become {ty} (build a new node instead)"
            )
        _set(self, "_checked_type", ty)
        return self

    def _set_checked_type(self, ty: Type | None) -> None:
        _set(self, "_checked_type", ty)

    def same_as(self, other: object) -> bool:
        """Whether ``other`` is this very node (TVM's ``ObjectRef.same_as``)."""
        return self is other

    # -- printing ----------------------------------------------------------
    def astext(self, show_meta_data: bool = True, annotate: Any = None) -> str:
        """This expression in Relay's text format."""
        return printer_hook().astext(self, show_meta_data=show_meta_data, annotate=annotate)

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


def as_virtual_device_field(value: Any, what: str) -> VirtualDevice:
    """The virtual device a ``virtual_device_`` field holds: ``None`` is the fully
    unconstrained one, a ``Device`` (``tvm.cpu()``) a device without a target."""
    if value is None:
        return FULLY_UNCONSTRAINED
    if isinstance(value, VirtualDevice):
        return value
    if hasattr(value, "device_type") and hasattr(value, "device_id"):
        return VirtualDevice(value)
    raise IRError(
        f"the virtual device of {what} must be a VirtualDevice or a device such as "
        f"tvm.cpu(), got {type(value).__name__}"
    )


def _as_attrs(attrs: Any) -> Attrs:
    if attrs is None:
        return _EMPTY_ATTRS
    if isinstance(attrs, Attrs):
        return attrs
    if isinstance(attrs, Mapping):
        return Attrs(attrs)
    raise IRError(f"attrs must be a mapping, got {type(attrs).__name__}")


@node_class
class Var(Expr):
    """A local variable; ``name_hint`` is only a hint (the printer makes names unique)."""

    name_hint: str = data_field()
    type_annotation: Type | None = data_field(optional=True)
    virtual_device_: VirtualDevice = data_field(keyword="virtual_device")

    def __init__(
        self,
        name_hint: str,
        type_annotation: Type | None = None,
        span: Span | None = None,
        virtual_device: Any = None,
    ):
        if type_annotation is not None and not isinstance(type_annotation, Type):
            raise IRError(
                f"type annotation of %{name_hint} must be a Type, got {type_annotation!r}"
            )
        _set(self, "name_hint", str(name_hint))
        _set(self, "type_annotation", type_annotation)
        _set(self, "virtual_device_", as_virtual_device_field(virtual_device, f"%{name_hint}"))
        _set(self, "_checked_type", None)
        _set(self, "span", span)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "virtual_device_":  # TVM scripts assign it (the one mutable field)
            _set(self, name, as_virtual_device_field(value, f"%{self.name_hint}"))
            return
        Expr.__setattr__(self, name, value)

    def virtual_device(self) -> VirtualDevice:
        """Where the variable's value lives (fully unconstrained when unknown)."""
        return self.virtual_device_

    @property
    def vid(self) -> Var:  # TVM spells the name as var.vid.name_hint
        return self


@node_class
class Constant(Expr):
    """A constant tensor; ``data`` is an :class:`relaykit.runtime.NDArray`."""

    data: NDArray = data_field()

    def __init__(self, data: Any, span: Span | None = None) -> None:
        nd = data if isinstance(data, NDArray) else array(data)
        _set(self, "data", nd)
        _set(self, "_checked_type", TensorType(nd.shape, nd.dtype))
        _set(self, "span", span)

    @property
    def is_scalar(self) -> bool:
        return len(self.data.shape) == 0


@node_class
class Call(Expr):
    """A call of an operator, a function or a global: ``op(args..., **attrs)``."""

    op: Expr = child_field()
    args: tuple[Expr, ...] = children_field()
    attrs: Attrs = data_field()
    type_args: tuple[Type, ...] = data_field(compare=False)

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

    def _set_type_args(self, type_args: Sequence[Type]) -> None:
        """Record the type arguments inference chose (like the checked type, a note
        on the node: ``type_args`` takes no part in structural equality)."""
        _set(self, "type_args", tuple(type_args))


@node_class
class Tuple(Expr):
    """A tuple of expressions."""

    fields: tuple[Expr, ...] = children_field()

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


@node_class
class TupleGetItem(Expr):
    """Projection ``tuple_value.index``."""

    _visitor_name = "visit_tuple_getitem"  # TVM's spelling

    tuple_value: Expr = child_field()
    index: int = data_field()

    def __init__(self, tuple_value: Any, index: int, span: Span | None = None) -> None:
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise IRError(f"TupleGetItem index must be an integer, got {index!r}")
        _set(self, "tuple_value", _as_expr(tuple_value, "TupleGetItem.tuple_value"))
        _set(self, "index", int(index))
        _set(self, "_checked_type", None)
        _set(self, "span", span)


@node_class
class Function(Expr):
    """A function: ``fn (params) -> ret_type { body }`` with frozen ``attrs``."""

    params: tuple[Var, ...] = children_field(binds=True)
    body: Expr = child_field()
    ret_type: Type | None = data_field(optional=True)
    type_params: tuple[Any, ...] = data_field(compare=False)
    attrs: Attrs = data_field()
    virtual_device_: VirtualDevice = data_field(keyword="virtual_device", compare=False)

    def __init__(
        self,
        params: Sequence[Var],
        body: Any,
        ret_type: Type | None = None,
        type_params: Sequence[Any] | None = None,
        attrs: Any = None,
        span: Span | None = None,
        virtual_device: Any = None,
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
        _set(self, "virtual_device_", as_virtual_device_field(virtual_device, "a function"))
        _set(self, "_checked_type", None)
        _set(self, "span", span)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "virtual_device_":  # TVM scripts assign it (the one mutable field)
            _set(self, name, as_virtual_device_field(value, "a function"))
            return
        Expr.__setattr__(self, name, value)

    def virtual_device(self) -> VirtualDevice:
        """Where the function's result lives (fully unconstrained when unknown)."""
        return self.virtual_device_

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


@node_class
class Let(Expr):
    """``let var = value; body``."""

    var: Var = child_field(binds=True)
    value: Expr = child_field()
    body: Expr = child_field()

    def __init__(self, var: Var, value: Any, body: Any, span: Span | None = None) -> None:
        if not isinstance(var, Var):
            raise IRError(f"Let binds a relay Var, got {var!r}")
        _set(self, "var", var)
        _set(self, "value", _as_expr(value, "Let.value"))
        _set(self, "body", _as_expr(body, "Let.body"))
        _set(self, "_checked_type", None)
        _set(self, "span", span)


@node_class
class If(Expr):
    """``if (cond) { true_branch } else { false_branch }``."""

    cond: Expr = child_field()
    true_branch: Expr = child_field()
    false_branch: Expr = child_field()

    def __init__(self, cond: Any, true_branch: Any, false_branch: Any, span: Span | None = None):
        _set(self, "cond", _as_expr(cond, "If.cond"))
        _set(self, "true_branch", _as_expr(true_branch, "If.true_branch"))
        _set(self, "false_branch", _as_expr(false_branch, "If.false_branch"))
        _set(self, "_checked_type", None)
        _set(self, "span", span)


@node_class
class GlobalVar(Expr):
    """The name of a global function in an :class:`IRModule`."""

    name_hint: str = data_field()

    def __init__(self, name_hint: str, span: Span | None = None) -> None:
        _set(self, "name_hint", str(name_hint))
        _set(self, "_checked_type", None)
        _set(self, "span", span)

    def __call__(self, *args: Any) -> Call:
        """``gv(a, b)`` builds a call of the global function."""
        return Call(self, list(args))


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
            raise IRIndexError(f"tuple index {index} out of range for {self.size} fields")
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

    Without ``dtype``, 64-bit floats and ints (Python numbers and lists, and
    NumPy ``float64`` / ``int64`` arrays) become ``float32`` / ``int32``, as in
    TVM; other NumPy dtypes and NDArrays keep theirs.

    >>> const(1.0).data.dtype, const(np.zeros(2)).data.dtype
    ('float32', 'float32')
    """
    if isinstance(value, NDArray):
        value = value.numpy()
        if dtype is None:
            return Constant(np.asarray(value), span)
    if dtype is None:
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            arr = arr.astype("float32")
        elif arr.dtype == np.int64:
            arr = arr.astype("int32")
    else:
        arr = np.asarray(value, dtype=check_dtype(dtype))
    return Constant(arr, span)
