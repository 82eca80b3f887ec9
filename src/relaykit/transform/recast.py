"""``recast``: run chosen operators in another dtype by hard casts around them (TVM's
``relay.transform.recast``), to time a layer at a new dtype; it makes no attempt to keep
the model's numbers.

Each call of an operator in ``ops`` has its inputs cast to ``dtype`` (each field of
``concatenate``'s tuple), its ``out_dtype`` attribute, when it has one, set to
``out_dtype``, and its result cast back to the dtype it had. Layers are numbered as
:func:`~relaykit.relay.analysis.count_layers` counts them: the calls of ``ops`` on the
deepest chain from the input are layers ``0 .. n-1``; a call's number is ``n - 1``
minus the calls of ``ops`` above it on the way from the output (the first way met, the
function's body walked depth-first, arguments in order). ``skip_layers`` leaves those
layers as they are; a negative number counts from the last layer.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 4)); w = relay.var("w", shape=(3, 4))
>>> out = recast(relay.Function([x, w], relay.nn.dense(x, w)), "float16", "float16", ["nn.dense"])
>>> out.body.op.name, out.body.args[0].attrs.out_dtype, out.body.attrs.dtype
('cast', 'float16', 'float32')
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from relaykit import op as _op
from relaykit.errors import UsageError
from relaykit.ir.expr import Call, Expr, Function, Tuple
from relaykit.ir.functor import children, rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.type_check import infer_type
from relaykit.ir.types import TensorType, check_dtype

__all__ = ["recast"]


def _layers(body: Expr, names: set[str]) -> tuple[int, dict[int, int]]:
    """The number of layers and, per call of ``names`` (by id), how many calls of
    ``names`` stand above it on the first depth-first way from ``body``."""
    deepest: dict[int, int] = {}
    above: dict[int, int] = {}
    stack: list[tuple[Expr, int, bool]] = [(body, 0, False)]
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        counts = type(node) is Call and type(node.op) is Op and node.op.name in names
        if done:
            below = max((deepest[id(c)] for c in children(node)), default=0)
            deepest[key] = below + int(counts)
            continue
        if key in above:
            continue
        above[key] = depth
        stack.append((node, depth, True))
        inner = depth + int(counts)
        stack.extend((c, inner, False) for c in reversed(children(node)) if id(c) not in above)
    return deepest.get(id(body), 0), above


def recast(
    expr: Expr | IRModule,
    dtype: str,
    out_dtype: str,
    ops: Sequence[str] | None = None,
    skip_layers: Sequence[int] | None = None,
) -> Any:
    """``expr`` (an expression, a function or a module's ``main``) with the calls of
    ``ops`` (default ``["nn.conv2d"]``) run in ``dtype`` with result ``out_dtype``, cast
    back after; ``skip_layers`` keeps those layers (see the module's docstring)."""
    as_module = isinstance(expr, IRModule)
    root: Expr = expr["main"] if isinstance(expr, IRModule) else expr
    dtype, out_dtype = check_dtype(dtype), check_dtype(out_dtype)
    names = set(ops if ops is not None else ["nn.conv2d"])
    for name in names:
        _op.get(name)  # an unknown operator is reported by name
    body = root.body if isinstance(root, Function) else root
    count, above = _layers(body, names)
    skip: set[int] = set()
    for layer in skip_layers or ():
        try:
            n = operator.index(layer)
        except TypeError:
            raise UsageError(
                "recast: skip_layers takes layer numbers (ints, negative from the last "
                f"layer), got {layer!r}"
            ) from None
        skip.add(count + n if n < 0 else n)
    infer_type(root)  # each call's dtype, for those without an out_dtype attribute

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(old) is not Call or type(old.op) is not Op or old.op.name not in names:
            return None
        if count - above.get(id(old), 0) - 1 in skip:
            return None
        if not isinstance(new, Call):  # pragma: no cover - a call rebuilds as a call
            return None
        args = list(new.args)
        if old.op.name == "concatenate":
            if len(args) != 1 or type(args[0]) is not Tuple:
                return None
            args = [Tuple([_op.cast(f, dtype) for f in args[0].fields])]
        else:
            args = [_op.cast(a, dtype) for a in args]
        attrs = new.attrs
        orig = ""
        if attrs is not None and "out_dtype" in attrs:
            orig = str(attrs["out_dtype"] or "")
            attrs = attrs.with_updates(out_dtype=out_dtype)
        if not orig:
            orig = _result_dtype(old)
        return _op.cast(Call(new.op, args, attrs, new.type_args, new.span), orig)

    out = rewrite_post_order(root, post)
    return IRModule.from_expr(out) if as_module else out


def _result_dtype(call: Call) -> str:
    t = call.checked_type
    if not isinstance(t, TensorType):
        raise UsageError(
            f"recast: {call.op} returns {t}, not a tensor, so it cannot be cast back; "
            "leave it out of ops="
        )
    return t.dtype
