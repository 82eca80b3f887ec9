"""Pattern nodes: small frozen objects with operator sugar.

A pattern describes a piece of dataflow graph. Patterns are immutable and,
like expressions, compared by identity: using the *same* pattern object twice
means "the same expression node", using two ``wildcard()`` calls means "any two
nodes".

>>> from relaykit.dataflow_pattern import is_op, wildcard, is_constant
>>> conv = is_op("nn.conv2d")(wildcard(), is_constant())
>>> pat = is_op("nn.relu")(conv.optional(lambda x: is_op("nn.bias_add")(x, wildcard())))
>>> str(conv)
"is_op('nn.conv2d')(wildcard(), is_constant())"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, overload

from relaykit.errors import IRError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Expr, TupleWrapper
from relaykit.ir.op import get_op
from relaykit.ir.types import Type, check_dtype

__all__ = [
    "PatternError",
    "DFPattern",
    "ExprPattern",
    "VarPattern",
    "ConstantPattern",
    "WildcardPattern",
    "CallPattern",
    "FunctionPattern",
    "TuplePattern",
    "TupleGetItemPattern",
    "IfPattern",
    "LetPattern",
    "AltPattern",
    "AttrPattern",
    "TypePattern",
    "DataTypePattern",
    "ShapePattern",
    "DominatorPattern",
    "MatchExplanation",
    "PatternOperations",
    "install_operations",
]


class PatternError(IRError):
    """A pattern was built or used incorrectly (wrong argument kind, missing pattern...)."""


class PatternIndexError(PatternError, IndexError):
    """An index past the fields of an ``is_tuple`` pattern (an ``IndexError``, so that
    iterating over the pattern stops there)."""


def as_pattern(value: Any, where: str) -> DFPattern:
    """``value`` as a pattern: patterns pass through, expressions become ``is_expr(value)``."""
    if isinstance(value, DFPattern):
        return value
    if isinstance(value, TupleWrapper):
        value = value.astuple()
    if isinstance(value, Expr):
        return ExprPattern(value)
    raise PatternError(
        f"{where} must be a pattern (wildcard(), is_op(...), ...) or a relay expression, "
        f"got {type(value).__name__}: {value!r}"
    )


def _pattern_list(values: Any, where: str) -> tuple[DFPattern, ...] | None:
    if values is None:
        return None
    if isinstance(values, (DFPattern, Expr)) or not isinstance(values, Sequence):
        raise PatternError(f"{where} must be a list of patterns or None, got {values!r}")
    return tuple(as_pattern(v, f"{where}[{i}]") for i, v in enumerate(values))


class DFPattern:
    """Base class of all patterns; holds the operator sugar.

    ``p(a, b)`` is a call pattern, ``p | q`` an alternative, ``p + q`` is
    ``is_op("add")(p, q)``; ``p.has_attr``, ``p.has_type``, ``p.has_dtype``,
    ``p.has_shape`` add constraints; ``p.optional(f)`` is ``p | f(p)``.
    """

    __slots__ = ()

    # -- construction sugar ------------------------------------------------
    def __call__(self, *args: Any) -> CallPattern:
        if len(args) == 1 and args[0] is None:
            return CallPattern(self, None)
        return CallPattern(self, list(args))

    def __or__(self, other: Any) -> AltPattern:
        return AltPattern(self, as_pattern(other, "right side of |"))

    def __ror__(self, other: Any) -> AltPattern:
        return AltPattern(as_pattern(other, "left side of |"), self)

    def __add__(self, other: Any) -> CallPattern:
        return _op_pattern("add")(self, other)

    def __sub__(self, other: Any) -> CallPattern:
        return _op_pattern("subtract")(self, other)

    def __mul__(self, other: Any) -> CallPattern:
        return _op_pattern("multiply")(self, other)

    def __truediv__(self, other: Any) -> CallPattern:
        return _op_pattern("divide")(self, other)

    def has_attr(self, attrs: Mapping[str, Any]) -> AttrPattern:
        """Require attributes: of the call, of the function, or of the operator (``TOpPattern``)."""
        return AttrPattern(self, attrs)

    def has_type(self, ttype: Type) -> TypePattern:
        """Require the matched expression's type to equal ``ttype``."""
        return TypePattern(self, ttype)

    def has_dtype(self, dtype: Any) -> DataTypePattern:
        """Require the matched expression to be a tensor of element type ``dtype``."""
        return DataTypePattern(self, dtype)

    def has_shape(self, shape: Sequence[int]) -> ShapePattern:
        """Require the matched expression to be a tensor of shape ``shape``."""
        return ShapePattern(self, shape)

    def dominates(self, parent: DFPattern, path: DFPattern | None = None) -> DominatorPattern:
        """This pattern (the child) dominates ``parent`` through nodes matching ``path``."""
        return DominatorPattern(parent, WildcardPattern() if path is None else path, self)

    def optional(self, option_constructor: Callable[[DFPattern], DFPattern]) -> AltPattern:
        """``self | option_constructor(self)``: match with or without a trailing op.

        >>> from relaykit.dataflow_pattern import is_op, wildcard
        >>> conv = is_op("nn.conv2d")(wildcard(), wildcard())
        >>> print(conv.optional(is_op("nn.relu")))  # doctest: +NORMALIZE_WHITESPACE
        (is_op('nn.conv2d')(wildcard(), wildcard()) |
         is_op('nn.relu')(is_op('nn.conv2d')(wildcard(), wildcard())))
        """
        option = option_constructor(self)
        if not isinstance(option, DFPattern):
            raise PatternError(
                f"optional(...) needs a function returning a pattern, got {option!r}"
            )
        return AltPattern(self, option)

    def same_as(self, other: object) -> bool:
        """Whether ``other`` is this very pattern (TVM's ``ObjectRef.same_as``)."""
        return self is other

    # -- using the pattern ---------------------------------------------------
    @overload
    def match(self, expr: Expr, explain: Literal[False] = False) -> bool: ...

    @overload
    def match(self, expr: Expr, explain: Literal[True]) -> MatchExplanation: ...

    def match(self, expr: Expr, explain: bool = False) -> bool | MatchExplanation:
        """Whether ``expr`` matches; with ``explain=True`` a
        :class:`~relaykit.dataflow_pattern.MatchResult` (truthy when matched) that says
        why not and where.

        >>> from relaykit import relay
        >>> from relaykit.dataflow_pattern import is_op, wildcard
        >>> x = relay.var("x")
        >>> print(is_op("nn.relu")(wildcard()).match(relay.tanh(x), explain=True))
        is_op('nn.relu') expected op nn.relu but found tanh at root
        """
        ops = _operations()
        return ops.match_explain(self, expr) if explain else ops.match(self, expr)

    def partition(
        self,
        expr: Expr,
        attrs: Mapping[str, Any] | None = None,
        check: Callable[[Expr], bool] | None = None,
    ) -> Expr:
        """Replace every match by a call of a function made of the matched nodes."""
        return _operations().partition(self, expr, attrs, check)

    # -- printing --------------------------------------------------------------
    def astext(self, show_meta_data: bool = True, annotate: Any = None) -> str:
        return _operations().to_str(self)

    def __str__(self) -> str:
        ops = _INSTALLED.get("operations")
        return f"<{type(self).__name__}>" if ops is None else ops.to_str(self)

    def __repr__(self) -> str:
        return self.__str__()


