"""IRModule: a set of global functions, looked up by name or GlobalVar.

>>> from relaykit.ir import Var, Function, TensorType
>>> x = Var("x", TensorType((2,)))
>>> mod = IRModule.from_expr(Function([x], x))
>>> mod["main"].params[0] is x
True
>>> [gv.name_hint for gv in mod.get_global_vars()]
['main']
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any, overload

from relaykit.errors import IRError, UnsupportedFeatureError

from .adt import Constructor, GlobalTypeVar, TypeData
from .analysis import free_vars
from .attrs import Attrs
from .expr import Expr, Function, GlobalVar, TupleWrapper
from .functor import post_order
from .hooks import printer_hook, std_file_loader
from .type_check import infer_function

__all__ = ["IRModule"]


class TypeDefinitions(dict[GlobalTypeVar, TypeData]):
    """A module's type definitions by their GlobalTypeVar; ``items()`` is a list, as the
    items of TVM's ``Map`` are (``mod.type_definitions.items()[0]``)."""

    def items(self) -> list[tuple[GlobalTypeVar, TypeData]]:  # type: ignore[override]
        return list(super().items())


class IRModule:
    """A module of global functions. ``mod["main"]`` is the entry point."""

    def __init__(
        self,
        functions: Mapping[Any, Function] | None = None,
        type_definitions: Any = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> None:
        self._gvars: dict[str, GlobalVar] = {}
        self._funcs: dict[str, Function] = {}
        self.attrs = Attrs(attrs or {})
        self.type_definitions: dict[GlobalTypeVar, TypeData] = TypeDefinitions()
        self._type_names: dict[str, GlobalTypeVar] = {}
        for td in _type_data_list(type_definitions):
            self.add_type_def(td)
        for key, fn in (functions or {}).items():
            self._add(key, fn)

    # -- construction ----------------------------------------------------------
    @staticmethod
    def from_expr(
        expr: Expr, functions: Mapping[Any, Function] | None = None, type_defs: Any = None
    ) -> IRModule:
        """A module whose ``main`` is ``expr`` (wrapped in a function over its free vars)."""
        if isinstance(expr, TupleWrapper):  # a multi-output op's result: its call
            expr = expr.astuple()
        if not isinstance(expr, Expr):
            raise IRError(f"IRModule.from_expr needs a relay expression, got {expr!r}")
        fn = expr if isinstance(expr, Function) else Function(free_vars(expr), expr)
        mod = IRModule(functions)
        mod._add_checked("main", fn)
        return mod

    def _add(self, key: Any, fn: Any, update: bool = True) -> GlobalVar:
        if isinstance(fn, Expr) and not isinstance(fn, Function):
            fn = Function(free_vars(fn), fn)
        if not isinstance(fn, Function):
            raise IRError(f"a module holds relay Functions, got {type(fn).__name__}")
        if isinstance(key, GlobalVar):
            gv = key
            existing = self._gvars.get(gv.name_hint)
            if existing is not None and existing is not gv:
                # Same name, different GlobalVar object: keep the module's one.
                gv = existing
        elif isinstance(key, str):
            gv = self._gvars.get(key) or GlobalVar(key)
        else:
            raise IRError(f"module keys are names or GlobalVars, got {key!r}")
        if not update and gv.name_hint in self._funcs:
            raise IRError(f"global function @{gv.name_hint} is already defined")
        self._gvars[gv.name_hint] = gv
        self._funcs[gv.name_hint] = fn
        return gv

    def __setitem__(self, key: Any, fn: Any) -> None:
        if isinstance(key, GlobalTypeVar) or isinstance(fn, TypeData):
            self.add_type_def(fn, key)
            return
        self._add_checked(key, fn)

    def add(self, key: Any, fn: Function) -> IRModule:
        self._add_checked(key, fn)
        return self

    def _add_checked(self, key: Any, fn: Any) -> GlobalVar:
        """Add a function and type-check it, as TVM's ``IRModule.Add`` does."""
        gv = self._add(key, fn)
        name = gv.name_hint
        self._funcs[name] = infer_function(self._funcs[name], self)
        return gv

    def _set_checked(self, name: str, fn: Function) -> None:
        """Replace a function by its type-checked version (same GlobalVar)."""
        self._funcs[name] = fn

    def update_func(self, gv: GlobalVar, fn: Function) -> None:
        self._add(gv, fn)

    def update(self, other: IRModule | Mapping[Any, Function]) -> None:
        items = other.functions.items() if isinstance(other, IRModule) else other.items()
        for k, f in items:
            self._add(k, f)

    def remove(self, key: Any) -> None:
        name = key.name_hint if isinstance(key, GlobalVar) else key
        self._funcs.pop(name, None)
        self._gvars.pop(name, None)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)

    # -- lookup ------------------------------------------------------------------
    def _name(self, key: Any) -> str:
        if isinstance(key, GlobalVar):
            return key.name_hint
        if isinstance(key, str):
            return key
        raise IRError(f"look up a global by name or GlobalVar, not {key!r}")

    @overload
    def __getitem__(self, key: str | GlobalVar) -> Function: ...

    @overload
    def __getitem__(self, key: GlobalTypeVar) -> TypeData: ...

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, GlobalTypeVar):  # mod[List] is List's type definition, as in TVM
            data = self.type_definitions.get(key)
            if data is None:
                raise IRError(f"type {key.name_hint} is not defined in the module")
            return data
        name = self._name(key)
        try:
            return self._funcs[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._funcs, n=3)
            hint = f"; did you mean {', '.join('@' + c for c in close)}?" if close else ""
            known = ", ".join("@" + n for n in self._funcs) or "none"
            raise IRError(f"global @{name} is not in the module (globals: {known}){hint}") from None

    def __contains__(self, key: Any) -> bool:
        try:
            return self._name(key) in self._funcs
        except IRError:
            return False

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(list(self._gvars.values()))

    def __len__(self) -> int:
        return len(self._funcs)

    def get_global_var(self, name: str) -> GlobalVar:
        try:
            return self._gvars[name]
        except KeyError:
            self[name]  # raises the helpful error
            raise

    def import_from_std(self, file_to_import: str) -> None:
        """Add the definitions of one of Relay's standard-library files (TVM's
        ``IRModule.import_from_std``): ``prelude.rly`` (lists, options, trees),
        ``nat.rly`` (Peano naturals; needs the Prelude), ``gradient.rly`` and
        ``core.rly`` (the ``Storage`` type of the memory operators). Importing a file
        twice adds nothing the second time.
        """
        name = str(file_to_import).rsplit("/", 1)[-1]
        loader = std_file_loader(name)
        if loader is None:
            raise UnsupportedFeatureError(
                f"IRModule.import_from_std({file_to_import!r}): relaykit's standard library "
                "has core.rly, prelude.rly, nat.rly and gradient.rly"
            )
        loader(self)

    def get_global_vars(self) -> list[GlobalVar]:
        return list(self._gvars.values())

    def contains_global_var(self, name: str) -> bool:
        return name in self._gvars

    @property
    def functions(self) -> dict[GlobalVar, Function]:
        return {self._gvars[n]: f for n, f in self._funcs.items()}

    def items(self) -> list[tuple[GlobalVar, Function]]:
        return [(self._gvars[n], f) for n, f in self._funcs.items()]

    def same_as(self, other: object) -> bool:
        """Whether ``other`` is this very module (TVM's ``ObjectRef.same_as``)."""
        return self is other

    def copy(self) -> IRModule:
        """A shallow copy: same functions, new name table."""
        new = IRModule(attrs=self.attrs)
        new._gvars = dict(self._gvars)
        new._funcs = dict(self._funcs)
        new.type_definitions = TypeDefinitions(self.type_definitions)
        new._type_names = dict(self._type_names)
        return new

    def with_attr(self, key: str, value: Any) -> IRModule:
        new = self.copy()
        new.attrs = self.attrs.with_updates(**{key: value})
        return new

    def global_refs(self, name: str) -> list[GlobalVar]:
        """The globals that function ``name`` refers to, in first-use order."""
        return [n for n in post_order(self[name]) if isinstance(n, GlobalVar)]

    # -- type definitions (ADTs) ----------------------------------------------------
    def add_type_def(self, td: TypeData, key: Any = None) -> GlobalTypeVar:
        """Add the type definition ``td`` (``mod[List] = TypeData(...)`` does the same)."""
        if not isinstance(td, TypeData):
            raise IRError(f"a module's type definitions are TypeData, got {type(td).__name__}")
        if (
            key is not None
            and key is not td.header
            and getattr(key, "name_hint", key) != (td.header.name_hint)
        ):
            raise IRError(f"type definition {td.header} stored under a different name {key}")
        self.type_definitions[td.header] = td
        self._type_names[td.header.name_hint] = td.header
        return td.header

    def get_global_type_var(self, name: str) -> GlobalTypeVar:
        try:
            return self._type_names[name]
        except KeyError:
            known = ", ".join(self._type_names) or "none"
            raise IRError(f"type {name} is not defined in the module (types: {known})") from None

    def get_global_type_vars(self) -> list[GlobalTypeVar]:
        return list(self._type_names.values())

    def get_type(self, name: str) -> tuple[Any, ...]:
        """``(type_var, *constructors)`` of the type definition ``name`` (as TVM)."""
        gtv = self.get_global_type_var(name)
        return (gtv, *self.type_definitions[gtv].constructors)

    def type_data_of(self, gtv: GlobalTypeVar) -> TypeData | None:
        """The definition named by ``gtv``, or ``None``."""
        return self.type_definitions.get(gtv)

    def get_constructor(self, tag: int) -> Constructor:
        for td in self.type_definitions.values():
            for c in td.constructors:
                if c.tag == tag:
                    return c
        raise IRError(f"no constructor has tag {tag}")

    # -- printing ----------------------------------------------------------------
    def astext(self, show_meta_data: bool = True, annotate: Any = None) -> str:
        """This module in Relay's text format."""
        return printer_hook().astext(self, show_meta_data=show_meta_data, annotate=annotate)

    def __str__(self) -> str:
        return self.astext(show_meta_data=False)

    def __repr__(self) -> str:
        return self.astext(show_meta_data=False)


def _type_data_list(defs: Any) -> list[TypeData]:
    if not defs:
        return []
    if isinstance(defs, Mapping):
        return list(defs.values())
    return list(defs)
