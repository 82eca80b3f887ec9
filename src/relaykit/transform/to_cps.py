"""``to_cps`` and ``un_cps``: continuation-passing style and back.

``to_cps(f)`` turns ``fn (x: A) -> B`` into ``fn [answer] (x: A', k: fn (B') -> answer) ->
answer``: the function no longer returns, it calls ``k`` with its result. Every
function type inside changes the same way (``A'``, ``B'``), every call passes the
rest of the computation as a function, and ``if``/``match`` bind their continuation
once so it is not copied into each branch. Global functions a converted function
calls get converted twins (``@g_cps``) in the module. ``un_cps(f)`` calls a
converted function with the identity continuation, giving back a function of the
original type (for functions whose parameters and result hold no functions).

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> f = relay.Function([x], relay.exp(x))
>>> cps = to_cps(f)
>>> len(cps.params), len(cps.type_params)
(2, 1)
>>> run = relay.create_executor().evaluate(un_cps(cps))
>>> np.allclose(run(np.zeros(2, "float32")).numpy(), 1.0)
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.adt import (
    Clause,
    Constructor,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    TypeCall,
)
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
)
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.ref import RefCreate, RefRead, RefWrite
from relaykit.ir.types import FuncType, RefType, TupleType, Type, TypeVar

from .infer_type import infer_type

__all__ = ["to_cps", "un_cps", "cps_type"]

#: A continuation: a Relay variable holding a function, or code to build around a value.
Cont = Var | Callable[[Expr], Expr]


def cps_type(t: Any, answer: TypeVar) -> Any:
    """The type ``t`` takes in continuation-passing style with answer type ``answer``."""
    if isinstance(t, FuncType):
        args = [cps_type(a, answer) for a in t.arg_types]
        k = FuncType([cps_type(t.ret_type, answer)], answer)
        return FuncType([*args, k], answer, t.type_params, t.type_constraints)
    if isinstance(t, TupleType):
        return TupleType([cps_type(f, answer) for f in t.fields])
    if isinstance(t, TypeCall):
        return TypeCall(t.func, [cps_type(a, answer) for a in t.args])
    if isinstance(t, RefType):
        return RefType(cps_type(t.value, answer))
    return t


def _checked(e: Expr) -> Type | None:
    return e.checked_type if e.has_checked_type else None


class _Converter:
    def __init__(self, answer: TypeVar, mod: IRModule | None, globals_: dict[str, GlobalVar]):
        self.answer = answer
        self.mod = mod
        self.globals = globals_
        self.env: dict[Var, Var] = {}

    # -- helpers ------------------------------------------------------------------------------
    def var(self, v: Var) -> Var:
        t = v.type_annotation if v.type_annotation is not None else _checked(v)
        new = Var(v.name_hint, cps_type(t, self.answer))
        self.env[v] = new
        return new

    def apply(self, k: Cont, value: Expr) -> Expr:
        return Call(k, [value]) if isinstance(k, Var) else k(value)

    def bound(self, k: Cont, value: Expr, hint: str = "v") -> Expr:
        """``k`` applied to ``value``, which is first bound to a variable."""
        if isinstance(value, Var | Constant | GlobalVar):
            return self.apply(k, value)
        v = Var(hint)
        return Let(v, value, self.apply(k, v))

    def reify(self, k: Cont, result_type: Type | None) -> Expr:
        if isinstance(k, Var):
            return k
        x = Var("x", cps_type(result_type, self.answer) if result_type is not None else None)
        return Function([x], k(x), self.answer)

    def shared(self, k: Cont, result_type: Type | None, body: Callable[[Var], Expr]) -> Expr:
        """``body(kv)`` with the continuation bound once to ``kv``."""
        if isinstance(k, Var):
            return body(k)
        kv = Var("k")
        return Let(kv, self.reify(k, result_type), body(kv))

    def many(self, es: list[Expr], k: Callable[[list[Expr]], Expr]) -> Expr:
        def step(i: int, done: list[Expr]) -> Expr:
            if i == len(es):
                return k(done)
            return self.cps(es[i], lambda v: step(i + 1, [*done, v]))

        return step(0, [])

    # -- expressions ------------------------------------------------------------------------
    def function(self, fn: Function, new_params: bool = True) -> Function:
        params = [self.var(p) for p in fn.params]
        ret = fn.ret_type if fn.ret_type is not None else _ret_of(fn)
        k = Var("k", FuncType([cps_type(ret, self.answer)], self.answer) if ret else None)
        body = self.cps(fn.body, k)
        return Function([*params, k], body, self.answer, fn.type_params, fn.attrs, span=fn.span)

    def cps(self, e: Expr, k: Cont) -> Expr:  # noqa: C901, PLR0911 - one case per node
        if isinstance(e, Var):
            return self.apply(k, self.env.get(e, e))
        if isinstance(e, Constant | Op | Constructor):
            return self.apply(k, e)
        if isinstance(e, GlobalVar):
            return self.apply(k, self.global_var(e))
        if isinstance(e, Function):
            if e.attrs.get("Primitive") or e.attrs.get("Compiler"):
                return self.apply(k, e)
            return self.apply(k, self.function(e))
        if isinstance(e, Let):
            if isinstance(e.value, Function):  # may be recursive: bind its name first
                v = self.var(e.var)
                fn = self.function(e.value)
                return Let(v, fn, self.cps(e.body, k))
            return self.cps(e.value, lambda val: Let(self.var(e.var), val, self.cps(e.body, k)))
        if isinstance(e, Call):
            return self.call(e, k)
        if isinstance(e, Tuple):
            return self.many(list(e.fields), lambda vs: self.bound(k, Tuple(vs), "t"))
        if isinstance(e, TupleGetItem):
            return self.cps(e.tuple_value, lambda t: self.bound(k, TupleGetItem(t, e.index)))
        if isinstance(e, If):
            return self.cps(
                e.cond,
                lambda c: self.shared(
                    k,
                    _checked(e),
                    lambda kv: If(c, self.cps(e.true_branch, kv), self.cps(e.false_branch, kv)),
                ),
            )
        if isinstance(e, Match):
            return self.cps(
                e.data, lambda d: self.shared(k, _checked(e), lambda kv: self.match(e, d, kv))
            )
        if isinstance(e, RefCreate):
            return self.cps(e.value, lambda v: self.bound(k, RefCreate(v), "r"))
        if isinstance(e, RefRead):
            return self.cps(e.ref, lambda r: self.bound(k, RefRead(r)))
        if isinstance(e, RefWrite):
            return self.many(
                [e.ref, e.value], lambda rv: self.bound(k, RefWrite(rv[0], rv[1]), "u")
            )
        raise IRError(f"to_cps: cannot convert a {type(e).__name__}")

    def call(self, e: Call, k: Cont) -> Expr:
        if isinstance(e.op, Op | Constructor):
            return self.many(list(e.args), lambda vs: self.bound(k, Call(e.op, vs, e.attrs)))
        if isinstance(e.op, Function) and (
            e.op.attrs.get("Primitive") or e.op.attrs.get("Compiler")
        ):
            return self.many(list(e.args), lambda vs: self.bound(k, Call(e.op, vs, e.attrs)))
        result = _checked(e)
        return self.cps(
            e.op,
            lambda f: self.many(
                list(e.args), lambda vs: Call(f, [*vs, self.reify(k, result)], e.attrs)
            ),
        )

    def match(self, e: Match, data: Expr, kv: Var) -> Expr:
        clauses = [Clause(self.pattern(c.lhs), self.cps(c.rhs, kv)) for c in e.clauses]
        return Match(data, clauses, e.complete)

    def pattern(self, p: Pattern) -> Pattern:
        if isinstance(p, PatternVar):
            return PatternVar(self.var(p.var))
        if isinstance(p, PatternConstructor):
            return PatternConstructor(p.constructor, [self.pattern(q) for q in p.patterns])
        if isinstance(p, PatternTuple):
            return PatternTuple([self.pattern(q) for q in p.patterns])
        return p

    def global_var(self, gv: GlobalVar) -> Expr:
        mod = self.mod
        if mod is None or gv.name_hint not in {g.name_hint for g in mod.get_global_vars()}:
            return gv
        fn = mod[gv]
        if not isinstance(fn, Function) or fn.attrs.get("Primitive") or fn.attrs.get("Compiler"):
            return gv
        twin = self.globals.get(gv.name_hint)
        if twin is None:
            twin = self.globals[gv.name_hint] = GlobalVar(gv.name_hint + "_cps")
            mod._add(twin, _convert(fn, mod, self.globals))
        return twin


def _ret_of(fn: Function) -> Type | None:
    t = _checked(fn)
    return t.ret_type if isinstance(t, FuncType) else None


def _convert(fn: Function, mod: IRModule | None, globals_: dict[str, GlobalVar]) -> Function:
    answer = TypeVar("answer")
    out = _Converter(answer, mod, globals_).function(fn)
    return Function(out.params, out.body, answer, [*fn.type_params, answer], out.attrs)


def to_cps(func: Function, mod: IRModule | None = None) -> Function:
    """``func`` in continuation-passing style (see the module docs); global functions it
    calls get converted twins in ``mod``."""
    if not isinstance(func, Function):
        raise IRError(f"to_cps takes a Function, got {type(func).__name__}")
    if not func.has_checked_type:
        infer_type(func, mod)
    return _convert(func, mod, {})


def un_cps(func: Function) -> Function:
    """A function of the original type calling ``func`` (made by :func:`to_cps`) with the
    identity continuation."""
    if not func.params or not func.type_params:
        raise IRError("un_cps takes a function made by to_cps (a continuation last)")
    k = func.params[-1].type_annotation
    if not isinstance(k, FuncType) or len(k.arg_types) != 1:
        raise IRError("un_cps: the last parameter must be the continuation fn (T) -> answer")
    result = k.arg_types[0]
    params = [Var(p.name_hint, p.type_annotation) for p in func.params[:-1]]
    x = Var("x", result)
    body = Call(func, [*params, Function([x], x, result)])
    return Function(params, body, result, list(func.type_params[:-1]))