class MatchExplanation(Protocol):
    """What ``pattern.match(expr, explain=True)`` returns
    (:class:`~relaykit.dataflow_pattern.MatchResult`): truthy when the pattern matched;
    on failure the reason, the node and the sub-pattern."""

    @property
    def matched(self) -> bool: ...

    @property
    def message(self) -> str: ...

    @property
    def node(self) -> Expr | None: ...

    @property
    def failed_pattern(self) -> DFPattern | None: ...

    @property
    def reason(self) -> str: ...

    def __bool__(self) -> bool: ...


@dataclass(frozen=True)
class PatternOperations:
    """The algorithms :class:`DFPattern`'s TVM methods delegate to: ``match``,
    ``match(explain=True)``, ``partition`` and the text of a pattern.

    They dispatch on the pattern classes of this module, so they live in the modules
    built on it (matcher, explain, partition, printer) and are handed down here when
    the package is imported (:func:`install_operations`), as TVM's ``DFPattern``
    methods call functions its C++ runtime registers.
    """

    match: Callable[[DFPattern, Expr], bool]
    match_explain: Callable[[DFPattern, Expr], MatchExplanation]
    partition: Callable[
        [DFPattern, Expr, Mapping[str, Any] | None, Callable[[Expr], bool] | None], Expr
    ]
    to_str: Callable[[DFPattern], str]


