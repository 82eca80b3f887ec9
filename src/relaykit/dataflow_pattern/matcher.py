"""Matching one pattern at one expression, with TVM's semantics.

The matcher follows TVM's ``DFPatternMatcher``: a pattern object, once matched,
stands for that one expression node for the rest of the match (so a shared
``wildcard()`` means "the same node"); ``add`` and ``multiply`` match
commutatively; ``divide``/``multiply`` associate as in TVM; attribute patterns
look at call, function or operator attributes; type patterns read
``checked_type`` (inferring it in place when missing, as TVM does).

Matching recurses on the size of the pattern only; walking a dominator's path
through the graph is iterative. With ``explain=True`` the matcher records the
failure that got furthest (see :mod:`relaykit.dataflow_pattern.explain`).

>>> from relaykit.ir import Var, TensorType
>>> from relaykit.dataflow_pattern import is_op, wildcard
>>> x = Var("x", TensorType((2,)))
>>> match(is_op("add")(wildcard(), wildcard()), x + x)
True
>>> match(is_op("multiply")(wildcard(), wildcard()), x + x)
False
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaykit.errors import RelayKitError, TypeNotInferredError
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    checked_type_or_none,
)
from relaykit.ir.op import Op
from relaykit.ir.structural import structural_equal
from relaykit.ir.types import TensorType, Type
from relaykit.transform.infer_type import infer_type

from .graph import IndexedGraph
from .pattern import (
    AltPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataTypePattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    IfPattern,
    LetPattern,
    PatternError,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
)
from .printer import describe_expr, pattern_to_str

__all__ = ["DFPatternMatcher", "NodeMap", "match", "check_match_args"]

NodeMap = dict[DFPattern, list[Expr]]


def _op_name(pattern: DFPattern) -> str | None:
    """The operator name of ``is_op(name)(...)``, else None."""
    if type(pattern) is CallPattern:
        op = pattern.op
        if type(op) is ExprPattern and isinstance(op.expr, Op):
            return op.expr.name
    return None


def _expr_op_name(expr: Expr) -> str | None:
    if type(expr) is Call and isinstance(expr.op, Op):
        return expr.op.name
    return None


def _attr_equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Expr) or isinstance(actual, Expr):
        return (
            isinstance(expected, Expr)
            and isinstance(actual, Expr)
            and structural_equal(expected, actual)
        )
    try:
        return bool(expected == actual)
    except Exception:  # incomparable values simply do not match
        return False


class DFPatternMatcher:
    """Matches patterns at nodes of one expression graph (TVM's ``DFPatternMatcher``).

    ``graph`` (built lazily from ``root``) is only needed by dominator patterns.
    After a successful :meth:`match`, :attr:`memo` maps each sub-pattern to the
    nodes it matched. With ``explain=True`` the deepest failure is recorded.
    """

    def __init__(
        self, root: Expr | None = None, graph: IndexedGraph | None = None, explain: bool = False
    ) -> None:
        self._root = root if root is not None else (graph.root if graph is not None else None)
        self._graph = graph
        self.memo: NodeMap = {}
        self._matched: list[DFPattern] = []
        self._memoize = True
        self._explain = explain
        self._depth = 0
        self.failure: tuple[int, DFPattern, Expr, str] | None = None

    # -- entry points ------------------------------------------------------------
    def match(self, pattern: DFPattern, expr: Expr) -> bool:
        """Whether ``pattern`` matches at ``expr`` (memo is reset first)."""
        self.memo.clear()
        self._matched.clear()
        self._memoize = True
        self._depth = 0
        self.failure = None
        try:
            return self.visit(pattern, expr)
        except RecursionError:
            # Only a recursive pattern (wildcard().redirect_to(...)) recurses on the
            # depth of the expression rather than the size of the pattern.
            raise PatternError(
                "the pattern recursed deeper than Python's recursion limit while matching: "
                "a recursive pattern (wildcard().redirect_to(...)) follows the expression one "
                "level per repetition; match a shorter chain or raise sys.setrecursionlimit"
            ) from None

    def node_map(self) -> NodeMap:
        """A copy of the sub-pattern -> matched nodes map of the last match."""
        return {p: list(es) for p, es in self.memo.items()}

    @property
    def graph(self) -> IndexedGraph:
        if self._graph is None:
            if self._root is None:
                raise PatternError("dominator patterns need the matcher to know the graph root")
            self._graph = IndexedGraph(self._root)
        return self._graph

    # -- the memoising visit ---------------------------------------------------------
    def visit(self, pattern: DFPattern, expr: Expr) -> bool:
        memo = self.memo
        if self._memoize and pattern in memo:
            bound = memo[pattern][0]
            if bound is expr:
                return True
            if self._explain:
                self._note(
                    pattern,
                    expr,
                    f"{pattern_to_str(pattern, 1)} appears more than once in the pattern and "
                    f"already matched {describe_expr(bound)}, not this {describe_expr(expr)}",
                    extra=1,
                )
            return False
        watermark = len(self._matched)
        visit_fn = _VISITORS.get(type(pattern))
        if visit_fn is None:
            visit_fn = _visitor_for(pattern)
        self._depth += 1  # reset by match(), so an exception cannot leave it wrong
        ok = visit_fn(self, pattern, expr)
        self._depth -= 1
        if ok:
            memo.setdefault(pattern, []).append(expr)
            self._matched.append(pattern)
        else:
            self._clear(watermark)
        return ok

    def _clear(self, watermark: int) -> None:
        matched = self._matched
        for p in matched[watermark:]:
            self.memo.pop(p, None)
        del matched[watermark:]

    def _note(self, pattern: DFPattern, expr: Expr, reason: str, extra: int = 0) -> None:
        depth = self._depth + extra
        if self.failure is None or depth > self.failure[0]:
            self.failure = (depth, pattern, expr, reason)

    def _fail(self, pattern: DFPattern, expr: Expr, what: Callable[[], str]) -> bool:
        """Record ``<pattern> expected ... but found ...`` when explaining; return False."""
        if self._explain:
            self._note(pattern, expr, f"{pattern_to_str(pattern, 1)} {what()}")
        return False

    # -- types -------------------------------------------------------------------------
    def _type_of(self, expr: Expr) -> Type | None:
        t = checked_type_or_none(expr)
        if t is None and type(expr) is Var:
            t = expr.type_annotation
        if t is None and not isinstance(expr, Op):
            try:
                t = infer_type(expr)
            except RelayKitError as err:
                raise TypeNotInferredError(
                    f"a type pattern needs the type of {describe_expr(expr)}, which is not "
                    f"inferred, and inferring it failed: {err}\nRun "
                    "relay.transform.InferType() on the module before matching."
                ) from err
        return t

    # -- one method per pattern kind ------------------------------------------------------
    def _wildcard(self, p: WildcardPattern, e: Expr) -> bool:
        target = p.redirect
        return True if target is None else self.visit(target, e)

    def _var(self, p: VarPattern, e: Expr) -> bool:
        if type(e) is not Var:
            return self._fail(p, e, lambda: f"expected a variable but found {describe_expr(e)}")
        if p.name and p.name != e.name_hint:
            return self._fail(p, e, lambda: f"expected variable %{p.name} but found %{e.name_hint}")
        return True

    def _constant(self, p: ConstantPattern, e: Expr) -> bool:
        if type(e) is Constant:
            return True
        return self._fail(p, e, lambda: f"expected a constant but found {describe_expr(e)}")

    def _expr(self, p: ExprPattern, e: Expr) -> bool:
        pe = p.expr
        if pe is e:
            return True
        if not isinstance(pe, Op) and type(pe) is type(e) and structural_equal(pe, e):
            return True
        if isinstance(pe, Op):
            return self._fail(p, e, lambda: f"expected op {pe.name} but found {_found_op(e)}")
        return self._fail(
            p,
            e,
            lambda: (
                f"expected an expression equal to {describe_expr(pe)} but found {describe_expr(e)}"
            ),
        )

    def _alt(self, p: AltPattern, e: Expr) -> bool:
        return self.visit(p.left, e) or self.visit(p.right, e)

    def _attr(self, p: AttrPattern, e: Expr) -> bool:
        if not self.visit(p.pattern, e):
            return False
        if isinstance(e, Op):
            for key, want in p.attrs.items():
                have = e.get_attr(key)
                if have is None or not _attr_equal(want, have):
                    return self._attr_fail(p, e, key, want, have, f"{e.name} has")
            return True
        if type(e) is Call or type(e) is Function:
            attrs = e.attrs
            for key, want in p.attrs.items():
                have = attrs.get(key)
                if key not in attrs or not _attr_equal(want, have):
                    return self._attr_fail(p, e, key, want, have, "found")
            return True
        return self._fail(
            p, e, lambda: f"applies to calls, functions and operators, found {describe_expr(e)}"
        )

    def _attr_fail(
        self, p: AttrPattern, e: Expr, key: str, want: Any, have: Any, found: str
    ) -> bool:
        if self._explain:
            if have is None:
                what = f"expected attribute {key} but the {describe_expr(e)} has no attribute {key}"
            else:
                what = f"expected {key}={want!r} but {found} {key}={have!r}"
            self._note(p, e, f"{pattern_to_str(p, 1)} {what}")
        return False

    def _call(self, p: CallPattern, e: Expr) -> bool:
        if type(e) is not Call:
            return self._fail(p, e, lambda: f"expected a call but found {describe_expr(e)}")
        watermark = len(self._matched)
        if self.visit(p.op, e.op):
            watermark2 = len(self._matched)
            if self._match_args(p, p.args, e, watermark2):
                return True
            if _op_name(p) in ("add", "multiply") and p.args is not None:
                return self._match_args(p, p.args[::-1], e, watermark2)
            return False
        self._clear(watermark)
        if self._explain and self.failure is not None and self.failure[2] is e.op:
            # Point at the call, not at the (shared) operator node.
            depth, fp, _, reason = self.failure
            self.failure = (depth, fp, e, reason)
        return self._associate(p, e, watermark)

    def _match_args(self, p: CallPattern, pargs: Any, e: Call, watermark: int) -> bool:
        if pargs is None:
            return True
        if len(pargs) != len(e.args):
            self._clear(watermark)
            return self._fail(
                p, e, lambda: f"expected {len(pargs)} arguments but found {len(e.args)}"
            )
        for pa, ea in zip(pargs, e.args, strict=True):
            if not self.visit(pa, ea):
                self._clear(watermark)
                return False
        return True

    def _associate(self, p: CallPattern, e: Call, watermark: int) -> bool:
        """TVM's rewriting of ``(a * b) / c`` as ``a * (b / c)`` and back while matching."""
        name = _op_name(p)
        args = p.args
        if name == "divide" and args is not None and len(args) == 2:
            inner = args[0]
            if (
                isinstance(inner, CallPattern)
                and _op_name(inner) == "multiply"
                and inner.args is not None
                and len(inner.args) == 2
                and _expr_op_name(e) == "multiply"
                and len(e.args) == 2
                and "divide" in (_expr_op_name(e.args[0]), _expr_op_name(e.args[1]))
            ):
                for i in (0, 1):
                    div = CallPattern(p.op, [inner.args[i], args[1]])
                    mul = CallPattern(inner.op, [inner.args[(i + 1) % 2], div])
                    if self.visit(mul, e):
                        return True
                    self._clear(watermark)
                return False
        if name == "multiply" and args is not None and len(args) == 2:
            for i in (0, 1):
                inner = args[i]
                if (
                    isinstance(inner, CallPattern)
                    and _op_name(inner) == "divide"
                    and inner.args is not None
                    and len(inner.args) == 2
                    and _expr_op_name(e) == "divide"
                    and len(e.args) == 2
                    and "multiply" in (_expr_op_name(e.args[0]), _expr_op_name(e.args[1]))
                ):
                    mul = CallPattern(p.op, [inner.args[0], args[(i + 1) % 2]])
                    div = CallPattern(inner.op, [mul, inner.args[1]])
                    return self.visit(div, e)
        return False

    def _function(self, p: FunctionPattern, e: Expr) -> bool:
        if type(e) is not Function:
            return self._fail(p, e, lambda: f"expected a function but found {describe_expr(e)}")
        if p.params is not None:
            n = len(p.params)
            if n != len(e.params):
                return self._fail(
                    p, e, lambda: f"expected {n} parameters but found {len(e.params)}"
                )
            for pp, ep in zip(p.params, e.params, strict=True):
                if not self.visit(pp, ep):
                    return False
        return self.visit(p.body, e.body)

    def _tuple(self, p: TuplePattern, e: Expr) -> bool:
        if type(e) is not Tuple:
            return self._fail(p, e, lambda: f"expected a tuple but found {describe_expr(e)}")
        if p.fields is not None:
            n = len(p.fields)
            if n != len(e.fields):
                return self._fail(p, e, lambda: f"expected {n} fields but found {len(e.fields)}")
            for pf, ef in zip(p.fields, e.fields, strict=True):
                if not self.visit(pf, ef):
                    return False
        return True

    def _tuple_get_item(self, p: TupleGetItemPattern, e: Expr) -> bool:
        if type(e) is not TupleGetItem:
            return self._fail(
                p, e, lambda: f"expected a tuple projection but found {describe_expr(e)}"
            )
        if p.index is not None and p.index != e.index:
            return self._fail(p, e, lambda: f"expected index {p.index} but found {e.index}")
        return self.visit(p.tuple, e.tuple_value)

    def _if(self, p: IfPattern, e: Expr) -> bool:
        if type(e) is not If:
            return self._fail(p, e, lambda: f"expected an if but found {describe_expr(e)}")
        return (
            self.visit(p.cond, e.cond)
            and self.visit(p.true_branch, e.true_branch)
            and self.visit(p.false_branch, e.false_branch)
        )

    def _let(self, p: LetPattern, e: Expr) -> bool:
        if type(e) is not Let:
            return self._fail(p, e, lambda: f"expected a let but found {describe_expr(e)}")
        return (
            self.visit(p.var, e.var) and self.visit(p.value, e.value) and self.visit(p.body, e.body)
        )

    def _type(self, p: TypePattern, e: Expr) -> bool:
        t = self._type_of(e)
        if t != p.type:
            return self._fail(p, e, lambda: f"expected type {p.type} but found {t}")
        return self.visit(p.pattern, e)

    def _shape(self, p: ShapePattern, e: Expr) -> bool:
        t = self._type_of(e)
        if not isinstance(t, TensorType) or t.shape != p.shape:
            return self._fail(
                p,
                e,
                lambda: (
                    f"expected shape {list(p.shape)} but found "
                    f"{list(t.shape) if isinstance(t, TensorType) else t}"
                ),
            )
        return self.visit(p.pattern, e)

    def _dtype(self, p: DataTypePattern, e: Expr) -> bool:
        t = self._type_of(e)
        if not isinstance(t, TensorType) or t.dtype != p.dtype:
            return self._fail(
                p,
                e,
                lambda: (
                    f"expected dtype {p.dtype} but found "
                    f"{t.dtype if isinstance(t, TensorType) else t}"
                ),
            )
        return self.visit(p.pattern, e)

    # -- dominators ---------------------------------------------------------------------
    def _dominator(self, p: DominatorPattern, e: Expr) -> bool:
        if not self.visit(p.child, e):
            return False
        on_path = self._matches_path(p, e)
        self._memoize = True
        if not on_path:
            return self._fail(
                p,
                e,
                lambda: (
                    "expected every input path to reach the parent "
                    "through nodes matching the path pattern"
                ),
            )
        if self._dominates_parent(p, e):
            return True
        return self._fail(p, e, lambda: "expected the matched node to post-dominate the parent")

    def _path_inputs(self, expr: Expr) -> list[Expr]:
        inputs = self.graph.input_nodes(expr)
        if type(expr) is Call:
            return [n for n in inputs if n is not expr.op]
        return inputs

    def _matches_path(self, p: DominatorPattern, expr: Expr) -> bool:
        """Every input path of ``expr`` reaches a ``parent`` match through ``path`` matches.

        TVM's recursive ``MatchesPath``, with an explicit stack and without
        re-walking a node already shown to satisfy it.
        """
        verified: set[Expr] = set()
        stack: list[list[Any]] = [[expr, iter(self._path_inputs(expr)), 0]]
        while stack:
            frame = stack[-1]
            node = next(frame[1], None)
            if node is None:
                stack.pop()
                if frame[2] == 0:
                    return False
                verified.add(frame[0])
                continue
            frame[2] += 1
            self._memoize = True
            before = self.failure
            if self.visit(p.parent, node):
                continue
            self.failure = before  # not reaching the parent yet is no failure
            self._memoize = False
            if not self.visit(p.path, node):
                return False
            if node not in verified:
                stack.append([node, iter(self._path_inputs(node)), 0])
        return True

    def _dominates_parent(self, p: DominatorPattern, expr: Expr) -> bool:
        g = self.graph
        bound = self.memo.get(p.parent)
        if bound:
            return g.dominates(g.index[expr], g.index[bound[0]])
        # The parent is not bound: search the post-dominated nodes as TVM does.
        stack = [g.index[expr]]
        seen: set[int] = set()
        while stack:
            current = stack.pop()
            for child in g.dom_children[current]:
                if child not in seen:
                    if self.visit(p.parent, g.nodes[child]):
                        return True
                    stack.append(child)
                    seen.add(child)
        return False


def _found_op(e: Expr) -> str:
    if isinstance(e, Op):
        return e.name
    return describe_expr(e)


_VISITORS: dict[type, Callable[[DFPatternMatcher, Any, Expr], bool]] = {
    WildcardPattern: DFPatternMatcher._wildcard,
    VarPattern: DFPatternMatcher._var,
    ConstantPattern: DFPatternMatcher._constant,
    ExprPattern: DFPatternMatcher._expr,
    AltPattern: DFPatternMatcher._alt,
    AttrPattern: DFPatternMatcher._attr,
    CallPattern: DFPatternMatcher._call,
    FunctionPattern: DFPatternMatcher._function,
    TuplePattern: DFPatternMatcher._tuple,
    TupleGetItemPattern: DFPatternMatcher._tuple_get_item,
    IfPattern: DFPatternMatcher._if,
    LetPattern: DFPatternMatcher._let,
    TypePattern: DFPatternMatcher._type,
    ShapePattern: DFPatternMatcher._shape,
    DataTypePattern: DFPatternMatcher._dtype,
    DominatorPattern: DFPatternMatcher._dominator,
}


def _visitor_for(pattern: DFPattern) -> Callable[[DFPatternMatcher, Any, Expr], bool]:
    for base, fn in _VISITORS.items():
        if isinstance(pattern, base):
            return fn
    raise PatternError(f"not a pattern: {pattern!r}")


def check_match_args(pattern: Any, expr: Any) -> None:
    if not isinstance(pattern, DFPattern):
        raise PatternError(f"expected a pattern, got {type(pattern).__name__}: {pattern!r}")
    if not isinstance(expr, Expr):
        raise PatternError(f"patterns match relay expressions, got {type(expr).__name__}: {expr!r}")


def match(pattern: DFPattern, expr: Expr) -> bool:
    """Whether ``pattern`` matches ``expr`` (TVM's ``relay.dataflow_pattern.match``)."""
    check_match_args(pattern, expr)
    return DFPatternMatcher(expr).match(pattern, expr)
