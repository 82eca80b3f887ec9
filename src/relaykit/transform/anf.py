"""``ToANormalForm`` and ``ToGraphNormalForm``: between dataflow graphs and let chains.

A-normal form binds every operator call, tuple and projection to a ``let``
variable, in an order where each binding comes after what it uses, so the
program reads as a sequence of steps. Graph normal form is the opposite: every
``let`` is inlined and sharing is expressed by reusing nodes. Each function
body (and each ``if`` branch) is its own scope: a computation is bound in the
scope that holds it, so nothing moves into or out of a branch or a closure.
Both directions are one walk over the graph.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2,))
>>> y = relay.exp(x)
>>> mod = ToANormalForm()(IRModule.from_expr(relay.Function([x], y + y)))
>>> print(mod["main"])
fn (%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  let %x1 = exp(%x) /* ty=Tensor[(2), float32] */;
  let %x2 = add(%x1, %x1) /* ty=Tensor[(2), float32] */;
  %x2
}
>>> graph = ToGraphNormalForm()(mod)
>>> body = graph["main"].body
>>> body.args[0] is body.args[1]
True
"""

from __future__ import annotations

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

from ._let_inline import remove_lets
from .pass_infra import ModulePass, PassContext

__all__ = ["ToANormalForm", "ToGraphNormalForm", "to_a_normal_form", "to_graph_normal_form"]

_ATOMS = (Var, Constant, GlobalVar, Op, Function)
_BOUND = (Call, Tuple, TupleGetItem, If, Let)


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
        t = type(node)
        if t is If:
            kids: tuple[Expr, ...] = (node.cond,)
        elif t is Let or t is Function:
            kids = ()
        else:
            kids = children(node)
        for k in reversed(kids):
            stack.append((k, False))
    return out


def to_a_normal_form(expr: Expr) -> Expr:
    """``expr`` with every non-atomic sub-expression bound by a ``let`` in its scope."""
    done: dict[Expr, Expr] = {}
    # Inner scopes first: every Function body, If branch and Let part is a scope.
    scopes: list[Expr] = []
    for node in post_order(expr):
        t = type(node)
        if t is Function:
            scopes.append(node.body)
        elif t is If:
            scopes.extend((node.true_branch, node.false_branch))
        elif t is Let:
            scopes.extend((node.value, node.body))
    if type(expr) is not Function:
        scopes.append(expr)
    converted: dict[Expr, Expr] = {}
    counter = [0]

    def fresh() -> Var:
        counter[0] += 1
        return Var(f"x{counter[0]}")

    def rebuilt(node: Expr, atom: dict[Expr, Expr]) -> Expr:
        """``node`` with its children replaced by their atoms / converted scopes."""
        t = type(node)

        def get(c: Expr) -> Expr:
            if c in atom:
                return atom[c]
            if type(c) is Function:
                return done.get(c, c)
            return c

        if t is Call:
            return node.with_fields(op=get(node.op), args=[get(a) for a in node.args])
        if t is Tuple:
            return node.with_fields(fields=[get(f) for f in node.fields])
        if t is TupleGetItem:
            return node.with_fields(tuple_value=get(node.tuple_value))
        if t is If:
            return node.with_fields(
                cond=get(node.cond),
                true_branch=converted[node.true_branch],
                false_branch=converted[node.false_branch],
            )
        if t is Let:
            return node.with_fields(value=converted[node.value], body=converted[node.body])
        return node

    owners: dict[Expr, list[Function]] = {}
    for node in post_order(expr):
        if type(node) is Function:
            owners.setdefault(node.body, []).append(node)
    for scope in scopes:
        if scope in converted:
            continue
        nodes = _scope_nodes(scope)
        atom: dict[Expr, Expr] = {}
        bindings: list[tuple[Var, Expr]] = []
        for n in nodes:
            if n is scope and type(n) is Let:
                atom[n] = rebuilt(n, atom)
            elif isinstance(n, _BOUND):
                value = rebuilt(n, atom)
                v = fresh()
                bindings.append((v, value))
                atom[n] = v
        result = atom.get(scope, done.get(scope, scope) if type(scope) is Function else scope)
        for v, value in reversed(bindings):
            result = Let(v, value, result)
        converted[scope] = result
        for fn in owners.get(scope, ()):
            done[fn] = fn.with_fields(body=result)
    if type(expr) is Function:
        return done.get(expr, expr)
    return converted[expr]


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
