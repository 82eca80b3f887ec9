"""The one declaration of each IR node's fields, and what is derived from it.

A node class names its fields once, in order, in its class body, the way
``ast.AST`` subclasses list ``_fields`` (and as ``dataclasses`` read annotated
class attributes)::

    @node_class
    class Call(Expr):
        op: Expr = child_field()
        args: tuple[Expr, ...] = children_field()
        attrs: Attrs = data_field()
        type_args: tuple[Type, ...] = data_field(compare=False)

``child_field`` is one sub-expression, ``children_field`` a tuple of them and
``data_field`` anything else (a name, an index, attributes, a type). A binder
(``binds=True``) introduces variables: a function's parameters, a let's variable.

:func:`node_class` turns the declaration into the class's ``__slots__`` and its
``_fields`` (the field names, as in ``ast``), and, once per class, compiles the
accessors the hot paths use: the children of a node, a node rebuilt with new
children, and the unvalidated constructor ``unchecked``. Like ``dataclasses``
it generates their source from the declaration, so each is straight-line code.
Traversal, structural equality and hashing, ``with_fields`` and the printer all
read the declaration; none of them spells out a node's layout again.

>>> from relaykit.ir import Call
>>> Call._fields
('op', 'args', 'attrs', 'type_args')
>>> [f.name for f in Call._layout if f.is_child]
['op', 'args']
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any, TypeVar

from relaykit.errors import IRError

_C = TypeVar("_C")

__all__ = [
    "FieldSpec",
    "node_class",
    "register_node_class",
    "child_field",
    "children_field",
    "data_field",
    "CHILDREN_OF",
    "REBUILD_OF",
    "DATA_OF",
]

CHILD = "child"
CHILDREN = "children"
DATA = "data"


class FieldSpec:
    """One declared field: its name (filled in by :func:`node_class`) and kind."""

    __slots__ = (
        "name", "kind", "optional", "compare", "binds", "is_child", "is_sequence", "keyword"
    )  # fmt: skip

    def __init__(
        self, kind: str, optional: bool, compare: bool, binds: bool, keyword: str = ""
    ) -> None:
        self.name = ""
        #: the constructor's keyword for the field ("" when it is passed by position)
        self.keyword = keyword
        self.kind = kind
        self.optional = optional
        self.compare = compare
        self.binds = binds
        #: whether the field holds sub-expressions (one, or a tuple of them)
        self.is_child = kind != DATA
        self.is_sequence = kind == CHILDREN

    def __repr__(self) -> str:
        return f"FieldSpec({self.name!r}, {self.kind})"


def child_field(*, binds: bool = False) -> Any:
    """A field holding one sub-expression (``binds``: it introduces a variable)."""
    return FieldSpec(CHILD, optional=False, compare=True, binds=binds)


def children_field(*, binds: bool = False) -> Any:
    """A field holding a tuple of sub-expressions."""
    return FieldSpec(CHILDREN, optional=False, compare=True, binds=binds)


def data_field(*, optional: bool = False, compare: bool = True, keyword: str = "") -> Any:
    """A field holding a value that is not an expression. ``optional``: ``None`` is a
    meaningful value (so ``with_fields(x=None)`` sets it). ``compare=False``: structural
    equality and hashing ignore it. ``keyword``: the constructor takes the field by
    this keyword rather than by position (such fields come last)."""
    return FieldSpec(DATA, optional=optional, compare=compare, binds=False, keyword=keyword)


#: node class -> its children accessor, for the traversal hot paths
CHILDREN_OF: dict[type, Callable[[Any], tuple[Any, ...]]] = {}
#: node class -> ``rebuild(node, new)``: the node with each child ``c`` replaced by ``new(c)``
REBUILD_OF: dict[type, Callable[[Any, Callable[[Any], Any]], Any]] = {}
#: node class -> the values of its compared data fields, as a tuple (for hashing)
DATA_OF: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _no_children(node: Any) -> tuple[Any, ...]:
    return ()


def _same_node(node: Any, new: Callable[[Any], Any]) -> Any:
    return node


def _data_getter(layout: tuple[FieldSpec, ...]) -> Callable[[Any], tuple[Any, ...]]:
    names = [f.name for f in layout if f.compare and not f.is_child]
    if not names:
        return _no_children
    if len(names) == 1:
        get_one = operator.attrgetter(names[0])
        return lambda node: (get_one(node),)
    return operator.attrgetter(*names)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _compile(source: str, name: str, env: dict[str, Any]) -> Any:
    scope: dict[str, Any] = {}
    exec(compile(source, f"<relaykit.ir.fields: {name}>", "exec"), env, scope)
    return scope[name]


def _children_source(layout: tuple[FieldSpec, ...]) -> str | None:
    kids = [f for f in layout if f.is_child]
    if not kids:
        return None
    if len(kids) == 1 and kids[0].is_sequence:
        body = f"e.{kids[0].name}"
    else:
        parts = [f"*e.{f.name}" if f.is_sequence else f"e.{f.name}" for f in kids]
        body = "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    return f"def children(e):\n    return {body}\n"


def _rebuild_source(layout: tuple[FieldSpec, ...]) -> str | None:
    if not any(f.is_child for f in layout):
        return None
    lines = ["def rebuild(e, new):"]
    same: list[str] = []
    args: list[str] = []
    for f in layout:
        n = f.name
        if f.kind == CHILD:
            lines.append(f"    o_{n} = e.{n}")
            lines.append(f"    n_{n} = new(o_{n})")
            same.append(f"n_{n} is o_{n}")
            args.append(f"n_{n}")
        elif f.kind == CHILDREN:
            lines.append(f"    o_{n} = e.{n}")
            lines.append(f"    n_{n} = [new(c) for c in o_{n}]")
            same.append(f"all(map(_is, n_{n}, o_{n}))")
            args.append(f"n_{n}")
        else:
            args.append(f"{f.keyword}=e.{n}" if f.keyword else f"e.{n}")
    lines.append(f"    if {' and '.join(same)}:")
    lines.append("        return e")
    lines.append(f"    return type(e)({', '.join(args)}, span=e.span)")
    return "\n".join(lines) + "\n"


def _unchecked_source(layout: tuple[FieldSpec, ...]) -> str:
    params = ", ".join(f.name for f in layout)
    lines = [f"def unchecked(cls, {params}, *, span=None, checked_type=None):", "    e = _new(cls)"]
    lines.extend(f"    _set(e, {f.name!r}, {f.name})" for f in layout)
    lines.append("    _set(e, 'span', span)")
    lines.append("    _set(e, '_checked_type', checked_type)")
    lines.append("    return e")
    return "\n".join(lines) + "\n"


def _with_fields_source(layout: tuple[FieldSpec, ...]) -> str:
    """``with_fields`` for one class: see ``Expr.with_fields`` for what it does."""
    params = ", ".join(f"{f.name}=..." for f in layout)
    lines = [
        f"def with_fields(self, *, span=..., {params}, **unknown):",
        "    if unknown:",
        "        _unknown_field(self, unknown)",
        "    changed = span is not ... and span is not self.span",
    ]
    for f in layout:
        n = f.name
        keep = f"{n} is ..." if f.optional else f"{n} is ... or {n} is None"
        lines.append(f"    if {keep}:")
        lines.append(f"        {n} = self.{n}")
        if f.is_sequence:
            lines.append("    else:")
            lines.append(f"        {n} = tuple({n})")
            lines.append(f"        o = self.{n}")
            lines.append(f"        if len({n}) != len(o) or not all(map(_is, {n}, o)):")
            lines.append("            changed = True")
        elif f.is_child:
            lines.append(f"    elif {n} is not self.{n}:")
            lines.append("        changed = True")
        else:
            lines.append(f"    elif not _same_data({n}, self.{n}):")
            lines.append("        changed = True")
    lines.append("    if not changed:")
    lines.append("        return self")
    args = ", ".join(f"{f.keyword}={f.name}" if f.keyword else f.name for f in layout)
    lines.append(f"    return type(self)({args}, span=self.span if span is ... else span)")
    return "\n".join(lines) + "\n"


def _same_data(new: Any, old: Any) -> bool:
    return new is old or (type(new) in (int, str) and new == old)


def _unknown_field(node: Any, unknown: dict[str, Any]) -> None:
    raise IRError(
        f"{type(node).__name__} has no field {next(iter(unknown))!r}; "
        f"its fields are {', '.join(type(node)._fields)}"
    )


_ENV: dict[str, Any] = {
    "_new": object.__new__,
    "_set": object.__setattr__,
    "_is": operator.is_,
    "_same_data": _same_data,
    "_unknown_field": _unknown_field,
}


def node_class(cls: type[_C]) -> type[_C]:
    """Class decorator: build a node class from its field declaration.

    Like ``dataclasses.dataclass(slots=True)``, it makes the class again with
    ``__slots__`` named by the declared fields (a metaclass would do it in one
    step, but would make every ``isinstance`` check on a node twice as slow).
    The new class records its ``_layout`` (the :class:`FieldSpec` objects),
    ``_fields`` (their names, as in ``ast``) and ``unchecked``; the accessors are
    compiled when the class is created (see :func:`register_node_class`).
    """
    own: list[FieldSpec] = []
    ns = dict(cls.__dict__)
    for key, value in cls.__dict__.items():
        if isinstance(value, FieldSpec):
            value.name = key
            own.append(value)
            del ns[key]
    ns.pop("__dict__", None)
    ns.pop("__weakref__", None)
    extra = tuple(cls.__dict__.get("__slots__", ()))
    for name in extra:
        ns.pop(name, None)  # the old class's slot descriptors
    ns["__slots__"] = (*(f.name for f in own), *extra)
    inherited: tuple[FieldSpec, ...] = getattr(cls, "_layout", ())
    layout = (*inherited, *own)
    ns["_layout"] = layout
    ns["_fields"] = tuple(f.name for f in layout)
    ns.setdefault("_visitor_name", "visit_" + _snake(cls.__name__))
    if layout:
        unchecked = _compile(_unchecked_source(layout), "unchecked", _ENV)
        unchecked.__doc__ = _unchecked_doc(cls.__name__, layout)
        unchecked.__qualname__ = f"{cls.__qualname__}.unchecked"
        ns["unchecked"] = classmethod(unchecked)
        if "with_fields" not in ns:
            with_fields = _compile(_with_fields_source(layout), "with_fields", _ENV)
            with_fields.__doc__ = "This node with the given fields replaced (see Expr.with_fields)."
            with_fields.__qualname__ = f"{cls.__qualname__}.with_fields"
            ns["with_fields"] = with_fields
    metaclass: Any = type(cls)
    new: Any = metaclass(cls.__name__, cls.__bases__, ns)
    new.__qualname__ = cls.__qualname__
    return new


def register_node_class(cls: type) -> None:
    """Compile the accessors of a node class (and of any subclass) from its layout.

    ``Expr.__init_subclass__`` calls this for every node class, so a subclass
    that declares no fields of its own traverses like its base.
    """
    if any(isinstance(v, FieldSpec) for v in cls.__dict__.values()):
        return  # the class as written, before node_class makes it again
    layout: tuple[FieldSpec, ...] = getattr(cls, "_layout", ())
    src = _children_source(layout)
    CHILDREN_OF[cls] = _no_children if src is None else _compile(src, "children", _ENV)
    src = _rebuild_source(layout)
    REBUILD_OF[cls] = _same_node if src is None else _compile(src, "rebuild", _ENV)
    DATA_OF[cls] = _data_getter(layout)


def _unchecked_doc(name: str, layout: tuple[FieldSpec, ...]) -> str:
    fields = ", ".join(f.name for f in layout)
    return (
        f"``{name}({fields})`` built without validation, with its checked type set.\n\n"
        "For passes that build many nodes from parts already known to be valid:\n"
        "sequences must already be tuples and attrs an Attrs. ``checked_type`` is\n"
        "trusted; pass it only when it is what the type checker would compute."
    )
