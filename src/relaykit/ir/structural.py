"""Structural equality and hashing, iterative and aware of sharing.

Two expressions are structurally equal when there is a one-to-one map between
their nodes that preserves kinds, fields, types and attributes, with bound
variables matched at their definitions. Sharing matters: ``add(%a, %a)`` where
``%a`` is one node is *not* equal to the same text built from two copies.

>>> from relaykit.ir import Var, TensorType
>>> x, y = Var("x", TensorType((2,))), Var("y", TensorType((2,)))
>>> structural_equal(x + x, x + x), structural_equal(x + x, x + y)
(True, False)
>>> structural_equal(x, y, map_free_vars=True)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.errors import StructuralMismatchError

from .expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from .functor import children, post_order
from .module import IRModule
from .op import Op

__all__ = ["structural_equal", "structural_hash", "assert_structural_equal", "first_mismatch"]


class _Mismatch(Exception):
    def __init__(self, index: int, reason: str) -> None:
        self.index = index
        self.reason = reason


def _same_array(a: Any, b: Any) -> bool:
    x, y = a.numpy(), b.numpy()
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)


def _describe(e: Any) -> str:
    if isinstance(e, Var):
        return f"Var %{e.name_hint}"
    if isinstance(e, Op):
        return f"Op {e.name}"
    if isinstance(e, Call):
        return f"Call to {e.op.name if isinstance(e.op, Op) else type(e.op).__name__}"
    if isinstance(e, GlobalVar):
        return f"GlobalVar @{e.name_hint}"
    return type(e).__name__


def _compare_exprs(lhs: Expr, rhs: Expr, map_free_vars: bool, root: str) -> tuple[str, str] | None:
    """None when equal, else (path, reason) of the first mismatch."""
    lmap: dict[Expr, Expr] = {}
    rmap: dict[Expr, Expr] = {}
    # Records of (parent index, label) to rebuild the path of a mismatch.
    records: list[tuple[int, str]] = [(-1, root)]
    stack: list[tuple[Expr, Expr, int]] = [(lhs, rhs, 0)]

    def push(l: Expr, r: Expr, parent: int, label: str) -> None:
        records.append((parent, label))
        stack.append((l, r, len(records) - 1))

    try:
        while stack:
            l, r, idx = stack.pop()
            seen_l = lmap.get(l)
            if seen_l is not None:
                if seen_l is not r:
                    raise _Mismatch(
                        idx, "a node shared on the left is not shared the same way on the right"
                    )
                continue
            if r in rmap:
                raise _Mismatch(
                    idx, "a node shared on the right is not shared the same way on the left"
                )
            if type(l) is not type(r):
                raise _Mismatch(idx, f"{_describe(l)} vs {_describe(r)}")
            t = type(l)
            if t is Var:
                # Reaching a var here means it was not bound by an enclosing
                # Function/Let (those map their vars first): it is free.
                if l is not r and not map_free_vars:
                    raise _Mismatch(idx, f"free variables %{l.name_hint} and %{r.name_hint} differ")
                if l.type_annotation != r.type_annotation:
                    raise _Mismatch(
                        idx, f"type annotation {l.type_annotation} vs {r.type_annotation}"
                    )
            elif t is Constant:
                if not _same_array(l.data, r.data):
                    raise _Mismatch(
                        idx,
                        f"constant values differ ({l.data.shape} {l.data.dtype} vs "
                        f"{r.data.shape} {r.data.dtype})",
                    )
            elif t is Op:
                if l is not r:
                    raise _Mismatch(idx, f"operator {l.name} vs {r.name}")
            elif t is GlobalVar:
                if l.name_hint != r.name_hint:
                    raise _Mismatch(idx, f"@{l.name_hint} vs @{r.name_hint}")
            elif t is Call:
                if len(l.args) != len(r.args):
                    raise _Mismatch(idx, f"{len(l.args)} vs {len(r.args)} arguments")
                if l.attrs != r.attrs:
                    raise _Mismatch(idx, f"attributes {dict(l.attrs)} vs {dict(r.attrs)}")
                lmap[l], rmap[r] = r, l
                for i in range(len(l.args) - 1, -1, -1):
                    push(l.args[i], r.args[i], idx, f"args[{i}]")
                push(l.op, r.op, idx, "op")
                continue
            elif t is Tuple:
                if len(l.fields) != len(r.fields):
                    raise _Mismatch(idx, f"tuple of {len(l.fields)} vs {len(r.fields)} fields")
                lmap[l], rmap[r] = r, l
                for i in range(len(l.fields) - 1, -1, -1):
                    push(l.fields[i], r.fields[i], idx, f"fields[{i}]")
                continue
            elif t is TupleGetItem:
                if l.index != r.index:
                    raise _Mismatch(idx, f"tuple index {l.index} vs {r.index}")
                lmap[l], rmap[r] = r, l
                push(l.tuple_value, r.tuple_value, idx, "tuple_value")
                continue
            elif t is Function:
                if len(l.params) != len(r.params):
                    raise _Mismatch(idx, f"{len(l.params)} vs {len(r.params)} parameters")
                if l.ret_type != r.ret_type:
                    raise _Mismatch(idx, f"return type {l.ret_type} vs {r.ret_type}")
                if l.attrs != r.attrs:
                    raise _Mismatch(idx, f"function attributes {dict(l.attrs)} vs {dict(r.attrs)}")
                lmap[l], rmap[r] = r, l
                records.append((idx, "body"))
                stack.append((l.body, r.body, len(records) - 1))
                _bind_params(l.params, r.params, idx, lmap, rmap, records)
                continue
            elif t is Let:
                lmap[l], rmap[r] = r, l
                push(l.body, r.body, idx, "body")
                push(l.value, r.value, idx, "value")
                _bind_params((l.var,), (r.var,), idx, lmap, rmap, records, label="var")
                continue
            elif t is If:
                lmap[l], rmap[r] = r, l
                push(l.false_branch, r.false_branch, idx, "false_branch")
                push(l.true_branch, r.true_branch, idx, "true_branch")
                push(l.cond, r.cond, idx, "cond")
                continue
            lmap[l], rmap[r] = r, l
    except _Mismatch as m:
        parts: list[str] = []
        i = m.index
        while i >= 0:
            parent, label = records[i]
            parts.append(label)
            i = parent
        path = ".".join(reversed(parts)).replace(".[", "[")
        return path, m.reason
    return None


def _bind_params(
    lps: tuple[Var, ...],
    rps: tuple[Var, ...],
    idx: int,
    lmap: dict[Expr, Expr],
    rmap: dict[Expr, Expr],
    records: list[tuple[int, str]],
    label: str = "params",
) -> None:
    for i, (lp, rp) in enumerate(zip(lps, rps, strict=False)):
        where = label if label == "var" else f"params[{i}]"
        if lp in lmap or rp in rmap:
            if lmap.get(lp) is not rp:
                records.append((idx, where))
                raise _Mismatch(len(records) - 1, f"variable %{lp.name_hint} is bound twice")
            continue
        if lp.type_annotation != rp.type_annotation:
            records.append((idx, where))
            raise _Mismatch(
                len(records) - 1,
                f"parameter %{lp.name_hint}: {lp.type_annotation} vs {rp.type_annotation}",
            )
        lmap[lp], rmap[rp] = rp, lp


def first_mismatch(lhs: Any, rhs: Any, map_free_vars: bool = False) -> tuple[str, str] | None:
    """Where ``lhs`` and ``rhs`` first differ, as ``(path, reason)``, or None if equal."""
    if isinstance(lhs, IRModule) or isinstance(rhs, IRModule):
        if not (isinstance(lhs, IRModule) and isinstance(rhs, IRModule)):
            return "", f"{type(lhs).__name__} vs {type(rhs).__name__}"
        lnames = sorted(gv.name_hint for gv in lhs.get_global_vars())
        rnames = sorted(gv.name_hint for gv in rhs.get_global_vars())
        if lnames != rnames:
            return "", f"globals {lnames} vs {rnames}"
        for name in lnames:
            out = _compare_exprs(lhs[name], rhs[name], map_free_vars, name)
            if out is not None:
                return out
        return None
    if isinstance(lhs, Expr) and isinstance(rhs, Expr):
        return _compare_exprs(lhs, rhs, map_free_vars, "root")
    if type(lhs) is not type(rhs):
        return "root", f"{type(lhs).__name__} vs {type(rhs).__name__}"
    if lhs != rhs:
        return "root", f"{lhs!r} vs {rhs!r}"
    return None


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """Whether ``lhs`` and ``rhs`` (expressions, modules or types) have the same structure."""
    return first_mismatch(lhs, rhs, map_free_vars) is None


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raise :class:`StructuralMismatchError` naming the first mismatching path."""
    out = first_mismatch(lhs, rhs, map_free_vars)
    if out is not None:
        path, reason = out
        raise StructuralMismatchError(
            f"structural mismatch at {path}: {reason}\n"
            f"--- lhs ---\n{_short(lhs)}\n--- rhs ---\n{_short(rhs)}"
        )


