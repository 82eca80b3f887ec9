"""``ManifestLifetimes``: a ``memory.kill(v)`` after the last use of every variable.

For functions in A-normal form (let chains, ``if`` and ``match`` bound to variables),
as the VM compiles them. First aliases are dropped: ``let %a = %b`` binds nothing new,
so uses of ``%a`` become uses of ``%b`` (and a ``match`` clause binding the whole
scrutinee to a pattern variable uses the scrutinee). Then a control-flow graph of the
let bindings is built (an ``if`` or ``match`` binding branches into one block per arm,
which join before the next binding), live variables are found by the usual backwards
dataflow, and after each binding every variable live before it but not after it gets
``let %_ = memory.kill(%v)``.

>>> import relaykit as tvm
>>> mod = tvm.relay.parse('''#[version = "0.0.5"]
... def @main(%x: int) { let %y = %x + %x; let %z = %y * %y; %z }''')
>>> killed = ManifestLifetimes()(mod)["main"].body.body.value
>>> killed.op.name, killed.args[0].name_hint
('memory.kill', 'x')
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from relaykit.errors import IRError
from relaykit.ir.adt import Clause, Match, PatternVar
from relaykit.ir.expr import Call, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from relaykit.ir.functor import rebuild
from relaykit.ir.module import IRModule
from relaykit.op.memory import kill

from .pass_infra import FunctionPass, PassContext

__all__ = ["ManifestLifetimes", "manifest_lifetimes"]


# -- aliases --------------------------------------------------------------------------------


def _eliminate_aliases(expr: Expr, alias: dict[Var, Var]) -> Expr:
    """``expr`` without ``let %a = %b`` bindings, every alias replaced by what it names."""
    if isinstance(expr, Var):
        return alias.get(expr, expr)
    if isinstance(expr, Let):
        bindings: list[tuple[Var, Expr]] = []
        added: list[Var] = []
        node: Expr = expr
        while isinstance(node, Let):
            if isinstance(node.value, Var):
                alias[node.var] = alias.get(node.value, node.value)
                added.append(node.var)
            else:
                bindings.append((node.var, _eliminate_aliases(node.value, alias)))
            node = node.body
        out = _eliminate_aliases(node, alias)
        for var, value in reversed(bindings):
            out = Let(var, value, out)
        for var in added:
            del alias[var]
        return out
    if isinstance(expr, Match) and isinstance(expr.data, Var):
        data = alias.get(expr.data, expr.data)
        clauses = []
        for clause in expr.clauses:
            bound = clause.lhs.var if isinstance(clause.lhs, PatternVar) else None
            if bound is not None:
                alias[bound] = data
            clauses.append(Clause(clause.lhs, _eliminate_aliases(clause.rhs, alias)))
            if bound is not None:
                del alias[bound]
        return Match(data, clauses, expr.complete, expr.span)
    return rebuild(expr, lambda child: _eliminate_aliases(child, alias))


# -- the control-flow graph -----------------------------------------------------------------------


@dataclass(eq=False)
class _Block:
    nodes: list[_Node] = field(default_factory=list)
    succ: list[_Block] = field(default_factory=list)
    pred: list[_Block] = field(default_factory=list)


@dataclass(eq=False)
class _Node:
    block: _Block
    index: int
    expr: Expr

    def succ(self) -> list[_Node]:
        if self.index + 1 < len(self.block.nodes):
            return [self.block.nodes[self.index + 1]]
        return [b.nodes[0] for b in self.block.succ if b.nodes]

    def pred(self) -> list[_Node]:
        if self.index > 0:
            return [self.block.nodes[self.index - 1]]
        return [b.nodes[-1] for b in self.block.pred if b.nodes]


class _Graph:
    """The let bindings (and final expressions) of a function as a control-flow graph."""

    def __init__(self, func: Function) -> None:
        self.order: list[_Node] = []
        self.let_node: dict[Expr, _Node] = {}
        self._visit(func.body, _Block())

    def _make(self, block: _Block, expr: Expr) -> _Node:
        node = _Node(block, len(block.nodes), expr)
        block.nodes.append(node)
        self.order.append(node)
        return node

    @staticmethod
    def _link(a: _Block, b: _Block) -> None:
        a.succ.append(b)
        b.pred.append(a)

    def _visit(self, expr: Expr, block: _Block) -> None:
        while isinstance(expr, Let):
            self.let_node[expr] = self._make(block, expr)
            arms: list[Expr] = []
            if isinstance(expr.value, If):
                arms = [expr.value.true_branch, expr.value.false_branch]
            elif isinstance(expr.value, Match):
                arms = [c.rhs for c in expr.value.clauses]
            if arms:
                after = _Block()
                for arm in arms:
                    inner = _Block()
                    self._link(block, inner)
                    self._link(inner, after)
                    self._visit(arm, inner)
                block = after
            expr = expr.body
        if isinstance(expr, (If, Match)):
            raise IRError(
                "ManifestLifetimes needs A-normal form: bind each if and match to a variable "
                "(run relay.transform.ToANormalForm first)"
            )
        self._make(block, expr)


def _uses(expr: Expr) -> set[Var]:
    """The variables a binding's value reads (its atoms; a nested function reads none)."""
    out: set[Var] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            out.add(e)
        elif isinstance(e, Call):
            stack.append(e.op)
            stack.extend(e.args)
        elif isinstance(e, Tuple):
            stack.extend(e.fields)
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
        elif isinstance(e, If):
            stack.append(e.cond)
        elif isinstance(e, Match):
            stack.append(e.data)
    return out


