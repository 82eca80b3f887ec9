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

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from relaykit.errors import StructuralMismatchError

from .adt import Clause, Pattern, PatternConstructor, PatternVar
from .expr import Call, Constant, Expr, GlobalVar, Tuple, Var
from .fields import FieldSpec
from .module import IRModule
from .op import Op
from .type_equal import TypeMap, type_shape_key
from .types import Type, type_key

__all__ = [
    "FLOAT_ATOL",
    "assert_structural_equal",
    "data_equal",
    "first_mismatch",
    "structural_equal",
    "structural_hash",
]


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


def _is_value_leaf(e: Any) -> bool:
    """Whether ``e`` is a plain value (a constant or the empty tuple): compared by value
    wherever it occurs, so whether it is shared is not part of the structure (as in TVM,
    where these are not graph nodes)."""
    t = type(e)
    return t is Constant or (t is Tuple and not e.fields)


class _Comparison:
    """One structural comparison of two expressions, iterative and sharing-aware.

    Generic over the node kinds: each class's field declaration says which fields
    are data (compared by value), sub-expressions (compared recursively) and
    binders (variables matched at their definition).
    """

    def __init__(self, map_free_vars: bool, root: str) -> None:
        self.map_free_vars = map_free_vars
        self.types = TypeMap(map_free_vars)
        self.lmap: dict[Expr, Expr] = {}
        self.rmap: dict[Expr, Expr] = {}
        # Records of (parent index, label) to rebuild the path of a mismatch.
        self.records: list[tuple[int, str]] = [(-1, root)]
        self.stack: list[tuple[Expr, Expr, int]] = []

    def run(self, lhs: Expr, rhs: Expr) -> tuple[str, str] | None:
        """None when equal, else (path, reason) of the first mismatch."""
        stack, lmap, rmap = self.stack, self.lmap, self.rmap
        stack.append((lhs, rhs, 0))
        leaves = _COMPARE
        try:
            while stack:
                lt, rt, idx = stack.pop()
                if _is_value_leaf(lt) and _is_value_leaf(rt) and type(lt) is type(rt):
                    (leaves.get(type(lt)) or _comparer(type(lt)))(self, lt, rt, idx)
                    continue
                seen = lmap.get(lt)
                if seen is not None:
                    if seen is not rt:
                        raise _Mismatch(
                            idx, "a node shared on the left is not shared the same way on the right"
                        )
                    continue
                if rt in rmap:
                    raise _Mismatch(
                        idx, "a node shared on the right is not shared the same way on the left"
                    )
                t = type(lt)
                if t is not type(rt):
                    raise _Mismatch(idx, f"{_describe(lt)} vs {_describe(rt)}")
                compare = leaves.get(t) or _comparer(t)
                compare(self, lt, rt, idx)
                lmap[lt], rmap[rt] = rt, lt
        except _Mismatch as m:
            return self.path(m.index), m.reason
        return None

    def path(self, index: int) -> str:
        parts: list[str] = []
        i = index
        while i >= 0:
            parent, label = self.records[i]
            parts.append(label)
            i = parent
        return ".".join(reversed(parts)).replace(".[", "[")

    def data_eq(self, lhs: Any, rhs: Any) -> bool:
        """Equality of two field values; types compare under the type-variable map."""
        if isinstance(lhs, Type) and isinstance(rhs, Type):
            return self.types.equal(lhs, rhs)
        if isinstance(lhs, tuple) and isinstance(rhs, tuple) and lhs and isinstance(lhs[0], Type):
            return len(lhs) == len(rhs) and all(map(self.data_eq, lhs, rhs))
        return data_equal(lhs, rhs)

    def bind_type_params(self, lhs: Any, rhs: Any, idx: int) -> None:
        if not self.types.bind(lhs, rhs):
            raise _Mismatch(idx, f"type parameters {list(map(str, lhs))} vs {list(map(str, rhs))}")

    def compare_var(self, lhs: Var, rhs: Var, idx: int) -> None:
        # Reaching a var here means it was not bound by an enclosing
        # Function/Let (those map their vars first): it is free.
        if lhs is not rhs and not self.map_free_vars:
            raise _Mismatch(idx, f"free variables %{lhs.name_hint} and %{rhs.name_hint} differ")
        if not self.data_eq(lhs.type_annotation, rhs.type_annotation):
            raise _Mismatch(idx, f"type annotation {lhs.type_annotation} vs {rhs.type_annotation}")
        if lhs.virtual_device_ != rhs.virtual_device_:
            raise _Mismatch(idx, f"virtual device {lhs.virtual_device_} vs {rhs.virtual_device_}")

    def compare_constant(self, lhs: Constant, rhs: Constant, idx: int) -> None:
        if not _same_array(lhs.data, rhs.data):
            raise _Mismatch(
                idx,
                f"constant values differ ({lhs.data.shape} {lhs.data.dtype} vs "
                f"{rhs.data.shape} {rhs.data.dtype})",
            )

    def compare_op(self, lhs: Op, rhs: Op, idx: int) -> None:
        if lhs is not rhs:
            raise _Mismatch(idx, f"operator {lhs.name} vs {rhs.name}")

    def bind(
        self, lps: tuple[Var, ...], rps: tuple[Var, ...], idx: int, label: str, sequence: bool
    ) -> None:
        """Match bound variables at their definition."""
        lmap, rmap, records = self.lmap, self.rmap, self.records
        for i, (lp, rp) in enumerate(zip(lps, rps, strict=False)):
            where = f"{label}[{i}]" if sequence else label
            if lp in lmap or rp in rmap:
                if lmap.get(lp) is not rp:
                    records.append((idx, where))
                    raise _Mismatch(len(records) - 1, f"variable %{lp.name_hint} is bound twice")
                continue
            if not self.data_eq(lp.type_annotation, rp.type_annotation):
                records.append((idx, where))
                raise _Mismatch(
                    len(records) - 1,
                    f"parameter %{lp.name_hint}: {lp.type_annotation} vs {rp.type_annotation}",
                )
            if lp.virtual_device_ != rp.virtual_device_:
                records.append((idx, where))
                raise _Mismatch(
                    len(records) - 1,
                    f"variable %{lp.name_hint}: virtual device {lp.virtual_device_} vs "
                    f"{rp.virtual_device_}",
                )
            lmap[lp], rmap[rp] = rp, lp


