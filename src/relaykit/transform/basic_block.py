"""``ToBasicBlockNormalForm`` and ``check_basic_block_normal_form``.

A basic block is a function body, an ``if`` branch or a ``match`` clause. In
basic block normal form an expression is shared only inside one block: a
computation used from several blocks is bound by a ``let`` in the innermost
block that encloses all its uses (so it is computed once, before the branches
that need it), and everything used within one block stays a dataflow graph.
The binding goes after the ``let`` of that block it depends on, if any.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> c, x = relay.var("c", "bool"), relay.var("x", shape=())
>>> y = x + x
>>> mod = IRModule.from_expr(relay.Function([c, x], relay.If(c, y, y * y)))
>>> print(ToBasicBlockNormalForm()(mod)["main"])
fn (%c: bool, %x: float32) -> float32 {
  let %x_1: float32 = add(%x, %x) /* ty=float32 */;
  if (%c) {
    %x_1
  } else {
    multiply(%x_1, %x_1) /* ty=float32 */
  }
}
"""

from __future__ import annotations

from relaykit.errors import IRError
from relaykit.ir.adt import Clause, Constructor, Match
from relaykit.ir.expr import Constant, Expr, Function, GlobalVar, If, Let, Var
from relaykit.ir.functor import children, post_order, rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op

from .pass_infra import ModulePass, PassContext

__all__ = [
    "ToBasicBlockNormalForm",
    "to_basic_block_normal_form",
    "check_basic_block_normal_form",
]

_ATOMS = (Var, GlobalVar, Constant, Op, Constructor)


class _Block:
    __slots__ = ("parent", "depth")

    def __init__(self, parent: _Block | None) -> None:
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1


def _lca(a: _Block, b: _Block) -> _Block:
    while a is not b:
        if a.depth >= b.depth:
            a = a.parent  # type: ignore[assignment]
        else:
            b = b.parent  # type: ignore[assignment]
    return a


class _Plan:
    """Which block each computation belongs to, and which are used from several blocks."""

    def __init__(self, root: Expr) -> None:
        self.block: dict[Expr, _Block] = {}
        self.inner: dict[tuple[Expr, int], _Block] = {}  # (node, edge) -> the block it opens
        self.shared: set[Expr] = set()
        top = _Block(None)
        self.starts: list[tuple[Expr, _Block]] = [(root, top)]  # each block's expression
        order = [n for n in post_order(root) if type(n) is not Clause]
        self.block[root] = top
        for node in reversed(order):
            here = self.block.get(node)
            if here is None:  # pragma: no cover - every node is reached from the root
                continue
            for i, (child, opens) in enumerate(_edges(node)):
                where = here
                if opens:
                    where = self.inner[(node, i)] = _Block(here)
                    self.starts.append((child, where))
                if isinstance(child, _ATOMS):
                    continue
                old = self.block.get(child)
                if old is None:
                    self.block[child] = where
                elif old is not where:
                    self.block[child] = _lca(old, where)
                    self.shared.add(child)


def _edges(node: Expr) -> list[tuple[Expr, bool]]:
    """The children of ``node``, each with whether it starts a block of its own."""
    t = type(node)
    if t is Function:
        return [(node.body, True)]  # type: ignore[attr-defined]
    if t is If:
        return [(node.cond, False), (node.true_branch, True), (node.false_branch, True)]  # type: ignore[attr-defined]
    if t is Match:
        return [(node.data, False), *((c.rhs, True) for c in node.clauses)]  # type: ignore[attr-defined]
    return [(c, False) for c in children(node)]


def to_basic_block_normal_form(expr: Expr) -> Expr:
    """``expr`` with every computation used from several blocks let-bound once."""
    plan = _Plan(expr)
    if not plan.shared:
        return expr
    return _Binder(expr, plan).run()


