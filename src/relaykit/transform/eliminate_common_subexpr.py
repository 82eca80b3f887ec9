"""``EliminateCommonSubexpr``: share identical operator calls.

Two calls of the same operator with the same attributes on the *same* argument
nodes compute the same value, so the second is replaced by the first; since
arguments are merged first (post-order), whole duplicated subgraphs collapse.
Scalar constant arguments count as the same when their dtype and value are
(``add(x, 1f)`` twice is one call, as in TVM); tensor constants by identity.
Equal tuples of the same fields are shared too.
``fskip(call)`` may exempt calls (e.g. random ops). One pass, a dict lookup per
node: linear.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2,))
>>> f = relay.Function([x], relay.add(relay.exp(x), relay.exp(x)))
>>> with relay.transform.PassContext(opt_level=3):
...     out = EliminateCommonSubexpr()(IRModule.from_expr(f))["main"].body
>>> out.args[0] is out.args[1]
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaykit.ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op

from .pass_infra import FunctionPass, PassContext

__all__ = ["EliminateCommonSubexpr", "eliminate_common_subexpr"]

_NEVER_MERGED = frozenset({"nn.dropout"})


def _arg_key(arg: Expr) -> Any:
    """How an argument is compared: scalar constants by value, the rest by identity."""
    if type(arg) is Constant:
        data = arg.data.numpy()
        if data.ndim == 0:
            return ("scalar", data.dtype.str, data.tobytes())
    return id(arg)


def eliminate_common_subexpr(expr: Expr, fskip: Callable[[Call], bool] | None = None) -> Expr:
    """``expr`` with structurally identical calls (same op, attrs and argument nodes)
    merged."""
    seen: dict[Any, Expr] = {}

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is Call:
            if type(new.op) is not Op or new.op.name in _NEVER_MERGED:
                return None
            if fskip is not None and fskip(new):
                return None
            key: Any = ("call", new.op, tuple(_arg_key(a) for a in new.args), new.attrs)
        elif type(new) is Tuple and new.fields:
            key = ("tuple", tuple(_arg_key(f) for f in new.fields))
        elif type(new) is TupleGetItem:
            key = ("proj", id(new.tuple_value), new.index)
        else:
            return None
        first = seen.get(key)
        if first is None:
            seen[key] = new
            return None
        return first

    return rewrite_post_order(expr, post)


class EliminateCommonSubexpr(FunctionPass):
    """``relay.transform.EliminateCommonSubexpr(fskip=None)`` (opt_level 3)."""

    def __init__(self, fskip: Callable[[Call], bool] | None = None) -> None:
        self.fskip = fskip
        super().__init__(self._transform, opt_level=3, name="EliminateCommonSubexpr")

    def _transform(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = eliminate_common_subexpr(fn, self.fskip)
        return out if isinstance(out, Function) else fn