_INSTALLED: dict[str, PatternOperations] = {}


def install_operations(operations: PatternOperations) -> None:
    """Make :class:`DFPattern`'s methods run ``operations`` (``relaykit.dataflow_pattern``
    installs the matcher, explainer, partitioner and printer when it is imported)."""
    _INSTALLED["operations"] = operations


def _operations() -> PatternOperations:
    ops = _INSTALLED.get("operations")
    if ops is None:  # pragma: no cover - the package installs them before any user code runs
        raise PatternError(
            "the pattern operations are not installed: import relaykit.dataflow_pattern"
        )
    return ops


def _op_pattern(name: str) -> ExprPattern:
    return ExprPattern(get_op(name))


_set = object.__setattr__


_node = dataclass(frozen=True, eq=False, repr=False, init=False)
PatternLike = Any  # a DFPattern, or a relay expression (matched with is_expr)


@_node
class ExprPattern(DFPattern):
    """Matches an expression structurally equal to ``expr`` (an ``Op`` for ``is_op``)."""

    expr: Expr

    def __init__(self, expr: Expr) -> None:
        value = expr.astuple() if isinstance(expr, TupleWrapper) else expr
        if not isinstance(value, Expr):
            raise PatternError(f"is_expr(...) needs a relay expression, got {value!r}")
        _set(self, "expr", value)


@_node
class VarPattern(DFPattern):
    """Matches a variable; a non-empty ``name`` must equal its ``name_hint``."""

    name: str

    def __init__(self, name: str = "") -> None:
        if not isinstance(name, str):
            raise PatternError(f"is_var(name) needs a string name, got {name!r}")
        _set(self, "name", name)

    @property
    def name_hint(self) -> str:
        return self.name


@_node
class ConstantPattern(DFPattern):
    """Matches any constant."""

    def __init__(self) -> None:
        pass


@_node
class WildcardPattern(DFPattern):
    """Matches anything, or, once redirected, what its target pattern matches.

    :meth:`redirect_to` is how recursive patterns are built (as in TVM): a
    wildcard used inside a pattern is pointed at the pattern itself afterwards.

    >>> from relaykit.dataflow_pattern import is_op, wildcard
    >>> inner = wildcard()
    >>> casts = is_op("cast")(inner) | is_op("nn.relu")(wildcard())
    >>> inner.redirect_to(casts)  # cast(cast(...(relu(x))))
    >>> inner.redirect is casts
    True
    """

    redirect: DFPattern | None

    def __init__(self) -> None:
        _set(self, "redirect", None)

    def redirect_to(self, target: PatternLike) -> None:
        """From now on match exactly what ``target`` matches (``target`` may contain
        this wildcard: the pattern becomes recursive). Only one redirection is allowed."""
        if self.redirect is not None:
            raise PatternError(
                "this wildcard is already redirected: redirect_to(...) may be called once"
            )
        _set(self, "redirect", as_pattern(target, "redirect_to's target"))


