"""Operator handles and the operator registry with open attribute tables.

Each operator is an :class:`Op` singleton: ``get_op("add") is get_op("add")``.
What an operator *means* lives in attribute tables beside it, keyed by name:
``"FTypeRelation"``, ``"FCompute"``, ``"TOpPattern"``, ``"target.dnnl"`` ...
A backend adds entries; it edits no operator.

>>> from relaykit.ir.op import OpRegistry
>>> reg = OpRegistry()
>>> op = reg.register("my.op", num_inputs=1)
>>> reg.set_attr("my.op", "target.foo", True)
>>> op.get_attr("target.foo")
True
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from relaykit.backends.record import target_of_key
from relaykit.backends.registry import backend_rule
from relaykit.errors import ArgumentError, IRError, OpNotFoundError
from relaykit.registry import Registry

from .expr import Expr
from .fields import data_field, node_class

__all__ = [
    "Op",
    "OpRegistry",
    "default_registry",
    "get_op",
    "register_op_attr",
    "list_op_names",
    "named_type_relations",
]

#: Type relations by name, for ``Op.add_type_rel("Broadcast")`` (TVM's built-in relation
#: names); the operator layer registers them.
named_type_relations: Registry[str, Callable[..., Any]] = Registry("type relation")

_set = object.__setattr__


@node_class
class Op(Expr):
    """A primitive operator, such as ``nn.conv2d``."""

    __slots__ = ("_registry",)

    _registry: OpRegistry

    name: str = data_field()

    def __init__(self, name: str, registry: OpRegistry) -> None:
        _set(self, "name", name)
        _set(self, "_registry", registry)
        _set(self, "_checked_type", None)
        _set(self, "span", None)

    def get_attr(self, key: str) -> Any:
        """The value of attribute ``key`` for this op, or ``None``."""
        return self._registry.get_attr(self.name, key)

    def has_attr(self, key: str) -> bool:
        return self._registry.get_attr(self.name, key) is not None

    @property
    def num_inputs(self) -> int:
        return self._registry.get_attr(self.name, "num_inputs")

    @property
    def attrs_schema(self) -> Mapping[str, Any]:
        return self._registry.get_attr(self.name, "attrs_schema") or {}

    @property
    def op_name(self) -> str:
        return self.name

    @property
    def support_level(self) -> int:
        """TVM's support level of the operator (1 basic ... 10 internal; 10 when unset)."""
        level = self._registry.get_attr(self.name, "support_level")
        return 10 if level is None else int(level)

    def with_fields(self, **_: Any) -> Op:
        return self

    # -- TVM's op-definition methods (``_op.get(name).set_num_inputs(1)`` ...) ----------
    def _set_attr(self, key: str, value: Any) -> None:
        self._registry.restore_attr(self.name, key, (value, 0))

    def set_attr(self, attr_name: str, value: Any, plevel: int = 10) -> None:
        """Set an attribute of this operator (TVM's ``Op.set_attr``); a higher ``plevel``
        overrides a lower one."""
        self._registry.set_attr(self.name, attr_name, value, plevel)

    def reset_attr(self, attr_name: str) -> None:
        self._registry.reset_attr(self.name, attr_name)

    def set_num_inputs(self, n: int) -> None:
        """Declare the number of inputs (TVM's ``OpNode.set_num_inputs``)."""
        self._set_attr("num_inputs", int(n))

    def add_argument(self, name: str, type_key: str, description: str = "") -> None:
        """Document an input, in order (TVM's ``OpNode.add_argument``)."""
        args = tuple(self.get_attr("arguments") or ())
        self._set_attr("arguments", (*args, (name, type_key, description)))

    def set_support_level(self, level: int) -> None:
        self._set_attr("support_level", int(level))

    def set_attrs_type_key(self, key: str) -> None:
        self._set_attr("attrs_type_key", str(key))

    def add_type_rel(self, rel_name: str, type_rel_func: Callable[..., Any] | None = None) -> None:
        """Attach a type relation: a built-in one by name (``"Identity"``,
        ``"Broadcast"``...), or ``type_rel_func(arg_types, attrs) -> Type``."""
        if type_rel_func is None:
            type_rel_func = named_type_relations[rel_name]
        elif not callable(type_rel_func):
            raise ArgumentError(
                f"the type relation {rel_name!r} of {self.name} must be a function "
                "(arg_types, attrs) -> Type"
            )
        self._set_attr("FTypeRelation", type_rel_func)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Op({self.name})"

    def __reduce__(self) -> Any:  # pragma: no cover - ops are never pickled
        raise ArgumentError("relaykit objects are not picklable")


_Table = dict[str, tuple[Any, int]]  # op name -> (value, level)