def _short(x: Any, limit: int = 4000) -> str:
    text = str(x)
    return text if len(text) <= limit else text[:limit] + "\n... (truncated)"


def structural_hash(node: Any, map_free_vars: bool = False) -> int:
    """A hash consistent with :func:`structural_equal`."""
    if isinstance(node, IRModule):
        return hash(
            tuple(
                sorted(
                    (gv.name_hint, structural_hash(fn, map_free_vars)) for gv, fn in node.items()
                )
            )
        )
    if not isinstance(node, Expr):
        return hash(node)
    memo: dict[int, int] = {}
    var_index: dict[int, int] = {}
    for n in post_order(node):
        t = type(n)
        if t is Var:
            k = var_index.setdefault(id(n), len(var_index))
            h = hash(("Var", k, n.type_annotation))
        elif t is Constant:
            arr = n.data.numpy()
            h = hash(("Const", arr.shape, arr.dtype.name, arr.tobytes()))
        elif t is Op:
            h = hash(("Op", n.name))
        elif t is GlobalVar:
            h = hash(("GlobalVar", n.name_hint))
        else:
            kids = tuple(memo[id(c)] for c in children(n))
            if t is Call:
                h = hash(("Call", kids, n.attrs))
            elif t is TupleGetItem:
                h = hash(("TupleGetItem", kids, n.index))
            elif t is Function:
                h = hash(("Function", kids, n.ret_type, n.attrs))
            else:
                h = hash((t.__name__, kids))
        memo[id(n)] = h
    return memo[id(node)]