@_node
class CallPattern(DFPattern):
    """Matches a call whose callee matches ``op`` and arguments match ``args``
    (``args=None``: any number of arguments)."""

    op: DFPattern
    args: tuple[DFPattern, ...] | None

    def __init__(self, op: PatternLike, args: Sequence[PatternLike] | None) -> None:
        _set(self, "op", as_pattern(op, "the callee of a call pattern"))
        _set(self, "args", _pattern_list(args, "call pattern arguments"))


@_node
class FunctionPattern(DFPattern):
    """Matches a function literal (``params=None``: any parameters)."""

    params: tuple[DFPattern, ...] | None
    body: DFPattern

    def __init__(self, params: Sequence[PatternLike] | None, body: PatternLike) -> None:
        _set(self, "params", _pattern_list(params, "function pattern parameters"))
        _set(self, "body", as_pattern(body, "function pattern body"))


@_node
class TuplePattern(DFPattern):
    """Matches a tuple (``fields=None``: any number of fields)."""

    fields: tuple[DFPattern, ...] | None

    def __init__(self, fields: Sequence[PatternLike] | None) -> None:
        _set(self, "fields", _pattern_list(fields, "is_tuple fields"))

    def __getitem__(self, index: int) -> DFPattern:
        if self.fields is None:
            raise PatternError("is_tuple(None) has no fields to index")
        if index >= len(self.fields):
            raise PatternIndexError("TuplePattern index out of range")
        return self.fields[index]

    def __len__(self) -> int:
        return 0 if self.fields is None else len(self.fields)


@_node
class TupleGetItemPattern(DFPattern):
    """Matches ``tuple.index``; ``index=None`` (or TVM's ``-1``) matches any index."""

    tuple: DFPattern
    index: int | None

    def __init__(self, tuple_value: PatternLike, index: int | None = None) -> None:
        if index == -1:
            index = None
        if index is not None and (
            not isinstance(index, int) or isinstance(index, bool) or index < 0
        ):
            raise PatternError(f"tuple index must be a non-negative int or None, got {index!r}")
        _set(self, "tuple", as_pattern(tuple_value, "is_tuple_get_item's tuple"))
        _set(self, "index", index)


@_node
class IfPattern(DFPattern):
    """Matches ``if (cond) { true_branch } else { false_branch }``."""

    cond: DFPattern
    true_branch: DFPattern
    false_branch: DFPattern

    def __init__(self, cond: PatternLike, true_branch: PatternLike, false_branch: PatternLike):
        _set(self, "cond", as_pattern(cond, "is_if cond"))
        _set(self, "true_branch", as_pattern(true_branch, "is_if true_branch"))
        _set(self, "false_branch", as_pattern(false_branch, "is_if false_branch"))


@_node
class LetPattern(DFPattern):
    """Matches ``let var = value; body``."""

    var: DFPattern
    value: DFPattern
    body: DFPattern

    def __init__(self, var: PatternLike, value: PatternLike, body: PatternLike) -> None:
        _set(self, "var", as_pattern(var, "is_let var"))
        _set(self, "value", as_pattern(value, "is_let value"))
        _set(self, "body", as_pattern(body, "is_let body"))


@_node
class AltPattern(DFPattern):
    """Matches ``left`` or, failing that, ``right``."""

    left: DFPattern
    right: DFPattern

    def __init__(self, left: PatternLike, right: PatternLike) -> None:
        _set(self, "left", as_pattern(left, "left side of |"))
        _set(self, "right", as_pattern(right, "right side of |"))


@_node
class AttrPattern(DFPattern):
    """``pattern`` with attribute constraints, checked against call attributes,
    function attributes, or operator attributes (e.g. ``TOpPattern``)."""

    pattern: DFPattern
    attrs: Attrs

    def __init__(self, pattern: PatternLike, attrs: Mapping[str, Any]) -> None:
        if not isinstance(attrs, Mapping):
            raise PatternError(f"has_attr(...) needs a dict of attributes, got {attrs!r}")
        _set(self, "pattern", as_pattern(pattern, "has_attr's pattern"))
        _set(self, "attrs", attrs if isinstance(attrs, Attrs) else Attrs(attrs))


