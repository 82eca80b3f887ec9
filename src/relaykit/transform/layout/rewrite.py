"""The layout rewriter ``ConvertLayout`` and ``AlterOpLayout`` share.

One forward walk over a function. Each call is offered to a *hook* (the pass's: the
operator's ``FTVMConvertOpLayout`` or ``FTVMAlterOpLayout``), which may return the call
in other layouts. The operators' layout rules (:mod:`.infer`) then say which layout
each input must be in and which layout the output has; the walk moves each input to
its layout with ``layout_transform`` (an input that is already there costs nothing),
and remembers, for each rewritten value, its layout before and after. A value used
where no rule applies, or as the function's result, is moved back to its original
layout. Two transforms of one value to one layout are one call.

>>> from relaykit import relay
>>> from relaykit.ir.layout import Layout
>>> x = relay.var("x", shape=(1, 4, 4, 8))
>>> t = LayoutTransformer(lambda call, attrs, args: None)
>>> t.transform(x, Layout("NHWC"), Layout("NCHW")).attrs.dst_layout
'NCHW'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    Tuple,
    TupleGetItem,
    checked_type_or_none,
)
from relaykit.ir.functor import post_order, rebuild
from relaykit.ir.layout import UNDEF, Layout
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, TupleType
from relaykit.op import expand_dims
from relaykit.op.layout import layout_transform

from .infer import InferCorrectLayoutOutput, layout_rule

__all__ = ["LayoutTransformer", "Altered", "CallHook"]

#: ``hook(old_call, attrs, new_args) -> Expr | None``: the call in new layouts, or None.
CallHook = Callable[[Call, Any, list[Expr]], "Expr | None"]


class Altered:
    """A rewritten value with its layout before (``old``) and after (``new``) the pass."""

    __slots__ = ("value", "old", "new")

    def __init__(self, value: Expr, old: Layout, new: Layout) -> None:
        self.value, self.old, self.new = value, old, new


class _LTuple:
    """A tuple whose fields may be :class:`Altered` (kept unrealised for its consumers)."""

    __slots__ = ("node", "fields")

    def __init__(self, node: Tuple | None, fields: list[Any]) -> None:
        self.node, self.fields = node, fields


def _is_scalar(expr: Expr) -> bool:
    """Whether ``expr`` holds one element (every dimension 1): it broadcasts in any
    layout, so it is never moved."""
    if type(expr) is Constant:
        shape: tuple[Any, ...] = expr.data.shape
    else:
        ty = checked_type_or_none(expr) if expr.has_checked_type else None
        if not isinstance(ty, TensorType):
            return False
        shape = tuple(ty.shape)
    return all(isinstance(d, int) and d == 1 for d in shape)


class LayoutTransformer:
    """Walks one function, calling ``hook`` on each operator call (see the module docs).

    ``alter_mode``: an operator with a hook and no layout rule is replaced by what the
    hook returns, with no layout bookkeeping (as ``AlterOpLayout`` does)."""

    def __init__(
        self,
        hook: CallHook,
        has_hook: Callable[[str], bool] | None = None,
        alter_mode: bool = False,
    ) -> None:
        self.hook = hook
        self.has_hook = has_hook or (lambda name: False)
        self.alter_mode = alter_mode
        self._memo: dict[tuple[int, str, str], tuple[Expr, Expr]] = {}

    # -- layout transforms ------------------------------------------------------------------------

    def transform(self, raw: Expr, src: Layout, dst: Layout) -> Expr:
        """``raw`` (laid out as ``src``) laid out as ``dst``, memoised."""
        if src.equals(dst):
            return raw
        key = (id(raw), src.name, dst.name)
        hit = self._memo.get(key)
        if hit is not None:
            return hit[1]
        out = self._transform(raw, src, dst)
        self._memo[key] = (raw, out)
        return out

    def _transform(self, raw: Expr, src: Layout, dst: Layout) -> Expr:
        if not src.defined or not dst.defined:
            raise IRError(f"cannot move a value between layouts {src} and {dst}: one is not known")
        expr, new_src = raw, src
        if src.ndim_primal < dst.ndim_primal:
            if _is_scalar(raw):
                return raw
            expr = expand_dims(raw, axis=0, num_newaxis=dst.ndim_primal - src.ndim_primal)
            new_src = src.expand_primal(dst)
            if new_src.equals(dst):
                return expr
        return layout_transform(expr, new_src.name, dst.name)

    def realize(self, value: Any) -> Expr:
        """The plain expression of a walk result, in its original layout."""
        if isinstance(value, Altered):
            if not value.old.defined or not value.new.defined:
                return value.value
            return self.transform(value.value, value.new, value.old)
        if isinstance(value, _LTuple):
            fields = [self.realize(f) for f in value.fields]
            if value.node is not None:
                return value.node.with_fields(fields=tuple(fields))
            return Tuple(fields)
        return value

    # -- the walk ---------------------------------------------------------------------------------

    def run(self, func: Function) -> Function:
        """``func`` with its body rewritten."""
        memo: dict[Expr, Any] = {}

        def skip(node: Expr) -> bool:
            return node in memo or (type(node) is Function and node is not func)

        for node in post_order(func.body, skip=skip):
            memo[node] = self._visit(node, memo)
        body = self.realize(memo.get(func.body, func.body))
        if body is func.body:
            return func
        return func.with_fields(body=body)

    def _visit(self, node: Expr, memo: dict[Expr, Any]) -> Any:
        if isinstance(node, Call) and type(node.op) is Op:
            return self._call(node, [memo.get(a, a) for a in node.args])
        if isinstance(node, Tuple):
            return _LTuple(node, [memo.get(f, f) for f in node.fields])
        if type(node) is TupleGetItem:
            inner = memo.get(node.tuple_value, node.tuple_value)
            if isinstance(inner, _LTuple):
                return inner.fields[node.index]
            value = self.realize(inner)
            if value is node.tuple_value:
                return node
            return TupleGetItem(value, node.index)
        return rebuild(node, lambda c: self.realize(memo[c]) if c in memo else c)

    def _plain_call(self, call: Call, args: list[Any]) -> Expr:
        new_args = [self.realize(a) for a in args]
        if all(n is o for n, o in zip(new_args, call.args, strict=True)):
            return call
        return Call(call.op, new_args, call.attrs, call.type_args, call.span)

    def _gather(self, args: list[Any]) -> tuple[list[Altered], list[Expr]]:
        """One :class:`Altered` per input tensor (tuple fields flattened) and the
        plain arguments."""
        inputs: list[Altered] = []
        normal: list[Expr] = []

        def one(value: Any) -> Expr:
            if not isinstance(value, Altered):
                value = Altered(self.realize(value), UNDEF, UNDEF)
            inputs.append(value)
            return value.value

        for a in args:
            if isinstance(a, _LTuple):
                fields = tuple(one(f) for f in a.fields)
                normal.append(a.node.with_fields(fields=fields) if a.node else Tuple(fields))
            else:
                normal.append(one(a))
        return inputs, normal

    def _call(self, call: Call, args: list[Any]) -> Any:
        name = call.op.name  # type: ignore[attr-defined]
        rule = layout_rule(name)
        inputs, normal = self._gather(args)
        if self.alter_mode and rule is None and self.has_hook(name):
            out = self.hook(call, call.attrs, normal)
            if out is not None:
                return out
            return Call(call.op, normal, call.attrs, call.type_args, call.span)
        if rule is None:
            return self._plain_call(call, args)
        return self._rewrite(call, args, rule, inputs, normal)

    def _rewrite(
        self,
        call: Call,
        args: list[Any],
        rule: Callable[..., Any],
        inputs: list[Altered],
        normal: list[Expr],
    ) -> Any:
        """TVM's layout rewriting of one call with a layout rule (the module docs)."""
        types = [checked_type_or_none(a) for a in call.args]
        old_prd = [x.old for x in inputs]
        new_prd = [x.new for x in inputs]
        first = _infer(rule, call.attrs, None, old_prd, types)
        if first is None:
            return self._plain_call(call, args)
        old_cur, old_out = first.input_layouts, first.output_layouts
        if len(old_cur) != len(inputs):
            return self._plain_call(call, args)
        new_prd_inf = [n if n.defined else c for n, c in zip(new_prd, old_cur, strict=True)]
        old_prd_inf = [o if o.defined else c for o, c in zip(old_prd, old_cur, strict=True)]
        altered = self.hook(call, first.new_attrs, normal)
        new_call = altered if altered is not None else Call(call.op, normal, first.new_attrs)
        if type(new_call) is not Call or type(new_call.op) is not Op:
            return self._plain_call(call, args)
        new_rule = layout_rule(new_call.op.name)
        second = (
            None
            if new_rule is None
            else _infer(new_rule, new_call.attrs, new_prd_inf, old_prd_inf, types)
        )
        if second is None:
            return self._plain_call(call, args)
        new_cur, new_out = second.input_layouts, second.output_layouts
        if len(new_out) != len(old_out) or len(new_cur) != len(inputs):
            return self._plain_call(call, args)
        flat = sum(len(a.fields) if type(a) is Tuple else 1 for a in new_call.args)
        if flat != len(inputs):
            return self._plain_call(call, args)

        def move(arg: Expr, pt: int) -> Expr:
            o_prd, o_cur, n_prd, n_cur = old_prd[pt], old_cur[pt], new_prd[pt], new_cur[pt]
            if o_cur.equals(o_prd):
                return self.transform(arg, n_prd, n_cur)
            if o_prd.defined:
                arg = self.transform(arg, n_prd, o_prd)
            return self.transform(arg, o_cur, n_cur)

        moved: list[Expr] = []
        pt = 0
        for arg in new_call.args:
            if type(arg) is Tuple:
                fields = [move(f, pt + k) for k, f in enumerate(arg.fields)]
                pt += len(fields)
                moved.append(arg.with_fields(fields=tuple(fields)))
            else:
                moved.append(move(arg, pt))
                pt += 1
        result = Call(new_call.op, moved, second.new_attrs, (), call.span)
        out_ty = checked_type_or_none(call)
        if isinstance(out_ty, TupleType):
            return _LTuple(
                None,
                [
                    Altered(TupleGetItem(result, i), old_out[i], new_out[i])
                    for i in range(len(new_out))
                ],
            )
        return Altered(result, old_out[0], new_out[0])


def _infer(
    rule: Callable[..., Any],
    attrs: Any,
    new_in: list[Layout] | None,
    old_in: Sequence[Layout],
    types: list[Any],
) -> InferCorrectLayoutOutput | None:
    out = rule(attrs, new_in, list(old_in), types)
    if out is None:
        return None
    if not isinstance(out, InferCorrectLayoutOutput):
        out = InferCorrectLayoutOutput(out[0], out[1], out[2])
    for lay in (*out.input_layouts, *out.output_layouts):
        if not lay.defined:
            return None
    return out
