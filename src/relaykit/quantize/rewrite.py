"""Forward rewriting with temporary values, the engine of quantization's passes.

Each quantization pass walks a function's body once, children first, and asks a
rule registered on the operator (an op attribute such as ``"FQAnnotateRewrite"``)
for the new form of each call, given the call and its already rewritten arguments.
A rule may return a :class:`TempExpr`, a value that carries extra facts (an
annotation kind, a scale) to the rules of its consumers; wherever a consumer has
no rule, the temporary value is *realized* into a plain expression. A rule returning
``None`` keeps the call, with its arguments realized.

Tuple arguments reach rules as :class:`TempTuple` (their fields unrealized), as
TVM's ``ForwardRewrite`` hands them.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> f = relay.Function([x], relay.nn.relu(x))
>>> forward_rewrite(f, "FNoSuchRule") is f
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.expr import Call, Expr, Function, Tuple
from relaykit.ir.functor import children, post_order, rebuild
from relaykit.ir.op import Op, default_registry

__all__ = ["TempExpr", "TempTuple", "forward_op", "forward_rewrite", "realize_value"]


class TempExpr:
    """A value on its way through a rewrite; :meth:`realize` gives the plain expression."""

    def realize(self) -> Expr:
        raise NotImplementedError


class TempTuple:
    """A tuple argument whose fields may be temporary values."""

    def __init__(self, fields: Sequence[Expr | TempExpr | TempTuple]) -> None:
        self.fields = list(fields)

    def __iter__(self) -> Iterator[Expr | TempExpr | TempTuple]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, i: int) -> Expr | TempExpr | TempTuple:
        return self.fields[i]

    def realize(self) -> Tuple:
        return Tuple([realize_value(f) for f in self.fields])


Value = Expr | TempExpr | TempTuple
Rule = Callable[[Call, list[Any], Any], Any]


def realize_value(value: Any) -> Expr:
    """``value`` as a plain expression."""
    if isinstance(value, (TempExpr, TempTuple)):
        return value.realize()
    if not isinstance(value, Expr):
        raise IRError(f"a quantization rewrite rule returned {value!r}, not an expression")
    return value


def forward_op(ref_call: Call, args: Sequence[Expr]) -> Call:
    """``ref_call``'s operator and attributes applied to ``args`` (TVM's ``_forward_op``)."""
    return Call(ref_call.op, list(args), ref_call.attrs, ref_call.type_args, ref_call.span)


def _use_counts(body: Expr) -> dict[Expr, int]:
    counts: dict[Expr, int] = {}
    for node in post_order(body):
        if type(node) is Function:
            continue
        for child in children(node):
            counts[child] = counts.get(child, 0) + 1
    return counts


def forward_rewrite(
    func: Function,
    rule_key: str,
    fmulti_ref: Callable[[Any], Any] | None = None,
    ctx: Any = None,
) -> Function:
    """``func`` with each call rewritten by the rule its operator has under ``rule_key``.

    ``fmulti_ref(value)``, when given, transforms a temporary value that more than one
    consumer reads, before they read it (TVM's multi-reference trigger).
    """
    body = func.body
    counts = _use_counts(body) if fmulti_ref is not None else {}
    memo: dict[Expr, Value] = {}
    inner_functions = [n for n in post_order(body) if type(n) is Function]
    skip = set(inner_functions)
    for node in post_order(body, skip=lambda n: n in skip):
        memo[node] = _rewrite_node(node, memo, rule_key, counts, fmulti_ref, ctx)
    for fn in inner_functions:  # closures: rebuilt around rewritten free values, not rewritten
        memo[fn] = rebuild(fn, lambda c: realize_value(memo.get(c, c)))
    new_body = realize_value(memo[body])
    if new_body is body:
        return func
    return func.with_fields(body=new_body)


def _arg_value(
    arg: Expr,
    memo: dict[Expr, Value],
    counts: dict[Expr, int],
    fmulti_ref: Callable[[Any], Any] | None,
) -> Value:
    value = memo[arg]
    if fmulti_ref is not None and counts.get(arg, 0) > 1 and isinstance(value, TempExpr):
        out: Value = fmulti_ref(value)
        return out
    return value


def _rewrite_node(
    node: Expr,
    memo: dict[Expr, Value],
    rule_key: str,
    counts: dict[Expr, int],
    fmulti_ref: Callable[[Any], Any] | None,
    ctx: Any,
) -> Value:
    if type(node) is Tuple:
        fields = [_arg_value(f, memo, counts, fmulti_ref) for f in node.fields]
        if any(isinstance(f, (TempExpr, TempTuple)) for f in fields):
            return TempTuple(fields)
        return rebuild(node, lambda c: realize_value(memo[c]))
    if type(node) is not Call:
        return rebuild(node, lambda c: realize_value(memo[c]))
    args = [_arg_value(a, memo, counts, fmulti_ref) for a in node.args]
    op = node.op
    if type(op) is Op:
        rule = default_registry.get_attr(op.name, rule_key)
        if rule is not None:
            out = rule(node, args, ctx)
            if out is not None:
                return out
    new_op = realize_value(memo[op]) if op in memo else op
    new_args = [realize_value(a) for a in args]
    if new_op is op and all(n is o for n, o in zip(new_args, node.args, strict=True)):
        return node
    return Call(new_op, new_args, node.attrs, node.type_args, node.span)
