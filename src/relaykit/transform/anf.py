"""``ToANormalForm`` and ``ToGraphNormalForm``: between dataflow graphs and let chains.

A-normal form binds every operator call, tuple and projection to a ``let``
variable, in an order where each binding comes after what it uses, so the
program reads as a sequence of steps. Graph normal form is the opposite: every
``let`` is inlined and sharing is expressed by reusing nodes. Each function
body (and each ``if`` branch and ``match`` clause) is its own scope: a computation is bound in the
scope that holds it, so nothing moves into or out of a branch or a closure.
Both directions are one walk over the graph.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2,))
>>> y = relay.exp(x)
>>> mod = ToANormalForm()(IRModule.from_expr(relay.Function([x], y + y)))
>>> print(mod["main"])
fn (%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  let %x1: ? = exp(%x) /* ty=Tensor[(2), float32] */;
  let %x2: ? = add(%x1, %x1) /* ty=Tensor[(2), float32] */;
  %x2
}
>>> graph = ToGraphNormalForm()(mod)
>>> body = graph["main"].body
>>> body.args[0] is body.args[1]
True
"""

from __future__ import annotations

from relaykit.ir.adt import Match
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
from relaykit.ir.functor import children, post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.ref import RefCreate, RefRead, RefWrite
from relaykit.ir.types import IncompleteType

from ._let_inline import remove_lets
from .pass_infra import ModulePass, PassContext

__all__ = ["ToANormalForm", "ToGraphNormalForm", "to_a_normal_form", "to_graph_normal_form"]

_ATOMS = (Var, GlobalVar, Op, Function)
_BOUND = (Constant, Call, Tuple, TupleGetItem, If, Let, Match, RefCreate, RefRead, RefWrite)


def _scope_nodes(root: Expr) -> list[Expr]:
    """The nodes of one scope in post-order: not descending into functions, branches
    or let bodies/values (those are scopes of their own)."""

    def skip(n: Expr) -> bool:
        return n is not root and type(n) is Function

    out = []
    stack: list[tuple[Expr, bool]] = [(root, False)]
    seen: set[int] = set()
    while stack:
        node, expanded = stack.pop()
        if expanded:
            out.append(node)
            continue
        if id(node) in seen or skip(node):
            continue
        seen.add(id(node))
        stack.append((node, True))
        if type(node) is If:
            kids: tuple[Expr, ...] = (node.cond,)
        elif type(node) is Match:
            kids = (node.data,)
        elif type(node) is Let or type(node) is Function:
            kids = ()
        else:
            kids = children(node)
        for k in reversed(kids):
            stack.append((k, False))
    return out


def _scopes_inner_first(expr: Expr) -> list[Expr]:
    """Every scope of ``expr`` (function bodies, if branches, let parts), inner first."""
    scopes: list[Expr] = []
    for node in post_order(expr):
        if type(node) is Function:
            scopes.append(node.body)
        elif type(node) is If:
            scopes.extend((node.true_branch, node.false_branch))
        elif type(node) is Match:
            scopes.extend(c.rhs for c in node.clauses)
        elif type(node) is Let:
            scopes.extend((node.value, node.body))
    if type(expr) is not Function:
        scopes.append(expr)
    return scopes


class _ANormalizer:
    """One run of :func:`to_a_normal_form`: each scope becomes a let chain, inner first."""

    def __init__(self, expr: Expr) -> None:
        self.expr = expr
        self.done: dict[Expr, Expr] = {}  # function -> its converted function
        self.converted: dict[Expr, Expr] = {}  # scope -> its let chain
        self.counter = 0
        self.owners: dict[Expr, list[Function]] = {}  # body -> the functions it is the body of
        for node in post_order(expr):
            if type(node) is Function:
                self.owners.setdefault(node.body, []).append(node)

    def fresh(self) -> Var:
        self.counter += 1
        return Var(f"x{self.counter}", IncompleteType())

    def rebuilt(self, node: Expr, atom: dict[Expr, Expr]) -> Expr:
        """``node`` with its children replaced by their atoms / converted scopes."""

        def get(c: Expr) -> Expr:
            if c in atom:
                return atom[c]
            if type(c) is Function:
                return self.done.get(c, c)
            return c

        converted = self.converted
        if type(node) is Call:
            return node.with_fields(op=get(node.op), args=[get(a) for a in node.args])
        if type(node) is Tuple:
            return node.with_fields(fields=[get(f) for f in node.fields])
        if type(node) is TupleGetItem:
            return node.with_fields(tuple_value=get(node.tuple_value))
        if type(node) is If:
            return node.with_fields(
                cond=get(node.cond),
                true_branch=converted[node.true_branch],
                false_branch=converted[node.false_branch],
            )
        if type(node) is Let:
            return node.with_fields(value=converted[node.value], body=converted[node.body])
        if type(node) is Match:
            clauses = [c.with_fields(rhs=converted[c.rhs]) for c in node.clauses]
            return node.with_fields(data=get(node.data), clauses=clauses)
        if type(node) is RefCreate:
            return node.with_fields(value=get(node.value))
        if type(node) is RefRead:
            return node.with_fields(ref=get(node.ref))
        if type(node) is RefWrite:
            return node.with_fields(ref=get(node.ref), value=get(node.value))
        return node

    def convert(self, scope: Expr) -> None:
        """Bind every non-atomic node of ``scope`` by a let, in post-order."""
        atom: dict[Expr, Expr] = {}
        bindings: list[tuple[Var, Expr]] = []
        for n in _scope_nodes(scope):
            if n is scope and type(n) is Let:
                atom[n] = self.rebuilt(n, atom)
            elif isinstance(n, _BOUND):
                value = self.rebuilt(n, atom)
                v = self.fresh()
                bindings.append((v, value))
                atom[n] = v
        default = self.done.get(scope, scope) if type(scope) is Function else scope
        result = atom.get(scope, default)
        for v, value in reversed(bindings):
            result = Let(v, value, result)
        self.converted[scope] = result
        for fn in self.owners.get(scope, ()):
            self.done[fn] = fn.with_fields(body=result)

    def run(self) -> Expr:
        for scope in _scopes_inner_first(self.expr):
            if scope not in self.converted:
                self.convert(scope)
        if type(self.expr) is Function:
            return self.done.get(self.expr, self.expr)
        return self.converted[self.expr]


def to_a_normal_form(expr: Expr) -> Expr:
    """``expr`` with every non-atomic sub-expression bound by a ``let`` in its scope."""
    return _ANormalizer(expr).run()


def to_graph_normal_form(expr: Expr) -> Expr:
    """``expr`` with every ``let`` inlined (sharing becomes node reuse)."""
    return remove_lets(expr, lambda let: True)


class ToANormalForm(ModulePass):
    """``relay.transform.ToANormalForm()`` (opt_level 1)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=1, name="ToANormalForm")

    @staticmethod
    def _transform(mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod.copy()
        for gv, fn in mod.items():
            if "Compiler" in fn.attrs or "Primitive" in fn.attrs:
                continue
            new = to_a_normal_form(fn)
            if new is not fn:
                out[gv] = new
        return out


class ToGraphNormalForm(ModulePass):
    """``relay.transform.ToGraphNormalForm()`` (opt_level 1)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=1, name="ToGraphNormalForm")

    @staticmethod
    def _transform(mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod.copy()
        for gv, fn in mod.items():
            new = to_graph_normal_form(fn)
            if new is not fn:
                out[gv] = new
        return out
