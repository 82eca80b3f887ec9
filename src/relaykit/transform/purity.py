"""Which ``let`` values have side effects: the purity analysis of DeadCodeElimination.

Evaluating an expression is *impure* when it calls a stateful operator
(``TOpIsStateful``, such as ``memory.kill``), reads or writes a reference, or calls a
function whose body is impure. Calling a value is impure when it is a function whose
body is; as in TVM, what is not known (a function passed as an argument, taken out of
a tuple, a reference or an ADT) is assumed impure, and a recursive function is assumed
pure while its own body is being analysed. A dead ``let`` whose value is impure stays,
and an impure value is never moved by inlining.

>>> from relaykit import relay
>>> r = relay.var("r")
>>> body = relay.Let(r, relay.RefCreate(relay.const(1)), relay.RefRead(r))
>>> sorted(type(let.value).__name__ for let in impure_lets(body, None))
[]
>>> effect = relay.Let(relay.var("u"), relay.RefWrite(r, relay.const(2)), relay.const(0))
>>> prog = relay.Let(r, relay.RefCreate(relay.const(1)), effect)
>>> [type(let.value).__name__ for let in impure_lets(prog, None)]
['RefWrite']
"""

from __future__ import annotations

from relaykit.ir.adt import Clause, Constructor, Match, PatternVar
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
    checked_type_or_none,
)
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.ref import RefCreate, RefRead, RefWrite
from relaykit.ir.types import FuncType

__all__ = ["impure_lets", "Purity"]


def _higher_order(e: Expr) -> bool:
    return isinstance(checked_type_or_none(e), FuncType)


class Purity:
    """The analysis over one module: ``eval_impure`` and ``call_impure`` per node."""

    def __init__(self, mod: IRModule | None) -> None:
        self.mod = mod
        self.ev: dict[Expr, bool] = {}
        self.call: dict[Expr, bool] = {}
        self.var_call: dict[Var, bool] = {}
        self.globals: dict[str, bool] = {}

    def global_call_impure(self, gv: GlobalVar) -> bool:
        name = gv.name_hint
        if name in self.globals:
            return self.globals[name]
        fn = None
        if self.mod is not None:
            try:
                fn = self.mod[name]
            except (KeyError, LookupError, ValueError):
                fn = None
        if not isinstance(fn, Function) or fn.attrs.get("Extern"):
            return True  # externals are assumed impure
        self.globals[name] = False  # a recursive global: assume pure meanwhile
        self.analyse(fn)
        self.globals[name] = self.call[fn]
        return self.globals[name]

    def analyse(self, root: Expr) -> list[Let]:
        """Analyse every node under ``root`` (children first); the lets met, in order."""
        ev = self.ev
        lets = [n for n in post_order(root, skip=lambda n: n in ev) if isinstance(n, Let)]
        value_of: dict[int, Let] = {}
        for let in lets:
            self.var_call.setdefault(let.var, False)  # a recursive function: pure meanwhile
            value_of[id(let.value)] = let
        for node in post_order(root, skip=lambda n: n in ev):
            if type(node) is Clause:
                continue
            ev[node], self.call[node] = self._node(node)
            binder = value_of.get(id(node))
            if binder is not None:  # uses of the variable come later, in the let's body
                self.var_call[binder.var] = self.call[node]
        return lets

    def _node(self, node: Expr) -> tuple[bool, bool]:  # noqa: PLR0911 - one case per kind
        ev, call = self.ev, self.call
        if isinstance(node, Op):
            return False, bool(node.get_attr("TOpIsStateful"))
        if isinstance(node, GlobalVar):
            return False, self.global_call_impure(node)
        if isinstance(node, (Var, Constant, Constructor)):
            return False, False  # a variable's call purity is read where it is called
        if isinstance(node, Function):
            return False, ev[node.body] or call[node.body]
        if isinstance(node, Call):
            callee = self._callee(node.op)
            e = ev[node.op] or any(ev[a] for a in node.args) or callee
            return e, _higher_order(node) and callee
        if isinstance(node, Let):
            return ev[node.value] or ev[node.body], call[node.body]
        if isinstance(node, If):
            e = ev[node.cond] or ev[node.true_branch] or ev[node.false_branch]
            return e, call[node.true_branch] or call[node.false_branch]
        if isinstance(node, Tuple):
            return any(ev[f] for f in node.fields), False
        if isinstance(node, TupleGetItem):
            return ev[node.tuple_value], _higher_order(node)
        if isinstance(node, RefCreate):
            return ev[node.value], False
        if isinstance(node, (RefRead, RefWrite)):
            return True, _higher_order(node)
        if isinstance(node, Match):
            return self._match(node)
        return True, True  # anything else: assume the worst

    def _callee(self, op: Expr) -> bool:
        """Whether calling ``op`` is impure; a parameter's function is unknown."""
        if isinstance(op, Var):
            found = self.var_call.get(op)
            return _higher_order(op) if found is None else found
        return self.call[op]

    def _match(self, node: Match) -> tuple[bool, bool]:
        ev, call = self.ev, self.call
        e = ev[node.data] or any(ev[c.rhs] for c in node.clauses)
        c = any(call[c.rhs] for c in node.clauses)
        for clause in node.clauses:
            stack = [clause.lhs]
            while stack:
                p = stack.pop()
                if isinstance(p, PatternVar):
                    self.var_call[p.var] = _higher_order(p.var)
                stack.extend(getattr(p, "patterns", ()))
        return e, c


def impure_lets(root: Expr, mod: IRModule | None) -> set[Let]:
    """The ``let`` bindings under ``root`` whose values are impure to evaluate."""
    purity = Purity(mod)
    return {let for let in purity.analyse(root) if purity.ev[let.value]}