def _liveness(graph: _Graph) -> tuple[dict[_Node, set[Var]], dict[_Node, set[Var]]]:
    use: dict[_Node, set[Var]] = {}
    define: dict[_Node, Var | None] = {}
    for n in graph.order:
        if isinstance(n.expr, Let):
            use[n], define[n] = _uses(n.expr.value), n.expr.var
        else:
            use[n], define[n] = _uses(n.expr), None
    live_in: dict[_Node, set[Var]] = {n: set() for n in graph.order}
    live_out: dict[_Node, set[Var]] = {n: set() for n in graph.order}
    work = deque(reversed(graph.order))
    while work:
        n = work.popleft()
        new_in = use[n] | {v for v in live_out[n] if v is not define[n]}
        new_out: set[Var] = set()
        for s in n.succ():
            new_out |= live_in[s]
        if new_in != live_in[n] or new_out != live_out[n]:
            live_in[n], live_out[n] = new_in, new_out
            work.extend(n.pred())
    return live_in, live_out


# -- inserting the kills ----------------------------------------------------------------------


def _ordered(vars_: Iterable[Var], rank: dict[Var, int]) -> list[Var]:
    return sorted(vars_, key=lambda v: (rank.get(v, len(rank)), v.name_hint))


def _insert_kills(
    expr: Expr,
    graph: _Graph,
    live: tuple[dict[_Node, set[Var]], dict[_Node, set[Var]]],
    rank: dict[Var, int],
) -> Expr:
    live_in, live_out = live
    if isinstance(expr, Let):
        bindings: list[tuple[Var, Expr]] = []
        count = 0
        node: Expr = expr
        while isinstance(node, Let):
            bindings.append((node.var, _insert_kills(node.value, graph, live, rank)))
            rank.setdefault(node.var, len(rank))
            n = graph.let_node[node]
            for v in _ordered(live_in[n] - live_out[n], rank):
                bindings.append((Var(f"_{count}"), kill(v)))
                count += 1
            node = node.body
        out = _insert_kills(node, graph, live, rank)
        for var, value in reversed(bindings):
            out = Let(var, value, out)
        return out
    if isinstance(expr, Function):
        return expr  # a nested function keeps its own lifetimes
    return rebuild(expr, lambda child: _insert_kills(child, graph, live, rank))


def manifest_lifetimes(func: Function) -> Function:
    """``func`` (A-normal form) with aliases dropped and a ``memory.kill`` after the last
    use of each variable."""
    plain = _eliminate_aliases(func, {})
    assert isinstance(plain, Function)
    graph = _Graph(plain)
    rank = {p: k for k, p in enumerate(plain.params)}
    body = _insert_kills(plain.body, graph, _liveness(graph), rank)
    return plain.with_fields(body=body)


class ManifestLifetimes(FunctionPass):
    """``relay.transform.ManifestLifetimes()`` (opt_level 0): see the module."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="ManifestLifetimes")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        return manifest_lifetimes(fn)
