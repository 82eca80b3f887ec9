"""``rewrite``: replace matches of patterns by what callbacks build, until nothing changes.

Subclass :class:`DFPatternCallback`, set ``self.pattern`` and implement
``callback(pre, post, node_map)``:

>>> from relaykit.ir import Var, TensorType
>>> from relaykit.dataflow_pattern import is_op, wildcard
>>> class AddToSub(DFPatternCallback):
...     def __init__(self):
...         super().__init__()
...         self.pattern = is_op("add")(wildcard(), wildcard())
...     def callback(self, pre, post, node_map):
...         return post.args[0] - post.args[1]
>>> x = Var("x", TensorType((2,)))
>>> rewrite(AddToSub(), x + x).op.name
'subtract'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaykit.errors import RelayKitError
from relaykit.ir.expr import Expr, TupleWrapper
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.structural import structural_equal
from relaykit.transform.infer_type import infer_type

from .grouper import PatternGrouper
from .matcher import NodeMap
from .pattern import DFPattern, PatternError

__all__ = ["DFPatternCallback", "RewriteError", "rewrite", "MAX_REWRITE_PASSES"]

#: How many callback applications ``rewrite`` makes before giving up (as in TVM).
MAX_REWRITE_PASSES = 100


class RewriteError(RelayKitError, RuntimeError):
    """``rewrite`` did not reach a fixed point, or a callback returned a non-expression."""


class DFPatternCallback:
    """A pattern and what to replace its matches with.

    ``callback(pre, post, node_map)`` receives the matched node of the input
    graph (``pre``), the same node rebuilt over already rewritten inputs
    (``post``) and, for each sub-pattern, the (rewritten) nodes it matched.
    ``require_type`` runs type inference before matching; with
    ``rewrite_once`` the callback stops being applied after the first pass in
    which it changed something.
    """

    def __init__(self, require_type: bool = False, rewrite_once: bool = False) -> None:
        self.pattern: DFPattern | None = None
        self.require_type = require_type
        self.rewrite_once = rewrite_once

    def rewrite(self, expr: Expr) -> Expr:
        """``rewrite(self, expr)``."""
        return rewrite(self, expr)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        raise NotImplementedError(
            f"{type(self).__name__} must implement callback(pre, post, node_map)"
        )


def _callbacks(callbacks: Any) -> list[DFPatternCallback]:
    items = [callbacks] if isinstance(callbacks, DFPatternCallback) else list(callbacks)
    for cb in items:
        if not isinstance(cb, DFPatternCallback):
            raise PatternError(f"rewrite needs DFPatternCallback objects, got {cb!r}")
        if not isinstance(cb.pattern, DFPattern):
            raise PatternError(
                f"{type(cb).__name__} has no pattern: set self.pattern in its __init__ "
                f"(after super().__init__()), got {cb.pattern!r}"
            )
    return items


def _same(a: Expr, b: Expr) -> bool:
    return a is b or structural_equal(a, b, map_free_vars=True)


def rewrite(
    callbacks: DFPatternCallback | Sequence[DFPatternCallback],
    expr: Expr,
    mod: IRModule | None = None,
) -> Expr:
    """Apply each callback in turn, over and over, until the expression stops changing.

    In each pass a callback's pattern is matched greedily from the result
    towards the inputs, without overlaps (the grouping of ``partition``); each
    match is replaced by what the callback returns. Globals referenced by
    ``expr`` are typed with ``mod`` when ``require_type`` is set.
    """
    if not isinstance(expr, Expr):
        raise PatternError(f"rewrite works on relay expressions, got {expr!r}")
    items = _callbacks(callbacks)
    post = expr
    count = 0
    done: set[int] = set()
    while True:
        last = post
        for cb in items:
            if id(cb) in done:
                continue
            before = post
            post = _apply(cb, post, mod)
            count += 1
            if cb.rewrite_once and not _same(before, post):
                done.add(id(cb))
        if _same(last, post):
            return post
        if count >= MAX_REWRITE_PASSES:
            names = ", ".join(type(cb).__name__ for cb in items)
            raise RewriteError(
                f"rewrite did not reach a fixed point after {count} callback passes "
                f"({names}); do two callbacks undo each other, or does one always build "
                "a new match? Use rewrite_once=True for a callback meant to apply once."
            )


def _apply(cb: DFPatternCallback, expr: Expr, mod: IRModule | None) -> Expr:
    if cb.require_type:
        infer_type(expr, mod)
    grouper = PatternGrouper(cb.pattern, expr)  # type: ignore[arg-type]
    if not grouper.groups:
        return expr
    memo: dict[Expr, Expr] = {}

    def replace(post: Expr, pre: Expr) -> Expr | None:
        group = grouper.root_group(pre)
        if group is None:
            return None
        node_map = {p: [memo.get(e, e) for e in es] for p, es in group.node_map.items()}
        out = cb.callback(pre, post, node_map)
        if isinstance(out, TupleWrapper):
            out = out.astuple()
        if not isinstance(out, Expr):
            raise RewriteError(
                f"{type(cb).__name__}.callback returned {type(out).__name__} ({out!r}) for a "
                "match; it must return a relay expression (return post to keep the match)"
            )
        return out

    return rewrite_post_order(expr, replace, memo)
