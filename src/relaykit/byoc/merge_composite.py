"""``MergeComposite``: wrap pattern matches in composite functions.

Each table entry is ``(name, pattern)`` or ``(name, pattern, check)``. Entries
are applied in table order; each one partitions every function of the module
with the pattern language (matching greedily from the outputs towards the
inputs) and wraps every match ``check`` accepts in a function with attributes
``Composite=<name>`` and ``PartitionedFromPattern`` (the matched operator
names joined by ``_``). ``AnnotateTarget`` later sends a composite call to the
target named before the first ``.`` of its name.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> from relaykit.dataflow_pattern import is_op, wildcard
>>> x = relay.var("x", shape=(1, 4))
>>> mod = tvm.IRModule.from_expr(relay.nn.relu(relay.abs(x)))
>>> table = [("lib.abs_relu", is_op("nn.relu")(is_op("abs")(wildcard())))]
>>> out = MergeComposite(table)(mod)
>>> out["main"].body.op.attrs["Composite"]
'lib.abs_relu'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from relaykit.dataflow_pattern import DFPattern, FunctionPattern
from relaykit.dataflow_pattern.grouper import PARTITIONED_FROM_PATTERN, Group, PatternGrouper
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, Function, Var
from relaykit.ir.functor import children, rebuild
from relaykit.ir.module import IRModule
from relaykit.transform.pass_infra import Pass, PassContext, PassInfo

from ._common import PartitionError, ensure_typed, no_gc
from ._typing import fill_types

__all__ = [
    "MergeComposite",
    "merge_composite_function",
    "normalize_pattern_table",
    "partition_typed",
]

PatternEntry = tuple[str, Any, Callable[[Expr], Any] | None]


def normalize_pattern_table(table: Any) -> list[PatternEntry]:
    """Check a pattern table and return ``(name, pattern, check_or_None)`` entries."""
    if table is None:
        return []
    if not isinstance(table, (list, tuple)):
        raise PartitionError(
            f"a pattern table is a list of (name, pattern[, check]) tuples, got "
            f"{type(table).__name__}"
        )
    entries: list[PatternEntry] = []
    for i, entry in enumerate(table):
        if not isinstance(entry, (list, tuple)) or len(entry) not in (2, 3):
            raise PartitionError(
                f"pattern table entry {i} must be (name, pattern) or (name, pattern, check), "
                f"got {entry!r}"
            )
        name, pattern = entry[0], entry[1]
        check = entry[2] if len(entry) == 3 else None
        if not isinstance(name, str) or not name:
            raise PartitionError(
                f"pattern table entry {i}: the name must be a string, got {name!r}"
            )
        if not isinstance(pattern, DFPattern):
            raise PartitionError(
                f"pattern table entry {i} ({name!r}): expected a dataflow pattern, got "
                f"{type(pattern).__name__}"
            )
        if check is not None and not callable(check):
            raise PartitionError(
                f"pattern table entry {i} ({name!r}): check must be callable, got {check!r}"
            )
        entries.append((name, pattern, check))
    return entries


def merge_composite_function(
    func: Function, entries: Sequence[PatternEntry], mod: IRModule | None = None
) -> Function:
    """``func`` with every pattern of ``entries`` partitioned into composite functions."""
    func = ensure_typed(func, mod)
    body = func.body
    for name, pattern, check in entries:
        new_body = partition_typed(pattern, body, name, check)
        if new_body is not body:
            # Later patterns (and their checks) may look at types: type the new nodes.
            func = fill_types(func.with_fields(body=new_body), mod)
            body = func.body
    return func


def _typed_function(group: Group, attrs: Attrs) -> Function:
    """The composite function of ``group``, typed as TVM's type inference leaves it.

    Its parameters are annotated with the types of the arguments and its return
    type is the type of the matched root (the input is typed), so the function
    reads ``fn (%FunctionVar_0_0: Tensor[...], ...) -> Tensor[...]``.
    """
    params = [
        Var(p.name_hint, a.checked_type if a.has_checked_type else None)
        for p, a in zip(group.params, group.args, strict=True)
    ]
    sub: dict[Expr, Expr] = dict(zip(group.args, params, strict=True))
    lookup = sub.__getitem__
    for node in group.nodes:
        sub[node] = rebuild(node, lookup)
    root = group.root
    ret = root.checked_type if root.has_checked_type else None
    return Function(params, sub[root], ret_type=ret, attrs=attrs)


def partition_typed(
    pattern: DFPattern, expr: Expr, name: str, check: Callable[[Expr], Any] | None = None
) -> Expr:
    """``pattern.partition(expr, {"Composite": name}, check)`` with typed composite functions.

    Matches are found as the pattern language's ``partition`` finds them
    (greedily from the outputs, never overlapping); each one ``check`` accepts
    becomes a call of a function with attributes ``Composite`` and
    ``PartitionedFromPattern``, whose parameters and return type carry the
    types of the (typed) matched nodes. Returns ``expr`` itself when nothing
    matched.
    """
    if isinstance(pattern, FunctionPattern):
        return expr
    grouper = PatternGrouper(pattern, expr)
    if not grouper.groups:
        return expr
    memo: dict[Expr, Expr] = {}
    chosen: dict[Expr, Group | None] = {}
    fn_attrs: dict[str, Attrs] = {}  # one frozen attribute set per pattern name
    lookup = memo.__getitem__
    changed = False
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
                        {"Composite": name, PARTITIONED_FROM_PATTERN: group.name}
                    )
                memo[node] = Call(_typed_function(group, attrs), [memo[a] for a in group.args])
                changed = True
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
    return memo[expr] if changed else expr


class MergeComposite(Pass):
    """``relay.transform.MergeComposite(pattern_table)``."""

    def __init__(self, pattern_table: Any) -> None:
        self.entries = normalize_pattern_table(pattern_table)
        self.info = PassInfo(0, "MergeComposite", ("InferType",))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if not self.entries:
            return mod
        out = mod.copy()
        for gv, fn in mod.items():
            if "Compiler" in fn.attrs or "Composite" in fn.attrs:
                continue
            with no_gc():
                new = merge_composite_function(fn, self.entries, mod)
            if new is not fn:
                out.update_func(gv, new)
        return out