def _pattern_pairs(lhs: Pattern, rhs: Pattern) -> Iterator[tuple[Pattern, Pattern] | str]:
    """The pairs of sub-patterns of ``lhs`` and ``rhs`` in order, or the reason they differ."""
    work = [(lhs, rhs)]
    while work:
        lp, rp = work.pop()
        if type(lp) is not type(rp):
            yield f"pattern {type(lp).__name__} vs {type(rp).__name__}"
            return
        if isinstance(lp, PatternConstructor):
            lc, rc = lp.constructor, getattr(rp, "constructor", None)
            if not _same_constructor(lc, rc):
                yield f"constructor {lc.name_hint} vs {rc.name_hint}"  # type: ignore[union-attr]
                return
        subs, rsubs = getattr(lp, "patterns", ()), getattr(rp, "patterns", ())
        if len(subs) != len(rsubs):
            yield f"{len(subs)} vs {len(rsubs)} sub-patterns"
            return
        yield lp, rp
        work.extend(zip(reversed(subs), reversed(rsubs), strict=True))


def _same_constructor(a: Any, b: Any) -> bool:
    """Constructors are names in a module: the same name and tag of the same type."""
    return a is b or (
        a.name_hint == b.name_hint
        and a.tag == b.tag
        and a.belong_to.name_hint == b.belong_to.name_hint
    )


def _compare_clause(cmp: _Comparison, lhs: Clause, rhs: Clause, idx: int) -> None:
    """Two match clauses: the same pattern shape, binding its variables, then the bodies."""
    for pair in _pattern_pairs(lhs.lhs, rhs.lhs):
        if isinstance(pair, str):
            raise _Mismatch(idx, pair)
        lp, rp = pair
        if isinstance(lp, PatternVar):
            cmp.bind((lp.var,), (rp.var,), idx, "lhs", False)  # type: ignore[attr-defined]
    cmp.records.append((idx, "rhs"))
    cmp.stack.append((lhs.rhs, rhs.rhs, len(cmp.records) - 1))


