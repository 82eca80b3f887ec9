"""``partition``: replace each match of a pattern by a call of a function of the match.

>>> from relaykit.ir import Var, TensorType
>>> from relaykit.dataflow_pattern import is_op, wildcard
>>> x = Var("x", TensorType((2,)))
>>> out = partition(is_op("add")(wildcard(), wildcard()), x + x, {"Composite": "my.add"})
>>> fn = out.op
>>> fn.attrs["Composite"], fn.attrs["PartitionedFromPattern"], out.args[0] is x
('my.add', 'add_', True)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, Function
from relaykit.ir.functor import children, rebuild

from .grouper import PARTITIONED_FROM_PATTERN, Group, PatternGrouper
from .pattern import DFPattern, FunctionPattern, PatternError

__all__ = ["partition"]


def partition(
    pattern: DFPattern,
    expr: Expr,
    attrs: Mapping[str, Any] | None = None,
    check: Callable[[Expr], bool] | None = None,
) -> Expr:
    """Partition ``expr`` into functions made of the matches of ``pattern``.

    Matches are found greedily from the result towards the inputs and never
    overlap (see :mod:`relaykit.dataflow_pattern.grouper`). Each accepted
    match for which ``check(root)`` is true becomes ``fn(inputs...)`` where
    ``fn`` carries ``PartitionedFromPattern`` (the matched op names in
    post-order, each followed by ``_``, e.g. ``nn.conv2d_nn.bias_add_nn.relu_``)
    and ``attrs`` (e.g. ``{"Composite": "dnnl.conv2d_relu"}``). Constants
    matched by ``is_constant()`` are embedded in ``fn``; every other input is a
    parameter, in the order the pattern's leaves are listed.
    """
    if not isinstance(pattern, DFPattern):
        raise PatternError(f"partition needs a pattern, got {pattern!r}")
    if not isinstance(expr, Expr):
        raise PatternError(f"partition works on relay expressions, got {expr!r}")
    if isinstance(pattern, FunctionPattern):
        warnings.warn(
            f"partitioning a Function that isn't called doesn't make sense, skipping {pattern}",
            stacklevel=2,
        )
        return expr
    grouper = PatternGrouper(pattern, expr)
    if not grouper.groups:
        return expr
    extra = dict(attrs or {})
    return _replace_groups(expr, grouper, extra, check)


def _replace_groups(
    expr: Expr,
    grouper: PatternGrouper,
    extra: dict[str, Any],
    check: Callable[[Expr], bool] | None,
) -> Expr:
    """Rebuild ``expr`` bottom-up, each accepted group root becoming a call of its function.

    The interior of a replaced group is not visited: only what the new call
    needs (its arguments) and what is used elsewhere is rebuilt.
    """
    memo: dict[Expr, Expr] = {}
    chosen: dict[Expr, Group | None] = {}
    fn_attrs: dict[str, Attrs] = {}  # one frozen attribute set per function name
    lookup = memo.__getitem__
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            if node in memo:
                continue
            group = chosen[node]
            if group is None:
                memo[node] = rebuild(node, lookup)
            else:
                attrs = fn_attrs.get(group.name)
                if attrs is None:
                    attrs = fn_attrs[group.name] = Attrs(
                        {PARTITIONED_FROM_PATTERN: group.name, **extra}
                    )
                fn = Function(group.params, group.body, attrs=attrs)
                memo[node] = Call(fn, [memo[a] for a in group.args])
            continue
        if node in chosen:
            continue
        group = grouper.root_group(node)
        if group is not None and check is not None and not check(node):
            group = None
        chosen[node] = group
        stack.append((node, True))
        kids = children(node) if group is None else group.args
        for child in reversed(kids):
            if child not in chosen:
                stack.append((child, False))
    return memo[expr]
