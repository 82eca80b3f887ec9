"""``tvm.relay.prelude``: the standard ADTs and list functions, added to a module.

``Prelude(mod)`` defines in ``mod`` the types ``List[a]`` (constructors
``Cons(a, List[a])`` and ``Nil``), ``Option[a]`` (``Some(a)``, ``None``) and the
rose tree ``Tree[a]`` (``Rose(a, List[Tree[a]])``) and
the polymorphic global functions ``id``, ``compose``, ``hd``, ``tl``, ``nth``,
``update``, ``length``, ``map``, ``foldl``, ``foldr``, ``sum``, ``filter``,
``concat``, ``rev``, ``get_or_default`` (Option's value or a default), ``flip``,
``foldr1``, ``zip``, ``map_accumr``, ``map_accuml``, ``unfoldr``, ``unfoldl``,
``tmap`` and ``size`` (over rose trees) and ``iterate``, and the
dynamic tensor arrays of every dtype of ``TENSOR_ARRAY_DTYPES`` (``tensor_float32_t``,
``tensor_array_float32``...; see :mod:`relaykit.relay.tensor_array`, whose
``StaticTensorArrayOps`` adds the fixed-shape ones).

>>> import relaykit as tvm
>>> from relaykit import relay
>>> mod = tvm.IRModule()
>>> p = Prelude(mod)
>>> _, cons, nil = mod.get_type("List")
>>> mod["main"] = relay.Function([], mod.get_global_var("length")(cons(relay.const(1), nil())))
>>> str(mod["main"].checked_type)
'fn () -> int32'
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import IRError
from relaykit.ir.adt import (
    Clause,
    Constructor,
    GlobalTypeVar,
    Match,
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    TypeCall,
    TypeData,
)
from relaykit.ir.expr import Call, Expr, Function, GlobalVar, If, Var, const
from relaykit.ir.hooks import register_std_file
from relaykit.ir.module import IRModule
from relaykit.ir.op import get_op
from relaykit.ir.types import FuncType, TensorType, Type, TypeVar
from relaykit.text.std_library import PRELUDE_LISTS, load_std_text

from .tensor_array import (
    TENSOR_ARRAY_DTYPES,
    StaticTensorArrayOps,
    TensorArrayOps,
    get_tensor_array_shape,
    static_name,
)

__all__ = ["Prelude", "StaticTensorArrayOps", "TensorArrayOps", "get_tensor_array_shape"]

_INT = TensorType((), "int32")


def _add(a: Expr, b: Expr) -> Call:
    return Call(get_op("add"), [a, b])


class Prelude:
    """The prelude's types and functions in ``mod`` (a new module when omitted)."""

    def __init__(self, mod: IRModule | None = None) -> None:
        self.mod = mod if mod is not None else IRModule()
        self.load_prelude()

    # -- lookups (TVM's interface) ----------------------------------------------------------
    def get_name(self, canonical: str, dtype: Any = None) -> str:
        """The global name of ``canonical`` for ``dtype`` (``tensor_t`` -> ``tensor_<dtype>_t``,
        others ``<canonical>_<dtype>``); ``canonical`` itself without a dtype."""
        if dtype is None:
            return canonical
        if canonical == "tensor_t":
            return f"tensor_{dtype}_t"
        return f"{canonical}_{dtype}"

    def get_global_var(self, name: str, dtype: Any = None) -> GlobalVar:
        return self.mod.get_global_var(self.get_name(name, dtype))

    get_var = get_global_var

    def get_type(self, name: str, dtype: Any = None) -> GlobalTypeVar:
        return self.mod.get_global_type_var(self.get_name(name, dtype))

    def get_ctor(self, ty_name: str, canonical: str, dtype: Any = None) -> Constructor:
        name = self.get_name(canonical, dtype)
        for c in self.mod.get_type(ty_name)[1:]:
            if c.name_hint == name:
                return c
        raise IRError(
            f"type {ty_name} has no constructor {name}; its constructors are "
            + ", ".join(c.name_hint for c in self.mod.get_type(ty_name)[1:])
        )

    def get_tensor_ctor(self, canonical: str, dtype: str) -> Constructor:
        """The constructor ``canonical`` (``tensor0`` ... ``tensor6``, ``tensor_nil``) of
        the dynamic tensor array of ``dtype``."""
        return self.get_ctor(self.get_name("tensor_t", dtype), canonical, dtype)

    def get_name_static(
        self, canonical: str, dtype: str, shape: Any, batch_dim: int | None = None
    ) -> str:
        return static_name(canonical, dtype, shape, batch_dim)

    def get_global_var_static(
        self, canonical: str, dtype: str, shape: Any, batch_dim: int | None = None
    ) -> GlobalVar:
        return self.mod.get_global_var(static_name(canonical, dtype, shape, batch_dim))

    def get_type_static(self, canonical: str, dtype: str, shape: Any) -> GlobalTypeVar:
        return self.mod.get_global_type_var(static_name(canonical, dtype, shape))

    def get_ctor_static(self, ty_name: str, name: str, dtype: str, shape: Any) -> Constructor:
        type_name = static_name(ty_name, dtype, shape)
        ctor_name = static_name(name, dtype, shape)
        for c in self.mod.get_type(type_name)[1:]:
            if c.name_hint == ctor_name:
                return c
        raise IRError(f"type {type_name} has no constructor {ctor_name}")

    def get_tensor_ctor_static(self, name: str, dtype: str, shape: Any) -> Constructor:
        return self.get_ctor_static("tensor_t", name, dtype, shape)

    # -- definitions ------------------------------------------------------------------------
    def load_prelude(self) -> None:
        mod = self.mod
        types = {g.name_hint for g in mod.get_global_type_vars()}
        if "List" in types:
            self._bind_names()
            self._tensor_arrays(types)
            return
        a = TypeVar("a")
        lst = GlobalTypeVar("List")
        cons = Constructor("Cons", [a, TypeCall(lst, [a])], lst)
        nil = Constructor("Nil", [], lst)
        mod[lst] = TypeData(lst, [a], [cons, nil])
        opt = GlobalTypeVar("Option")
        some = Constructor("Some", [a], opt)
        none = Constructor("None", [], opt)
        mod[opt] = TypeData(opt, [a], [some, none])
        tree = GlobalTypeVar("Tree")
        rose = Constructor("Rose", [a, TypeCall(lst, [TypeCall(tree, [a])])], tree)
        mod[tree] = TypeData(tree, [a], [rose])
        self._bind_names()
        for define in (
            self._id,
            self._compose,
            self._hd,
            self._tl,
            self._nth,
            self._update,
            self._length,
            self._map,
            self._foldl,
            self._foldr,
            self._sum,
            self._filter,
            self._concat,
            self._rev,
            self._get_or_default,
        ):
            define()
        load_std_text(mod, PRELUDE_LISTS, "prelude.rly", "foldr1")
        self._bind_names()
        self._tensor_arrays(set())

    def _tensor_arrays(self, types: set[str]) -> None:
        for dtype in TENSOR_ARRAY_DTYPES:
            if self.get_name("tensor_t", dtype) not in types:
                TensorArrayOps(self, dtype).register()

    def _bind_names(self) -> None:
        mod = self.mod
        self.l, self.cons, self.nil = mod.get_type("List")
        self.List = self.l
        self.optional, self.some, self.none = mod.get_type("Option")
        if any(g.name_hint == "Tree" for g in mod.get_global_type_vars()):
            self.tree, self.rose = mod.get_type("Tree")
        for gv in mod.get_global_vars():
            if not hasattr(type(self), gv.name_hint):
                setattr(self, gv.name_hint, gv)

    def _list(self, t: Type) -> TypeCall:
        return TypeCall(self.l, [t])

    def _define(self, name: str, fn: Function) -> None:
        self.mod[GlobalVar(name)] = fn

    def _cons_pattern(self, head: Any, tail: Any) -> PatternConstructor:
        return PatternConstructor(self.cons, [head, tail])

    # id, compose
    def _id(self) -> None:
        a = TypeVar("a")
        x = Var("x", a)
        self._define("id", Function([x], x, a, [a]))

    def _compose(self) -> None:
        a, b, c = TypeVar("a"), TypeVar("b"), TypeVar("c")
        f = Var("f", FuncType([b], c))
        g = Var("g", FuncType([a], b))
        x = Var("x", a)
        inner = Function([x], Call(f, [Call(g, [x])]), c)
        self._define("compose", Function([f, g], inner, FuncType([a], c), [a, b, c]))

    # list access
    def _hd(self) -> None:
        a = TypeVar("a")
        xs, x = Var("xs", self._list(a)), Var("x", a)
        body = Match(xs, [Clause(self._cons_pattern(PatternVar(x), PatternWildcard()), x)], False)
        self._define("hd", Function([xs], body, a, [a]))

    def _tl(self) -> None:
        a = TypeVar("a")
        xs, rest = Var("xs", self._list(a)), Var("rest", self._list(a))
        body = Match(
            xs, [Clause(self._cons_pattern(PatternWildcard(), PatternVar(rest)), rest)], False
        )
        self._define("tl", Function([xs], body, self._list(a), [a]))

    def _nth(self) -> None:
        a = TypeVar("a")
        xs, n = Var("xs", self._list(a)), Var("n", _INT)
        hd, tl = self.mod.get_global_var("hd"), self.mod.get_global_var("tl")
        gv = GlobalVar("nth")
        body = If(
            Call(get_op("equal"), [n, const(0)]),
            Call(hd, [xs]),
            Call(gv, [Call(tl, [xs]), Call(get_op("subtract"), [n, const(1)])]),
        )
        self.mod[gv] = Function([xs, n], body, a, [a])

    def _update(self) -> None:
        a = TypeVar("a")
        xs, n, v = Var("xs", self._list(a)), Var("n", _INT), Var("v", a)
        hd, tl = self.mod.get_global_var("hd"), self.mod.get_global_var("tl")
        gv = GlobalVar("update")
        body = If(
            Call(get_op("equal"), [n, const(0)]),
            self.cons(v, Call(tl, [xs])),
            self.cons(
                Call(hd, [xs]),
                Call(gv, [Call(tl, [xs]), Call(get_op("subtract"), [n, const(1)]), v]),
            ),
        )
        self.mod[gv] = Function([xs, n, v], body, self._list(a), [a])

    def _length(self) -> None:
        a = TypeVar("a")
        xs, rest = Var("xs", self._list(a)), Var("rest", self._list(a))
        gv = GlobalVar("length")
        body = Match(
            xs,
            [
                Clause(
                    self._cons_pattern(PatternWildcard(), PatternVar(rest)),
                    _add(const(1), Call(gv, [rest])),
                ),
                Clause(PatternConstructor(self.nil, []), const(0)),
            ],
        )
        self.mod[gv] = Function([xs], body, _INT, [a])

    # higher-order
    def _map(self) -> None:
        a, b = TypeVar("a"), TypeVar("b")
        f = Var("f", FuncType([a], b))
        xs, x, rest = Var("xs", self._list(a)), Var("x", a), Var("rest", self._list(a))
        gv = GlobalVar("map")
        body = Match(
            xs,
            [
                Clause(
                    self._cons_pattern(PatternVar(x), PatternVar(rest)),
                    self.cons(Call(f, [x]), Call(gv, [f, rest])),
                ),
                Clause(PatternConstructor(self.nil, []), self.nil()),
            ],
        )
        self.mod[gv] = Function([f, xs], body, self._list(b), [a, b])

    def _foldl(self) -> None:
        a, b = TypeVar("a"), TypeVar("b")
        f = Var("f", FuncType([a, b], a))
        acc, xs = Var("acc", a), Var("xs", self._list(b))
        x, rest = Var("x", b), Var("rest", self._list(b))
        gv = GlobalVar("foldl")
        body = Match(
            xs,
            [
                Clause(
                    self._cons_pattern(PatternVar(x), PatternVar(rest)),
                    Call(gv, [f, Call(f, [acc, x]), rest]),
                ),
                Clause(PatternConstructor(self.nil, []), acc),
            ],
        )
        self.mod[gv] = Function([f, acc, xs], body, a, [a, b])

    def _foldr(self) -> None:
        a, b = TypeVar("a"), TypeVar("b")
        f = Var("f", FuncType([a, b], b))
        acc, xs = Var("acc", b), Var("xs", self._list(a))
        x, rest = Var("x", a), Var("rest", self._list(a))
        gv = GlobalVar("foldr")
        body = Match(
            xs,
            [
                Clause(
                    self._cons_pattern(PatternVar(x), PatternVar(rest)),
                    Call(f, [x, Call(gv, [f, acc, rest])]),
                ),
                Clause(PatternConstructor(self.nil, []), acc),
            ],
        )
        self.mod[gv] = Function([f, acc, xs], body, b, [a, b])

    def _sum(self) -> None:
        xs = Var("xs", self._list(_INT))
        x, y = Var("x", _INT), Var("y", _INT)
        plus = Function([x, y], _add(x, y), _INT)
        body = Call(self.mod.get_global_var("foldl"), [plus, const(0), xs])
        self._define("sum", Function([xs], body, _INT))

    def _filter(self) -> None:
        a = TypeVar("a")
        f = Var("f", FuncType([a], TensorType((), "bool")))
        xs, x, rest = Var("xs", self._list(a)), Var("x", a), Var("rest", self._list(a))
        gv = GlobalVar("filter")
        kept = Call(gv, [f, rest])
        body = Match(
            xs,
            [
                Clause(
                    self._cons_pattern(PatternVar(x), PatternVar(rest)),
                    If(Call(f, [x]), self.cons(x, kept), kept),
                ),
                Clause(PatternConstructor(self.nil, []), self.nil()),
            ],
        )
        self.mod[gv] = Function([f, xs], body, self._list(a), [a])

    def _concat(self) -> None:
        a = TypeVar("a")
        xs, ys = Var("xs", self._list(a)), Var("ys", self._list(a))
        x, acc = Var("x", a), Var("acc", self._list(a))
        push = Function([x, acc], self.cons(x, acc), self._list(a))
        body = Call(self.mod.get_global_var("foldr"), [push, ys, xs])
        self._define("concat", Function([xs, ys], body, self._list(a), [a]))

    def _rev(self) -> None:
        a = TypeVar("a")
        xs = Var("xs", self._list(a))
        acc, x = Var("acc", self._list(a)), Var("x", a)
        push = Function([acc, x], self.cons(x, acc), self._list(a))
        body = Call(self.mod.get_global_var("foldl"), [push, self.nil(), xs])
        self._define("rev", Function([xs], body, self._list(a), [a]))

    def _get_or_default(self) -> None:
        a = TypeVar("a")
        o, d, v = Var("o", TypeCall(self.optional, [a])), Var("d", a), Var("v", a)
        body = Match(
            o,
            [
                Clause(PatternConstructor(self.some, [PatternVar(v)]), v),
                Clause(PatternConstructor(self.none, []), d),
            ],
        )
        self._define("get_or_default", Function([o, d], body, a, [a]))


register_std_file("prelude.rly", Prelude)