@_node
class TypePattern(DFPattern):
    """``pattern`` whose matched expression has type ``type``."""

    pattern: DFPattern
    type: Type

    def __init__(self, pattern: PatternLike, ttype: Type) -> None:
        if not isinstance(ttype, Type):
            raise PatternError(
                f"has_type(...) needs a relay type such as TensorType((1, 3), 'float32'), "
                f"got {ttype!r}"
            )
        _set(self, "pattern", as_pattern(pattern, "has_type's pattern"))
        _set(self, "type", ttype)


@_node
class DataTypePattern(DFPattern):
    """``pattern`` whose matched expression is a tensor of element type ``dtype``."""

    pattern: DFPattern
    dtype: str

    def __init__(self, pattern: PatternLike, dtype: Any) -> None:
        _set(self, "pattern", as_pattern(pattern, "has_dtype's pattern"))
        _set(self, "dtype", check_dtype(dtype))


@_node
class ShapePattern(DFPattern):
    """``pattern`` whose matched expression is a tensor of shape ``shape``."""

    pattern: DFPattern
    shape: tuple[int, ...]

    def __init__(self, pattern: PatternLike, shape: Sequence[int]) -> None:
        try:
            dims = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise PatternError(f"has_shape(...) needs a list of ints, got {shape!r}") from None
        _set(self, "pattern", as_pattern(pattern, "has_shape's pattern"))
        _set(self, "shape", dims)


@_node
class DominatorPattern(DFPattern):
    """``child`` post-dominates ``parent``, every node in between matching ``path``."""

    parent: DFPattern
    path: DFPattern
    child: DFPattern

    def __init__(self, parent: PatternLike, path: PatternLike, child: PatternLike) -> None:
        _set(self, "parent", as_pattern(parent, "dominates parent"))
        _set(self, "path", as_pattern(path, "dominates path"))
        _set(self, "child", as_pattern(child, "dominates child"))


#: pattern class -> its sub-patterns in TVM's visiting order
_CHILDREN_OF: dict[type, Callable[[Any], tuple[DFPattern, ...]]] = {
    CallPattern: lambda p: (p.op, *(p.args or ())),
    AttrPattern: lambda p: (p.pattern,),
    TypePattern: lambda p: (p.pattern,),
    DataTypePattern: lambda p: (p.pattern,),
    ShapePattern: lambda p: (p.pattern,),
    AltPattern: lambda p: (p.left, p.right),
    TuplePattern: lambda p: p.fields or (),
    TupleGetItemPattern: lambda p: (p.tuple,),
    FunctionPattern: lambda p: (*(p.params or ()), p.body),
    DominatorPattern: lambda p: (p.parent, p.path, p.child),
    IfPattern: lambda p: (p.cond, p.true_branch, p.false_branch),
    LetPattern: lambda p: (p.var, p.value, p.body),
    # a redirected wildcard stands for its target (the pattern may be recursive)
    WildcardPattern: lambda p: () if p.redirect is None else (p.redirect,),
}


def pattern_children(pattern: DFPattern) -> tuple[DFPattern, ...]:
    """The sub-patterns of ``pattern`` in TVM's visiting order."""
    get = _CHILDREN_OF.get(type(pattern))
    return () if get is None else tuple(get(pattern))


def pattern_post_order(root: DFPattern) -> list[DFPattern]:
    """Every sub-pattern of ``root`` once, children first (TVM's pattern graph order)."""
    out: list[DFPattern] = []
    seen: set[int] = set()
    stack: list[tuple[DFPattern, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            out.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child in reversed(pattern_children(node)):
            if id(child) not in seen:
                stack.append((child, False))
    return out