class OpRegistry:
    """Operators and their attribute tables, held in :class:`relaykit.registry.Registry`
    objects: the operators by name, and one table per attribute key. A test can
    snapshot and restore the attribute tables.

    With ``backend_rules``, an attribute ``target.<name>`` that was not registered
    explicitly reads backend ``<name>``'s rule from its record
    (:func:`relaykit.backends.backend_rule`): a rule registered explicitly wins, as in
    TVM, and no rule is ever copied into the tables.
    """

    def __init__(self, *, backend_rules: bool = False) -> None:
        self._backend_rules = backend_rules
        self._ops: Registry[str, Op] = Registry("operator")
        self._attrs: Registry[str, _Table] = Registry("operator attribute")
        # Lookup caches of the two registries (attribute lookups are on every hot path);
        # emptied whenever the registries change as a whole (restore).
        self._op_cache: dict[str, Op] = {}
        self._table_cache: dict[str, _Table] = {}

    # -- operators -----------------------------------------------------------
    def register(self, name: str, **attrs: Any) -> Op:
        """Register operator ``name`` (idempotent) and set the given attributes."""
        op = self._ops.get(name)
        if op is None:
            op = self._ops.register(name, Op(name, self))
        for key, value in attrs.items():
            self._table(key)[name] = (value, 0)
        return op

    def get(self, name: str) -> Op:
        """The operator called ``name``; an unknown name suggests close ones."""
        try:
            return self._op_cache[name]
        except KeyError:
            pass
        op = self._ops.get(name) if isinstance(name, str) else None
        if op is not None:
            self._op_cache[name] = op
            return op
        if not isinstance(name, str):
            raise OpNotFoundError(f"operator name must be a string, got {name!r}")
        close = difflib.get_close_matches(name, list(self._ops), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise OpNotFoundError(f"operator {name!r} is not registered{hint}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._ops

    def names(self) -> list[str]:
        return sorted(self._ops)

    # -- attribute tables ----------------------------------------------------
    def _table(self, key: str) -> _Table:
        table = self._attrs.get(key)
        if table is None:
            table = self._attrs.register(key, {})
        return table

    def set_attr(self, op_name: str, key: str, value: Any, level: int = 10) -> None:
        """Set ``key`` of ``op_name``. A higher ``level`` overrides a lower one;
        setting the same level twice is an error (as in TVM)."""
        self.get(op_name)
        table = self._table(key)
        old = table.get(op_name)
        if old is not None:
            if old[1] == level:
                raise IRError(
                    f"attribute {key!r} of operator {op_name!r} is already registered at level "
                    f"{level}; pass a higher level to override, or reset_attr() first"
                )
            if old[1] > level:
                return
        table[op_name] = (value, level)

    def get_attr(self, op_name: str, key: str) -> Any:
        table = self._table_cache.get(key)
        if table is None:
            table = self._attrs.get(key)
            if table is None:
                return self._record_rule(op_name, key)
            self._table_cache[key] = table
        entry = table.get(op_name)
        return self._record_rule(op_name, key) if entry is None else entry[0]

    def _record_rule(self, op_name: str, key: str) -> Any:
        """A backend record's rule, for an attribute ``target.<name>`` not set explicitly."""
        if not self._backend_rules:
            return None
        target = target_of_key(key)
        return None if target is None else backend_rule(target, op_name)

    def attr_entry(self, op_name: str, key: str) -> tuple[Any, int] | None:
        """``(value, level)`` of ``key`` of ``op_name``, or None: to put it back later
        with :meth:`restore_attr`."""
        return self._attrs.get(key, {}).get(op_name)

    def restore_attr(self, op_name: str, key: str, entry: tuple[Any, int] | None) -> None:
        """Put back an entry read with :meth:`attr_entry` (None removes the attribute)."""
        if entry is None:
            self.reset_attr(op_name, key)
        else:
            self._table(key)[op_name] = entry

    def reset_attr(self, op_name: str, key: str) -> None:
        table = self._attrs.get(key)
        if table is not None:
            table.pop(op_name, None)

    def attr_table(self, key: str) -> dict[str, Any]:
        """All values of attribute ``key``, by operator name."""
        return {name: v for name, (v, _) in self._attrs.get(key, {}).items()}

    def ops_with_attr(self, key: str) -> list[str]:
        return sorted(self._attrs.get(key, {}))

    # -- test support ----------------------------------------------------------
    def snapshot(self) -> dict[str, _Table]:
        return {k: dict(v) for k, v in self._attrs.items()}

    def restore(self, snap: dict[str, _Table]) -> None:
        self._attrs.restore({k: dict(v) for k, v in snap.items()})
        self._table_cache.clear()

    @contextlib.contextmanager
    def scoped(self) -> Iterator[OpRegistry]:
        """Attribute changes made inside the block are undone at its end."""
        snap = self.snapshot()
        try:
            yield self
        finally:
            self.restore(snap)


default_registry = OpRegistry(backend_rules=True)


def get_op(name: str) -> Op:
    """The registered operator ``name`` (TVM's ``relay.op.get``)."""
    return default_registry.get(name)


def list_op_names() -> list[str]:
    return default_registry.names()


def register_op_attr(
    op_name: str, attr_key: str, value: Any = None, level: int = 10
) -> Callable[[Any], Any] | None:
    """Register an attribute of an operator, as TVM's ``tvm.ir.register_op_attr``.

    Used as a decorator when ``value`` is omitted::

        @register_op_attr("nn.dense", "target.mylib")
        def dense(expr):
            return True
    """

    def _register(v: Any) -> Any:
        default_registry.set_attr(op_name, attr_key, v, level)
        return v

    if value is None:
        return _register
    _register(value)
    return None