def _pattern_tokens(pattern: Pattern) -> Iterator[Any]:
    """The shape of ``pattern`` as hash tokens, and its variables in binding order."""
    work = [pattern]
    while work:
        p = work.pop()
        if isinstance(p, PatternVar):
            yield p.var
            continue
        if isinstance(p, PatternConstructor):
            yield ("pcon", p.constructor.name_hint, len(p.patterns))
        else:
            yield (type(p).__name__, len(getattr(p, "patterns", ())))
        work.extend(reversed(getattr(p, "patterns", ())))


def _compare_source(layout: tuple[FieldSpec, ...]) -> str:
    """The source of ``compare(cmp, lhs, rhs, idx)`` for one node class: check the
    lengths of its expression tuples and its data fields, bind its binders, and queue
    its sub-expressions so that they are compared in field order."""
    lines = ["def compare(cmp, l, r, idx):", "    records, stack = cmp.records, cmp.stack"]
    if any(f.name == "type_params" for f in layout):
        lines.append("    cmp.bind_type_params(l.type_params, r.type_params, idx)")
    for f in layout:
        n = f.name
        if f.is_sequence:
            lines.append(f"    l_{n}, r_{n} = l.{n}, r.{n}")
            lines.append(f"    if len(l_{n}) != len(r_{n}):")
            lines.append(f"        raise _Mismatch(idx, f'{{len(l_{n})}} vs {{len(r_{n})}} {n}')")
        elif not f.is_child and f.compare:
            lines.append(f"    if not cmp.data_eq(l.{n}, r.{n}):")
            lines.append(
                f"        raise _Mismatch(idx, f'{n} {{_show(l.{n})}} vs {{_show(r.{n})}}')"
            )
    for f in layout:
        if f.binds:
            args = f"l_{f.name}, r_{f.name}" if f.is_sequence else f"(l.{f.name},), (r.{f.name},)"
            lines.append(f"    cmp.bind({args}, idx, {f.name!r}, {f.is_sequence})")
    for f in reversed(layout):
        n = f.name
        if not f.is_child or f.binds:
            continue
        if f.is_sequence:
            lines.append(f"    for i in range(len(l_{n}) - 1, -1, -1):")
            lines.append(f"        records.append((idx, f'{n}[{{i}}]'))")
            lines.append(f"        stack.append((l_{n}[i], r_{n}[i], len(records) - 1))")
        else:
            lines.append(f"    records.append((idx, {n!r}))")
            lines.append(f"    stack.append((l.{n}, r.{n}, len(records) - 1))")
    return "\n".join(lines) + "\n"


_Compare = Callable[["_Comparison", Any, Any, int], None]
_COMPARE: dict[type, _Compare] = {}


def _comparer(cls: Any) -> _Compare:
    """The comparison of two nodes of class ``cls``, compiled once from its layout."""
    fn = _COMPARE.get(cls)
    if fn is None:
        env = {"_Mismatch": _Mismatch, "_show": _show, "_data_equal": data_equal}
        scope: dict[str, Any] = {}
        source = _compare_source(cls._layout)
        exec(compile(source, f"<relaykit.ir.structural: {cls.__name__}>", "exec"), env, scope)
        fn = _COMPARE[cls] = scope["compare"]
    return fn


# The leaves whose comparison is not only their fields'.
_COMPARE.update(
    {
        Var: _Comparison.compare_var,
        Constant: _Comparison.compare_constant,
        Op: _Comparison.compare_op,
        Clause: _compare_clause,
    }
)


def _show(value: Any) -> str:
    return str(dict(value)) if isinstance(value, Mapping) else str(value)


def _compare_exprs(lhs: Expr, rhs: Expr, map_free_vars: bool, root: str) -> tuple[str, str] | None:
    """None when equal, else (path, reason) of the first mismatch."""
    return _Comparison(map_free_vars, root).run(lhs, rhs)


def first_mismatch(lhs: Any, rhs: Any, map_free_vars: bool = False) -> tuple[str, str] | None:
    """Where ``lhs`` and ``rhs`` first differ, as ``(path, reason)``, or None if equal."""
    if isinstance(lhs, IRModule) or isinstance(rhs, IRModule):
        if not (isinstance(lhs, IRModule) and isinstance(rhs, IRModule)):
            return "", f"{type(lhs).__name__} vs {type(rhs).__name__}"
        lnames = sorted(gv.name_hint for gv in lhs.get_global_vars())
        rnames = sorted(gv.name_hint for gv in rhs.get_global_vars())
        if lnames != rnames:
            return "", f"globals {lnames} vs {rnames}"
        out = _type_defs_mismatch(lhs, rhs, map_free_vars)
        if out is not None:
            return out
        for name in lnames:
            out = _compare_exprs(lhs[name], rhs[name], map_free_vars, name)
            if out is not None:
                return out
        return None
    return _first_mismatch_value(lhs, rhs, map_free_vars, "root")


