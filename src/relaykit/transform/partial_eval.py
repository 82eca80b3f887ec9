"""``PartialEvaluate``: evaluate what is known before run time, keep the rest.

An online partial evaluator. Every value is *partially static*: what is known of
it now (a constant, a tuple, an ADT value, a closure, a reference cell) and, when
that is not everything, the residual expression computing it at run time.
Operators whose arguments are all constants are folded; calls of known functions
are unfolded; ``If``/``Match`` on known values take their branch; reference cells
whose contents are known are read without a ``ref_read``. What cannot be decided
is residualised in A-normal form (one ``let`` per computation, in evaluation
order), so ``DeadCodeElimination(inline_once=True)`` tidies the result.

Unfolding stops, leaving a residual call, when a function is re-entered with
arguments that look the same (``f(x) = f(x)`` with ``x`` unknown, or a loop
through equal constants) or nesting passes :data:`MAX_DEPTH`; after a residual
call of an unknown function or a branch on an unknown condition, nothing is
assumed about reference cells any more. Functions for backends or composites
(``Primitive``, ``Compiler``, ``Composite``) are left as they are.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> d = relay.var("d", shape=())
>>> double = relay.Function([d], d + d)
>>> mod = IRModule.from_expr(relay.Function([], double(relay.const(4.0))))
>>> PartialEvaluate()(mod)["main"].body.data.numpy()
array(8., dtype=float32)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relaykit.errors import IRError
from relaykit.ir.adt import (
    Clause,
    Constructor,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
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
from relaykit.ir.types import FuncType, RefType, TupleType, TypeVar

from .anf import to_a_normal_form
from .fold_constant import fold_constant
from .infer_type import InferType
from .pass_infra import ModulePass, PassContext

__all__ = ["PartialEvaluate", "partial_evaluate", "MAX_DEPTH"]

#: The deepest nesting of unfolded calls before a call is left in the residual.
MAX_DEPTH = 100

_OPAQUE_ATTRS = ("Primitive", "Compiler", "Composite")


# -- partially static values -----------------------------------------------------------------
@dataclass(eq=False)
class Closure:
    """A known function: its definition and the values of its free variables."""

    fn: Function
    env: dict[Var, PV]
    name: str = "f"
    residual: Expr | None = None  # a variable or global naming it in the residual, if any


@dataclass(eq=False)
class Cell:
    """A reference cell created while evaluating (its contents live in the store)."""


@dataclass(eq=False)
class PV:
    """A partially static value: ``known`` (``Constant``, ``list`` of PVs for a tuple,
    ``(Constructor, [PV])``, :class:`Closure`, :class:`Cell`, a bare ``Constructor``/``Op``, or
    None) and ``dyn``, the residual expression of the value (None: rebuild from ``known``)."""

    known: Any = None
    dyn: Expr | None = None


@dataclass
class _Scope:
    bindings: list[tuple[Var, Expr]] = field(default_factory=list)


def _opaque(fn: Function) -> bool:
    return bool(fn.attrs) and any(fn.attrs.get(k) for k in _OPAQUE_ATTRS)


class _Evaluator:
    def __init__(self, mod: IRModule | None) -> None:
        self.globals: dict[str, Function] = {}
        if mod is not None:
            for gv, fn in mod.functions.items():
                if isinstance(fn, Function):
                    self.globals[gv.name_hint] = fn
        self.gvars = {gv.name_hint: gv for gv in (mod.get_global_vars() if mod else [])}
        self.scope = _Scope()
        self.store: dict[Cell, PV] = {}
        # the calls being unfolded, innermost last, with how much of their arguments is
        # known (a re-entry with more known structure than its caller may never end)
        self.active: list[tuple[Any, ...]] = []
        self.keys: dict[tuple[Any, ...], int] = {}
        self.sizes: dict[tuple[Any, ...], tuple[int, int]] = {}
        self.branches = 0  # how many residual branches (If, Match, function) we are inside
        self.normalised: set[str] = set()
        # type parameters of the function being evaluated: annotations of code unfolded
        # from elsewhere that mention other type variables are left to inference
        self.root_params: set[Any] = set()

    def push(self, key: tuple[Any, ...], size: int) -> None:
        self.active.append(key)
        self.keys[key] = self.keys.get(key, 0) + 1
        self.sizes.setdefault(key, (size, self.branches))

    def pop(self, key: tuple[Any, ...]) -> None:
        self.active.pop()
        self.keys[key] -= 1
        if not self.keys[key]:
            del self.keys[key]
            del self.sizes[key]

    # -- residual code ---------------------------------------------------------------------
    def emit(self, value: Expr, hint: str = "x") -> Var:
        var = Var(hint)
        self.scope.bindings.append((var, value))
        return var

    def in_scope(self, body: Callable[[], Expr]) -> Expr:
        """Residual code of ``body()`` in a scope of its own (its lets wrap its result)."""
        outer = self.scope
        self.scope = _Scope()
        self.branches += 1
        try:
            result = body()
            for var, value in reversed(self.scope.bindings):
                result = Let(var, value, result)
            return result
        finally:
            self.scope = outer
            self.branches -= 1

    def residual_of(self, e: Expr, env: dict[Var, PV]) -> Expr:
        """The residual code of ``e`` in a scope of its own."""
        return self.in_scope(lambda: self.reify(self.eval(e, env)))

    def reify(self, pv: PV) -> Expr:
        """The residual expression of a value."""
        if pv.dyn is not None:
            return pv.dyn
        k = pv.known
        if type(k) is Constant:
            return k
        if type(k) is list:
            return Tuple([self.reify(f) for f in k])
        if type(k) is tuple:
            con, fields = k
            return Call(con, [self.reify(f) for f in fields])
        if type(k) is Closure:
            if k.residual is not None:
                return k.residual
            return self.residual_function(k)
        if isinstance(k, Constructor | Op):
            return k
        raise IRError(f"PartialEvaluate: no residual form for {k!r}")  # pragma: no cover

    def dynamic(self, value: Expr, hint: str = "x") -> PV:
        return PV(None, self.emit(value, hint))

    # -- expressions -------------------------------------------------------------------------
    def eval(self, e: Expr, env: dict[Var, PV]) -> PV:
        t = type(e)
        if t is Var:
            return env[e] if e in env else PV(None, e)  # a free variable stays itself
        if t is Constant:
            return PV(e)
        if isinstance(e, GlobalVar):
            return self.global_value(e)
        if t is Op or t is Constructor:
            return PV(e, e)
        if isinstance(e, Function):
            return PV(None, e) if _opaque(e) else PV(Closure(e, dict(env)))
        rule = _RULES.get(t)
        if rule is None:  # pragma: no cover - every expression kind has a rule
            raise IRError(f"PartialEvaluate: unexpected {t.__name__}")
        return rule(self, e, env)

    def eval_tuple(self, e: Tuple, env: dict[Var, PV]) -> PV:
        return PV([self.eval(f, env) for f in e.fields])

    def eval_get_item(self, e: TupleGetItem, env: dict[Var, PV]) -> PV:
        tup = self.eval(e.tuple_value, env)
        if type(tup.known) is list:
            return tup.known[e.index]
        return self.dynamic(TupleGetItem(self.reify(tup), e.index))

    def eval_ref_create(self, e: RefCreate, env: dict[Var, PV]) -> PV:
        init = self.eval(e.value, env)
        cell = Cell()
        self.store[cell] = init
        return PV(cell, self.emit(RefCreate(self.reify(init)), "r"))

    def eval_ref_read(self, e: RefRead, env: dict[Var, PV]) -> PV:
        ref = self.eval(e.ref, env)
        if type(ref.known) is Cell and ref.known in self.store:
            return self.store[ref.known]
        return self.dynamic(RefRead(self.reify(ref)))

    def eval_ref_write(self, e: RefWrite, env: dict[Var, PV]) -> PV:
        ref = self.eval(e.ref, env)
        value = self.eval(e.value, env)
        self.emit(RefWrite(self.reify(ref), self.reify(value)), "_")
        if type(ref.known) is Cell:
            self.store[ref.known] = value
        else:
            self.store.clear()  # an unknown cell: any cell may have changed
        return PV([])

    def global_value(self, gv: GlobalVar) -> PV:
        fn = self.globals.get(gv.name_hint)
        if fn is None or _opaque(fn):
            return PV(None, gv)
        if gv.name_hint not in self.normalised:
            self.normalised.add(gv.name_hint)
            fn = self.globals[gv.name_hint] = _anf(fn)
        return PV(Closure(fn, {}, gv.name_hint, residual=gv), gv)

    def eval_let(self, let: Let, env: dict[Var, PV]) -> PV:
        env = dict(env)
        e: Expr = let
        while isinstance(e, Let):
            if type(e.value) is Function and not _opaque(e.value):
                # a (possibly recursive) function: known, and named in the residual
                var = Var(e.var.name_hint, _keep(e.var.type_annotation, self.root_params))
                clo = Closure(e.value, env, e.var.name_hint, residual=var)
                env[e.var] = PV(clo, var)
                clo.env = env
                self.scope.bindings.append((var, self.residual_function(clo)))
            else:
                env[e.var] = self.eval(e.value, env)
            e = e.body
        return self.eval(e, env)

    def eval_if(self, e: If, env: dict[Var, PV]) -> PV:
        cond = self.eval(e.cond, env)
        if type(cond.known) is Constant and cond.known.data.shape == ():
            taken = e.true_branch if bool(cond.known.data.numpy()) else e.false_branch
            return self.eval(taken, env)
        c = self.reify(cond)
        store = dict(self.store)
        then = self.in_scope(lambda: self.reify(self.eval(e.true_branch, env)))
        self.store = dict(store)
        other = self.in_scope(lambda: self.reify(self.eval(e.false_branch, env)))
        self.store = {}
        return self.dynamic(If(c, then, other))

    # -- calls ---------------------------------------------------------------------------------
    def eval_call(self, e: Call, env: dict[Var, PV]) -> PV:
        callee = self.eval(e.op, env)
        args = [self.eval(a, env) for a in e.args]
        k = callee.known
        if type(k) is Op:
            return self.call_op(e, k, args)
        if type(k) is Constructor:
            return PV((k, args))
        if type(k) is Closure:
            return self.apply(k, args, callee)
        out = self.dynamic(Call(self.reify(callee), [self.reify(a) for a in args], e.attrs))
        self.store.clear()  # an unknown function may write any cell
        return out

    def call_op(self, e: Call, op: Op, args: list[PV]) -> PV:
        exprs = [self.reify(a) for a in args]
        call = Call(op, exprs, e.attrs, e.type_args)
        if all(_is_constant_tree(x) for x in exprs) and not op.name.startswith(
            ("random.", "debug", "memory.", "vm.", "annotation.", "on_device", "device_copy")
        ):
            try:
                folded = fold_constant(call)
            except Exception:
                folded = call
            if type(folded) is Constant:
                return PV(folded)
            if type(folded) is Tuple and all(type(f) is Constant for f in folded.fields):
                return PV([PV(f) for f in folded.fields])
        return self.dynamic(call)

    def apply(self, clo: Closure, args: list[PV], callee: PV) -> PV:
        fn = clo.fn
        who = (id(clo.fn), id(clo.env) if clo.residual is None else 0)
        key = (*who, *map(_key, args))
        nothing_known = not clo.env and all(a.known is None for a in args)
        size = sum(map(_size, args))
        outer = next((a for a in reversed(self.active) if a[:2] == who), None)
        if (
            nothing_known  # a global called on unknown values: unfolding only inlines it
            or len(args) != len(fn.params)
            or key in self.keys
            or (outer is not None and size > self.sizes[outer][0])  # growing: may not end
            # re-entered under a branch on an unknown value without shrinking: unfolding
            # could follow every path of the recursion
            or (
                outer is not None
                and self.branches > self.sizes[outer][1]
                and size == self.sizes[outer][0]
            )
            or len(self.active) >= MAX_DEPTH
        ):
            out = self.dynamic(Call(self.reify(callee), [self.reify(a) for a in args]))
            self.store.clear()
            return out
        env = dict(clo.env)
        env.update(zip(fn.params, args, strict=True))
        self.push(key, size)
        try:
            return self.eval(fn.body, env)
        finally:
            self.pop(key)

    def residual_function(self, clo: Closure) -> Function:
        """The function of ``clo`` partially evaluated with unknown arguments."""
        fn = clo.fn
        allowed = self.root_params | set(fn.type_params)
        if not self.active:
            self.root_params = allowed
        params = [Var(p.name_hint, _keep(p.type_annotation, allowed)) for p in fn.params]
        env = dict(clo.env)
        env.update({p: PV(None, q) for p, q in zip(fn.params, params, strict=True)})
        key = (id(fn), id(clo.env) if clo.residual is None else 0, *(("d",) * len(params)))
        store, self.store = self.store, {}
        self.push(key, 0)
        try:
            body = self.in_scope(lambda: self.reify(self.eval(fn.body, env)))
        finally:
            self.pop(key)
            self.store = store
        ret = _keep(fn.ret_type, allowed)
        return Function(params, body, ret, fn.type_params, fn.attrs, span=fn.span)

    # -- match ---------------------------------------------------------------------------------
    def eval_match(self, e: Match, env: dict[Var, PV]) -> PV:
        data = self.eval(e.data, env)
        for clause in e.clauses:
            bound: dict[Var, PV] = {}
            verdict = _match(clause.lhs, data, bound)
            if verdict is None:
                break  # undecidable here: residual match
            if verdict:
                return self.eval(clause.rhs, {**env, **bound})
        scrutinee = self.reify(data)
        store = dict(self.store)
        clauses = []
        for clause in e.clauses:
            renamed: dict[Var, PV] = {}
            lhs = _rename(clause.lhs, renamed)
            self.store = dict(store)
            scope = {**env, **renamed}
            clauses.append(Clause(lhs, self.residual_of(clause.rhs, scope)))
        self.store = {}
        return self.dynamic(Match(scrutinee, clauses, e.complete))


_RULES: dict[type, Callable[[_Evaluator, Any, dict[Var, PV]], PV]] = {
    Tuple: _Evaluator.eval_tuple,
    TupleGetItem: _Evaluator.eval_get_item,
    Let: _Evaluator.eval_let,
    If: _Evaluator.eval_if,
    Call: _Evaluator.eval_call,
    Match: _Evaluator.eval_match,
    RefCreate: _Evaluator.eval_ref_create,
    RefRead: _Evaluator.eval_ref_read,
    RefWrite: _Evaluator.eval_ref_write,
}


def _anf(fn: Function) -> Function:
    """``fn`` in A-normal form: a sub-expression shared in the graph is computed once."""
    out = to_a_normal_form(fn)
    return out if type(out) is Function else fn


def _is_constant_tree(e: Expr) -> bool:
    if type(e) is Constant:
        return True
    return type(e) is Tuple and all(_is_constant_tree(f) for f in e.fields)


def _key(pv: PV) -> Any:
    """A hashable summary of what is known of a value (unknown values all look alike)."""
    k = pv.known
    if type(k) is Constant:
        arr = k.data.numpy()
        return ("c", arr.dtype.str, arr.shape, np.ascontiguousarray(arr).tobytes())
    if type(k) is list:
        return ("t", *map(_key, k))
    if type(k) is tuple:
        return ("k", k[0].name_hint, *map(_key, k[1]))
    if k is None:
        return ("d",)
    return ("o", id(k))


def _type_vars(t: Any, out: set[Any]) -> set[Any]:
    if isinstance(t, TypeVar):
        out.add(t)
    elif isinstance(t, TupleType):
        for f in t.fields:
            _type_vars(f, out)
    elif isinstance(t, FuncType):
        inner: set[Any] = set()
        for a in (*t.arg_types, t.ret_type):
            _type_vars(a, inner)
        out.update(inner - set(t.type_params))
    elif isinstance(t, TypeCall):
        for a in t.args:
            _type_vars(a, out)
    elif isinstance(t, RefType):
        _type_vars(t.value, out)
    return out


def _keep(t: Any, allowed: set[Any]) -> Any:
    """``t`` if every type variable in it is ``allowed``, else None (to be inferred)."""
    if t is None:
        return None
    return t if _type_vars(t, set()) <= allowed else None


def _size(pv: PV) -> int:
    """How much known structure a value has (tuple and constructor nodes)."""
    k = pv.known
    if type(k) is list:
        return 1 + sum(map(_size, k))
    if type(k) is tuple:
        return 1 + sum(map(_size, k[1]))
    return 0


def _match(p: Pattern, v: PV, bound: dict[Var, PV]) -> bool | None:
    """Whether ``v`` matches ``p`` (binding its variables), or None if not known yet."""
    if isinstance(p, PatternWildcard):
        return True
    if isinstance(p, PatternVar):
        bound[p.var] = v
        return True
    if isinstance(p, PatternConstructor):
        if type(v.known) is not tuple:
            return None
        con, fields = v.known
        if con.name_hint != p.constructor.name_hint or con.belong_to != p.constructor.belong_to:
            return False
        return _match_all(p.patterns, fields, bound)
    if isinstance(p, PatternTuple):
        if type(v.known) is not list:
            return None
        return _match_all(p.patterns, v.known, bound)
    return None  # pragma: no cover


def _match_all(ps: Any, vs: list[PV], bound: dict[Var, PV]) -> bool | None:
    result: bool | None = True
    for p, v in zip(ps, vs, strict=False):
        r = _match(p, v, bound)
        if r is False:
            return False
        if r is None:
            result = None
    return result


def _rename(p: Pattern, renamed: dict[Var, PV]) -> Pattern:
    """``p`` with fresh variables, each bound in ``renamed`` to an unknown value."""
    if isinstance(p, PatternVar):
        var = Var(p.var.name_hint)  # its type comes from the scrutinee's
        renamed[p.var] = PV(None, var)
        return PatternVar(var)
    if isinstance(p, PatternConstructor):
        return PatternConstructor(p.constructor, [_rename(q, renamed) for q in p.patterns])
    if isinstance(p, PatternTuple):
        return PatternTuple([_rename(q, renamed) for q in p.patterns])
    return p


def partial_evaluate(expr: Expr, mod: IRModule | None = None) -> Expr:
    """``expr`` partially evaluated (globals of ``mod`` are unfolded where known)."""
    ev = _Evaluator(mod)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 50_000))
    try:
        if type(expr) is Function and not _opaque(expr):
            return ev.residual_function(Closure(_anf(expr), {}))
        body = to_a_normal_form(expr)
        return ev.in_scope(lambda: ev.reify(ev.eval(body, {})))
    finally:
        sys.setrecursionlimit(limit)


def _evaluate_module(mod: IRModule) -> IRModule:
    out = mod.copy()
    for gv, fn in list(mod.functions.items()):
        if not isinstance(fn, Function) or _opaque(fn):
            continue
        ev = _Evaluator(mod)
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 50_000))
        try:
            clo = Closure(_anf(fn), {}, gv.name_hint, residual=gv)
            new = ev.residual_function(clo)
        finally:
            sys.setrecursionlimit(limit)
        out.update_func(gv, new)
    return InferType()(out)


class PartialEvaluate(ModulePass):
    """``relay.transform.PartialEvaluate()`` (opt_level 1): see the module docs."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=1, name="PartialEvaluate")

    @staticmethod
    def _transform(mod: IRModule, ctx: PassContext) -> IRModule:
        return _evaluate_module(mod)