class _Binder:
    """Rebuilds ``expr`` with the shared computations bound at the top of their blocks."""

    def __init__(self, expr: Expr, plan: _Plan) -> None:
        self.expr = expr
        self.plan = plan
        self.var: dict[Expr, Var] = {}
        self.bound_in: dict[_Block, list[Expr]] = {}
        for node in post_order(expr):
            if node in plan.shared:
                self.var[node] = Var("x", None)
                self.bound_in.setdefault(plan.block[node], []).append(node)
        chain = _chain_positions(plan)
        self.pos = _binding_positions(expr, plan, self.var, chain)
        self.value: dict[Expr, Expr] = {}

    def run(self) -> Expr:
        out = rewrite_post_order(self.expr, self.post)
        if type(self.expr) is not Function:
            out = self.wrap(self.plan.block.get(self.expr), out)
        return out

    def wrap(self, block: _Block | None, body: Expr) -> Expr:
        """``body`` (a block's expression) with the block's bindings put in: each right
        after the last of the block's lets it depends on."""
        nodes = self.bound_in.get(block) if block is not None else None
        if not nodes:
            return body
        lets: list[Let] = []
        while type(body) is Let:
            lets.append(body)
            body = body.body
        for i in range(len(lets), -1, -1):
            for node in reversed([n for n in nodes if self.pos[n] == i - 1]):
                body = Let(self.var[node], self.value[node], body)
            if i > 0:
                let = lets[i - 1]
                body = Let(let.var, let.value, body, let.span)
        return body

    def post(self, new: Expr, old: Expr) -> Expr | None:
        inner = self.plan.inner
        t = type(new)
        if t is Function:
            new = new.with_fields(body=self.wrap(inner.get((old, 0)), new.body))  # type: ignore[attr-defined]
        elif t is If:
            new = new.with_fields(
                true_branch=self.wrap(inner.get((old, 1)), new.true_branch),  # type: ignore[attr-defined]
                false_branch=self.wrap(inner.get((old, 2)), new.false_branch),  # type: ignore[attr-defined]
            )
        elif t is Match:
            clauses = [
                c.with_fields(rhs=self.wrap(inner.get((old, i + 1)), c.rhs))
                for i, c in enumerate(new.clauses)  # type: ignore[attr-defined]
            ]
            new = new.with_fields(clauses=clauses)
        if old in self.var:
            self.value[old] = new
            return self.var[old]
        return new


def _chain_positions(plan: _Plan) -> dict[Var, tuple[_Block, int]]:
    """Each variable a block's chain of lets binds: its block and position in the chain."""
    out: dict[Var, tuple[_Block, int]] = {}
    for start, block in plan.starts:
        i = 0
        while type(start) is Let:
            out[start.var] = (block, i)
            start = start.body
            i += 1
    return out


def _binding_positions(
    expr: Expr, plan: _Plan, bind_var: dict[Expr, Var], chain: dict[Var, tuple[_Block, int]]
) -> dict[Expr, int]:
    """For each bound computation, the last let of its block's chain it depends on (-1:
    none), so that its binding goes right after that let."""
    pos: dict[Expr, int] = {}
    for node in post_order(expr):
        if isinstance(node, _ATOMS) or type(node) is Clause:
            continue
        block = plan.block.get(node)
        best = -1
        for child in children(node):
            if type(child) is Var:
                where = chain.get(child)
                if where is not None and where[0] is block:
                    best = max(best, where[1])
            elif child in pos and plan.block.get(child) is block:
                best = max(best, pos[child])
        pos[node] = best
    return {n: pos.get(n, -1) for n in bind_var}


def check_basic_block_normal_form(expr: Expr) -> None:
    """Raise :class:`IRError` if a computation of ``expr`` is used from several blocks
    without a ``let`` (run ``ToBasicBlockNormalForm`` first)."""
    plan = _Plan(expr)
    if plan.shared:
        node = next(n for n in post_order(expr) if n in plan.shared)
        raise IRError(
            f"not in basic block normal form: a {type(node).__name__} is used from several "
            "basic blocks (function bodies, if branches, match clauses) without a let; "
            "run relay.transform.ToBasicBlockNormalForm() first"
        )


class ToBasicBlockNormalForm(ModulePass):
    """``relay.transform.ToBasicBlockNormalForm()`` (opt_level 1)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=1, name="ToBasicBlockNormalForm")

    @staticmethod
    def _transform(mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod.copy()
        for gv, fn in mod.items():
            if "Compiler" in fn.attrs or "Primitive" in fn.attrs:
                continue
            new = to_basic_block_normal_form(fn)
            if new is not fn:
                out[gv] = new
        return out
