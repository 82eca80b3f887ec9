"""``Defunctionalization``: a first-order program from a higher-order one.

Each (monomorphic) function type used as a value becomes an ADT with one
constructor per function that flows there (its fields: the function's free
variables), and a global ``@apply_N`` that matches on the constructor and runs
the function's body. Global functions taking or returning functions are
specialised per instantiation of their type parameters with those arguments
replaced by the ADT; calls of function values become ``@apply_N(value, args)``.
The entry function is returned; the ADTs and helpers are added to the module.

>>> import numpy as np
>>> from relaykit import relay
>>> mod = relay.fromtext('''
... #[version = "0.0.5"]
... def @twice(%f: fn (float32) -> float32, %x: float32) -> float32 { %f(%f(%x)) }
... def @main(%y: float32) -> float32 { @twice(fn (%v: float32) -> float32 { %v * %y }, 3f) }
... ''')
>>> mod = relay.transform.InferType()(mod)
>>> mod["main"] = Defunctionalization(mod["main"], mod)
>>> float(relay.create_executor(mod=mod).evaluate()(np.float32(2.0)).numpy())
12.0
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import IRError
from relaykit.ir.adt import (
    Clause,
    Constructor,
    GlobalTypeVar,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    TypeCall,
    TypeData,
)
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Call, Expr, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.ref import RefCreate, RefRead, RefWrite
from relaykit.ir.type_check import substitute
from relaykit.ir.type_equal import type_shape_key
from relaykit.ir.types import FuncType, RefType, TupleType, TypeVar

__all__ = ["Defunctionalization"]


def _has_func(t: Any) -> bool:
    if isinstance(t, FuncType):
        return True
    if isinstance(t, TupleType):
        return any(map(_has_func, t.fields))
    if isinstance(t, TypeCall):
        return any(map(_has_func, t.args))
    if isinstance(t, RefType):
        return _has_func(t.value)
    return False


def _bind_type_vars(poly: Any, mono: Any, out: dict[Any, Any]) -> None:
    """Type-variable values making ``poly`` equal ``mono`` (what can be read off)."""
    if isinstance(poly, TypeVar):
        out.setdefault(poly, mono)
    elif isinstance(poly, FuncType) and isinstance(mono, FuncType):
        for a, b in zip(
            (*poly.arg_types, poly.ret_type), (*mono.arg_types, mono.ret_type), strict=False
        ):
            _bind_type_vars(a, b, out)
    elif isinstance(poly, TupleType) and isinstance(mono, TupleType):
        for a, b in zip(poly.fields, mono.fields, strict=False):
            _bind_type_vars(a, b, out)
    elif isinstance(poly, TypeCall) and isinstance(mono, TypeCall):
        for a, b in zip(poly.args, mono.args, strict=False):
            _bind_type_vars(a, b, out)


class _Family:
    """The ADT standing for one function type, its constructors and their bodies."""

    def __init__(self, index: int, ftype: FuncType) -> None:
        self.ftype = ftype
        self.gtv = GlobalTypeVar(f"Func{index}")
        self.apply = GlobalVar(f"apply{index}")
        self.params = [Var(f"arg{i}") for i in range(len(ftype.arg_types))]
        self.cases: list[tuple[Constructor, list[Var], Expr]] = []


class _Defunc:
    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.families: dict[Any, _Family] = {}
        self.specs: dict[Any, GlobalVar] = {}
        self.pending: list[tuple[GlobalVar, Function, dict[Any, Any]]] = []

    # -- types --------------------------------------------------------------------------------
    def family(self, t: FuncType) -> _Family:
        key = type_shape_key(FuncType(t.arg_types, t.ret_type))
        fam = self.families.get(key)
        if fam is None:
            fam = self.families[key] = _Family(len(self.families), t)
            fam.params = [
                Var(p.name_hint, self.conv_type(a))
                for p, a in zip(fam.params, t.arg_types, strict=True)
            ]
        return fam

    def conv_type(self, t: Any) -> Any:
        if isinstance(t, FuncType):
            if t.type_params:
                raise IRError(f"Defunctionalization: polymorphic function value of type {t}")
            return TypeCall(self.family(t).gtv, [])
        if isinstance(t, TupleType):
            return TupleType([self.conv_type(f) for f in t.fields])
        if isinstance(t, TypeCall):
            return TypeCall(t.func, [self.conv_type(a) for a in t.args])
        if isinstance(t, RefType):
            return RefType(self.conv_type(t.value))
        return t

    # -- globals ------------------------------------------------------------------------------
    def spec(self, gv: GlobalVar, type_args: list[Any]) -> GlobalVar:
        fn = self.mod[gv]
        mapping = dict(zip(fn.type_params, type_args, strict=False))
        key = (gv.name_hint, tuple(type_shape_key(a) for a in type_args))
        out = self.specs.get(key)
        if out is None:
            out = self.specs[key] = GlobalVar(f"{gv.name_hint}_defunc{len(self.specs)}")
            self.pending.append((out, fn, mapping))
        return out

    def function_body(self, fn: Function, ctx: dict[Any, Any], params: list[Var]) -> Function:
        env: dict[Var, Expr] = {}
        new = []
        for p in fn.params:
            v = Var(p.name_hint, self.conv_type(self.ty(p, ctx)))
            env[p] = v
            new.append(v)
        body = self.tr(fn.body, ctx, env)
        ret = self.conv_type(substitute(fn.ret_type, ctx)) if fn.ret_type is not None else None
        return Function(new, body, ret, [], fn.attrs)

    # -- expressions --------------------------------------------------------------------------
    def ty(self, e: Expr, ctx: dict[Any, Any]) -> Any:
        t = e.type_annotation if isinstance(e, Var) and e.type_annotation is not None else None
        if t is None:
            t = e.checked_type if e.has_checked_type else None
        if t is None:
            raise IRError("Defunctionalization needs a type-checked program (run InferType)")
        return substitute(t, ctx)

    def closure(self, e: Expr, t: FuncType, ctx: dict[Any, Any], env: dict[Var, Expr]) -> Expr:
        """The constructor value standing for the function value ``e`` of type ``t``."""
        fam = self.family(t)
        if isinstance(e, GlobalVar):
            con = Constructor(f"{fam.gtv.name_hint}_{e.name_hint}{len(fam.cases)}", [], fam.gtv)
            body = self.call_global(e, list(fam.params), t, ctx)
            fam.cases.append((con, [], body))
            return Call(con, [])
        assert isinstance(e, Function)
        inner = dict(ctx)
        _bind_type_vars(substitute(e.checked_type, ctx), t, inner)
        captured = [v for v in free_vars(e) if v in env]
        fields = [Var(v.name_hint, self.conv_type(self.ty(v, ctx))) for v in captured]
        scope = {**env, **dict(zip(captured, fields, strict=True))}
        body = self.tr(e.body, inner, {**scope, **dict(zip(e.params, fam.params, strict=False))})
        con = Constructor(
            f"{fam.gtv.name_hint}_fn{len(fam.cases)}",
            [f.type_annotation for f in fields],  # type: ignore[misc]
            fam.gtv,
        )
        fam.cases.append((con, fields, body))
        return Call(con, [env.get(v, v) for v in captured])

    def value(self, e: Expr, want: Any, ctx: dict[Any, Any], env: dict[Var, Expr]) -> Expr:
        """``e`` where a value of type ``want`` is expected."""
        if isinstance(want, FuncType) and isinstance(e, Function | GlobalVar):
            return self.closure(e, want, ctx, env)
        return self.tr(e, ctx, env)

    def call_global(self, gv: GlobalVar, args: list[Expr], t: Any, ctx: dict[Any, Any]) -> Expr:
        fn = self.mod[gv]
        fty = fn.checked_type if fn.has_checked_type else None
        mapping: dict[Any, Any] = {}
        if isinstance(fty, FuncType) and isinstance(t, FuncType):
            _bind_type_vars(FuncType(fty.arg_types, fty.ret_type), t, mapping)
        type_args = [mapping.get(p, p) for p in fn.type_params]
        if _has_func(FuncType(fty.arg_types, fty.ret_type)) if isinstance(fty, FuncType) else False:
            return Call(self.spec(gv, type_args), args)
        return Call(gv, args)

    def tr(self, e: Expr, ctx: dict[Any, Any], env: dict[Var, Expr]) -> Expr:  # noqa: C901, PLR0911
        if isinstance(e, Var):
            return env.get(e, e)
        if isinstance(e, GlobalVar):
            t = self.ty(e, ctx)
            if isinstance(t, FuncType) and not t.type_params:
                return self.closure(e, t, ctx, env)
            return e
        if isinstance(e, Function):
            t = self.ty(e, ctx)
            if isinstance(t, FuncType) and not t.type_params:
                return self.closure(e, t, ctx, env)
            raise IRError("Defunctionalization: a polymorphic function value with no instantiation")
        if isinstance(e, Call):
            return self.call(e, ctx, env)
        if isinstance(e, Let):
            v = Var(e.var.name_hint, self.conv_type(self.ty(e.var, ctx)))
            inner = {**env, e.var: v}
            return Let(
                v, self.value(e.value, self.ty(e.var, ctx), ctx, inner), self.tr(e.body, ctx, inner)
            )
        if isinstance(e, If):
            return If(
                self.tr(e.cond, ctx, env),
                self.tr(e.true_branch, ctx, env),
                self.tr(e.false_branch, ctx, env),
            )
        if isinstance(e, Tuple):
            return Tuple([self.tr(f, ctx, env) for f in e.fields])
        if isinstance(e, TupleGetItem):
            return TupleGetItem(self.tr(e.tuple_value, ctx, env), e.index)
        if isinstance(e, Match):
            clauses = []
            for c in e.clauses:
                inner = dict(env)
                lhs = self.pattern(c.lhs, ctx, inner)
                clauses.append(Clause(lhs, self.tr(c.rhs, ctx, inner)))
            return Match(self.tr(e.data, ctx, env), clauses, e.complete)
        if isinstance(e, RefCreate):
            return RefCreate(self.tr(e.value, ctx, env))
        if isinstance(e, RefRead):
            return RefRead(self.tr(e.ref, ctx, env))
        if isinstance(e, RefWrite):
            return RefWrite(self.tr(e.ref, ctx, env), self.tr(e.value, ctx, env))
        return e

    def pattern(self, p: Pattern, ctx: dict[Any, Any], env: dict[Var, Expr]) -> Pattern:
        if isinstance(p, PatternVar):
            v = Var(p.var.name_hint)
            env[p.var] = v
            return PatternVar(v)
        if isinstance(p, PatternConstructor):
            return PatternConstructor(
                p.constructor, [self.pattern(q, ctx, env) for q in p.patterns]
            )
        if isinstance(p, PatternTuple):
            return PatternTuple([self.pattern(q, ctx, env) for q in p.patterns])
        return p

    def call(self, e: Call, ctx: dict[Any, Any], env: dict[Var, Expr]) -> Expr:
        op = e.op
        if isinstance(op, Op | Constructor):
            return Call(op, [self.tr(a, ctx, env) for a in e.args], e.attrs)
        if isinstance(op, GlobalVar):
            fn = self.mod[op]
            fty = fn.checked_type if fn.has_checked_type else None
            if isinstance(fty, FuncType):
                mapping = dict(
                    zip(fn.type_params, [substitute(t, ctx) for t in e.type_args], strict=False)
                )
                want: list[Any] = [substitute(a, mapping) for a in fty.arg_types]
            else:
                want = [None for _ in e.args]
            args = [self.value(a, w, ctx, env) for a, w in zip(e.args, want, strict=False)]
            if isinstance(fty, FuncType) and _has_func(FuncType(fty.arg_types, fty.ret_type)):
                return Call(self.spec(op, [mapping.get(p, p) for p in fn.type_params]), args)
            return Call(op, args)
        if isinstance(op, Function):  # a literal called at once: bind its parameters
            inner = dict(env)
            binds: list[tuple[Var, Expr]] = []
            for p, a in zip(op.params, e.args, strict=False):
                pt = self.ty(p, ctx)
                v = Var(p.name_hint, self.conv_type(pt))
                binds.append((v, self.value(a, pt, ctx, env)))
                inner[p] = v
            body = self.tr(op.body, ctx, inner)
            for v, val in reversed(binds):
                body = Let(v, val, body)
            return body
        t = self.ty(op, ctx)
        if not isinstance(t, FuncType):
            raise IRError(f"Defunctionalization: calling a value of type {t}")
        fam = self.family(t)
        args = [self.value(a, w, ctx, env) for a, w in zip(e.args, t.arg_types, strict=False)]
        return Call(fam.apply, [self.tr(op, ctx, env), *args])

    # -- finishing ----------------------------------------------------------------------------
    def finish(self) -> None:
        while self.pending:
            gv, fn, mapping = self.pending.pop()
            self.mod._add(gv, self.function_body(fn, mapping, []))
        for fam in self.families.values():
            self.mod[fam.gtv] = TypeData(fam.gtv, [], [c for c, _, _ in fam.cases])
        for fam in self.families.values():
            c = Var("closure", TypeCall(fam.gtv, []))
            clauses = [
                Clause(PatternConstructor(con, [PatternVar(f) for f in fields]), body)
                for con, fields, body in fam.cases
            ]
            ret = self.conv_type(fam.ftype.ret_type)
            self.mod._add(fam.apply, Function([c, *fam.params], Match(c, clauses), ret))


def Defunctionalization(func: Function, mod: IRModule) -> Function:
    """``func`` (type-checked, in ``mod``) without higher-order functions; see the module
    docs."""
    if not func.has_checked_type:
        raise IRError("Defunctionalization needs a type-checked function (run InferType)")
    d = _Defunc(mod)
    out = d.function_body(func, {}, [])
    d.finish()
    return Function(out.params, out.body, out.ret_type, func.type_params, func.attrs)