def _type_defs_mismatch(lhs: IRModule, rhs: IRModule, map_free_vars: bool) -> Any:
    """Where the type definitions of two modules first differ (matched by name)."""
    ldefs = {g.name_hint: td for g, td in lhs.type_definitions.items()}
    rdefs = {g.name_hint: td for g, td in rhs.type_definitions.items()}
    if sorted(ldefs) != sorted(rdefs):
        return "", f"type definitions {sorted(ldefs)} vs {sorted(rdefs)}"
    for name in sorted(ldefs):
        a, b = ldefs[name], rdefs[name]
        types = TypeMap(map_free_vars)
        if not types.bind(a.type_vars, b.type_vars):
            return name, "type parameters differ"
        if len(a.constructors) != len(b.constructors):
            return name, f"{len(a.constructors)} vs {len(b.constructors)} constructors"
        for ca, cb in zip(a.constructors, b.constructors, strict=True):
            same = ca.name_hint == cb.name_hint and len(ca.inputs) == len(cb.inputs)
            if not (same and all(map(types.equal, ca.inputs, cb.inputs))):
                return f"{name}.{ca.name_hint}", f"constructor {ca.name_hint} vs {cb.name_hint}"
    return None


def _first_mismatch_value(lhs: Any, rhs: Any, map_free_vars: bool, path: str) -> Any:
    """``first_mismatch`` of two values that are not modules."""
    if isinstance(lhs, Expr) and isinstance(rhs, Expr):
        return _compare_exprs(lhs, rhs, map_free_vars, path)
    if isinstance(lhs, Type) and isinstance(rhs, Type):
        if TypeMap(map_free_vars).equal(lhs, rhs):
            return None
        return path, f"type {lhs} vs {rhs}"
    if isinstance(lhs, (tuple, list)) and isinstance(rhs, (tuple, list)):
        # Both are what TVM calls an Array, element by element.
        if len(lhs) != len(rhs):
            return path, f"{len(lhs)} vs {len(rhs)} elements"
        for i, (a, b) in enumerate(zip(lhs, rhs, strict=True)):
            out = _first_mismatch_value(a, b, map_free_vars, f"{path}[{i}]")
            if out is not None:
                return out
        return None
    if type(lhs) is not type(rhs) and not (_is_number(lhs) and _is_number(rhs)):
        return path, f"{type(lhs).__name__} vs {type(rhs).__name__}"
    if not data_equal(lhs, rhs):
        return path, f"{lhs!r} vs {rhs!r}"
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
    """A hash consistent with :func:`structural_equal` under the same ``map_free_vars``.

    Nodes are visited in the order the comparison visits them; a node seen before
    (a shared sub-expression, or a variable after its binding) contributes only
    its first-visit position, so sharing is part of the hash exactly as it is part
    of equality. Free variables contribute their identity unless
    ``map_free_vars`` is true (then only their position and annotation). Float
    attribute values, which compare with an absolute tolerance, contribute only
    when they are (within that tolerance) integers, so values equal under the
    tolerance hash alike.
    """
    if isinstance(node, IRModule):
        return hash(
            tuple(
                sorted(
                    (gv.name_hint, structural_hash(fn, map_free_vars)) for gv, fn in node.items()
                )
            )
        )
    if isinstance(node, (tuple, list)):
        return hash(("array", *(structural_hash(x, map_free_vars) for x in node)))
    if isinstance(node, Type):
        return hash(type_shape_key(node) if map_free_vars else type_key(node))
    if not isinstance(node, Expr):
        return hash(_data_key(node))
    return hash(tuple(_hash_tokens(node, map_free_vars)))


