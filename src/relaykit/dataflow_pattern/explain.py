"""Explaining matches: which sub-pattern failed, why, and at which node.

``match_explain(pattern, expr)`` (or ``pattern.match(expr, explain=True)``)
runs TVM's matcher in a mode that records, of all the ways it tried
(alternatives, commutative operands, optional ops), the failure that got
furthest into the pattern.

>>> from relaykit import relay
>>> from relaykit.dataflow_pattern import is_op, wildcard
>>> x, w, b = relay.var("x"), relay.var("w"), relay.var("b")
>>> expr = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w), b))
>>> result = match_explain(is_op("nn.relu")(is_op("nn.relu")(wildcard())), expr)
>>> bool(result), result.reason
(False, "is_op('nn.relu') expected op nn.relu but found nn.bias_add at %1")
>>> result.path, result.node is expr.args[0]
('root.args[0]', True)
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from relaykit.ir.expr import Call, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from relaykit.text.printer import context_lines

from .matcher import DFPatternMatcher, check_match_args
from .pattern import DFPattern
from .printer import describe_expr, pattern_to_str

__all__ = ["MatchResult", "match_explain", "path_to"]


@dataclass(frozen=True, eq=False)
class MatchResult:
    """The outcome of :func:`match_explain`; truthy when the pattern matched.

    On failure, ``message`` says which sub-pattern failed and why, ``node`` is
    the expression it failed on, ``failed_pattern`` the sub-pattern, and
    ``reason`` is the message with the node's location: its name in the
    printed ``expr`` (``%1``), ``%x`` for a variable, or its field path from
    ``expr`` (``root.args[0]``). Locations are computed on first use. On
    success ``node_map`` maps each sub-pattern to the expressions it matched.
    """

    matched: bool
    pattern: DFPattern
    expr: Expr
    message: str = ""
    node: Expr | None = None
    failed_pattern: DFPattern | None = None
    node_map: Mapping[DFPattern, list[Expr]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.matched

    @cached_property
    def path(self) -> str:
        """The field path from ``expr`` to ``node``: ``root.args[0].args[1]``."""
        return "" if self.node is None else path_to(self.expr, self.node)

    @cached_property
    def location(self) -> str:
        """Where ``node`` is: ``root``, ``%x``, its printed name ``%3``, or its path."""
        node = self.node
        if node is None:
            return ""
        if node is self.expr:
            return "root"
        if type(node) is Var:
            return f"%{node.name_hint}"
        return _printed_name(self.expr, node) or self.path

    @property
    def reason(self) -> str:
        """Why the match failed and where (empty when it matched)."""
        if self.matched:
            return ""
        return f"{self.message} at {self.location}" if self.node is not None else self.message

    def __str__(self) -> str:
        if self.matched:
            return f"{pattern_to_str(self.pattern, 1)} matched {describe_expr(self.expr)}"
        return self.reason

    def render(self) -> str:
        """The reason followed by the printed IR around the failing node."""
        if self.matched or self.node is None:
            return str(self)
        try:
            return f"{self.reason}\n{context_lines(self.expr, self.node)}"
        except Exception:  # the printer is optional for the explanation
            return self.reason


_NAMED_LINE = re.compile(r"\s*(%[\w.]+) = ")


def _printed_name(root: Expr, node: Expr) -> str | None:
    """The name the text printer gives ``node`` when printing ``root`` (``%3``), if any."""
    try:
        text = context_lines(root, node, radius=0, marker=_MARK)
    except Exception:  # no printer, or it cannot print this graph: fall back to the path
        return None
    for line in text.splitlines():
        if _MARK in line:
            m = _NAMED_LINE.match(line)
            return m.group(1) if m else None
    return None


_MARK = "/* <-- match failed here */"


def match_explain(pattern: DFPattern, expr: Expr) -> MatchResult:
    """Match and say why not: the failing sub-pattern, the node and its path from ``expr``.

    Of all the ways the match was tried (alternatives, commutative operands),
    the explanation is the one that got furthest into the pattern.
    """
    check_match_args(pattern, expr)
    matcher = DFPatternMatcher(expr, explain=True)
    if matcher.match(pattern, expr):
        return MatchResult(True, pattern, expr, node_map=matcher.node_map())
    if matcher.failure is None:  # pragma: no cover - every failing branch records a reason
        message = f"{pattern_to_str(pattern, 1)} does not match {describe_expr(expr)}"
        return MatchResult(False, pattern, expr, message, expr, pattern)
    _, failed, node, message = matcher.failure
    return MatchResult(False, pattern, expr, message, node, failed)


def _labelled_children(node: Expr) -> list[tuple[str, Expr]]:
    if type(node) is Call:
        return [("op", node.op)] + [(f"args[{i}]", a) for i, a in enumerate(node.args)]
    if type(node) is Tuple:
        return [(f"fields[{i}]", f) for i, f in enumerate(node.fields)]
    if type(node) is TupleGetItem:
        return [("tuple_value", node.tuple_value)]
    if type(node) is Function:
        return [(f"params[{i}]", p) for i, p in enumerate(node.params)] + [("body", node.body)]
    if type(node) is Let:
        return [("var", node.var), ("value", node.value), ("body", node.body)]
    if type(node) is If:
        return [
            ("cond", node.cond),
            ("true_branch", node.true_branch),
            ("false_branch", node.false_branch),
        ]
    return []


def path_to(root: Expr, node: Expr, limit: int = 100_000) -> str:
    """The shortest field path from ``root`` to ``node``: ``root.args[0].args[1]``."""
    if node is root:
        return "root"
    parents: dict[Expr, tuple[Expr, str]] = {}
    queue = deque([root])
    seen = {root}
    while queue and len(seen) < limit:
        current = queue.popleft()
        for label, child in _labelled_children(current):
            if child in seen:
                continue
            seen.add(child)
            parents[child] = (current, label)
            if child is node:
                parts = []
                while child is not root:
                    child, label = parents[child]
                    parts.append(label)
                return "root." + ".".join(reversed(parts))
            queue.append(child)
    return describe_expr(node)