def _hash_tokens(root: Expr, map_free_vars: bool) -> list[Any]:
    """The token stream of ``root``: one token per visit, in comparison order."""
    tokens: list[Any] = []
    index: dict[int, int] = {}
    keep: list[Any] = []  # keeps visited nodes alive so that their ids stay unique
    stack: list[Any] = [root]
    while stack:
        n = stack.pop()
        if _is_value_leaf(n):  # by value, shared or not (as in the comparison)
            tokens.append(_constant_key(n) if type(n) is Constant else ("Tuple", 0))
            continue
        seen = index.get(id(n))
        if seen is not None:
            tokens.append(("ref", seen))
            continue
        index[id(n)] = len(index)
        keep.append(n)
        t = type(n)
        if t is Var:
            ann = _data_key(n.type_annotation)
            tokens.append(("free", ann) if map_free_vars else ("free", id(n), ann))
            continue
        if t is Clause:
            _clause_tokens(n, tokens, index, keep)
            stack.append(n.rhs)
            continue
        layout = t._layout
        token: list[Any] = [t.__name__]
        for f in layout:
            if f.is_sequence:
                token.append(len(getattr(n, f.name)))
            elif not f.is_child and f.compare:
                token.append(_data_key(getattr(n, f.name)))
        tokens.append(tuple(token))
        _binder_tokens(n, layout, tokens, index, keep)
        for f in reversed(layout):
            if not f.is_child or f.binds:
                continue
            if f.is_sequence:
                stack.extend(reversed(getattr(n, f.name)))
            else:
                stack.append(getattr(n, f.name))
    return tokens


def _binder_tokens(
    n: Expr, layout: Any, tokens: list[Any], index: dict[int, int], keep: list[Any]
) -> None:
    """The tokens of the variables ``n`` binds (a reference if seen before)."""
    for f in layout:
        if f.binds:
            bound = getattr(n, f.name) if f.is_sequence else (getattr(n, f.name),)
            for v in bound:
                seen = index.get(id(v))
                if seen is not None:
                    tokens.append(("ref", seen))
                    continue
                index[id(v)] = len(index)
                keep.append(v)
                tokens.append(("bind", _data_key(v.type_annotation)))


def _clause_tokens(
    clause: Clause, tokens: list[Any], index: dict[int, int], keep: list[Any]
) -> None:
    """The tokens of a clause's pattern; its variables are bound at their position."""
    for tok in _pattern_tokens(clause.lhs):
        if isinstance(tok, Var):
            index[id(tok)] = len(index)
            keep.append(tok)
            tok = ("bind", _data_key(tok.type_annotation))
        tokens.append(tok)


def _constant_key(c: Constant) -> tuple[Any, ...]:
    arr = np.asarray(c.data.numpy())
    if arr.dtype.kind in "fc":
        # Equal constants may differ in bytes: -0.0 == 0.0, and NaN payloads.
        arr = np.where(np.isnan(arr), np.nan, arr + 0)
    return ("Const", arr.shape, arr.dtype.name, arr.tobytes())


#: absolute tolerance of float attribute comparison (TVM's)
FLOAT_ATOL = 1e-9


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(
        x, (bool, np.bool_)
    )


def data_equal(a: Any, b: Any) -> bool:
    """Equality of non-expression field values: attributes, names, types.

    As in TVM, floats compare with an absolute tolerance of ``FLOAT_ATOL``
    (``1e-5`` and its float32 rounding are equal); containers compare element
    by element (attribute maps by their items, as ``Attrs.__eq__`` does); anything
    else by ``==``.
    """
    if a is b:
        return True
    if _is_number(a) and _is_number(b):
        if isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
            return bool(a == b or abs(float(a) - float(b)) <= FLOAT_ATOL)
        return bool(a == b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if len(a) != len(b):
            return False
        return all(k in b and data_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(map(data_equal, a, b))
    return bool(a == b)


def _data_key(v: Any) -> Any:
    """A hashable key of a field value such that ``data_equal`` values share it."""
    if isinstance(v, Type):
        return type_shape_key(v)
    if _is_number(v):
        if isinstance(v, (float, np.floating)):
            f = float(v)
            if f != f or f in (float("inf"), float("-inf")):
                return ("float", str(f))
            r = round(f)
            return ("num", r) if abs(f - r) <= FLOAT_ATOL else ("float",)
        return ("num", int(v))
    if isinstance(v, Mapping):
        return ("map", tuple(sorted((str(k), _data_key(x)) for k, x in v.items())))
    if isinstance(v, (tuple, list)):
        return tuple(_data_key(x) for x in v)
    try:
        hash(v)
    except TypeError:
        return ("unhashable", type(v).__name__)
    return v
