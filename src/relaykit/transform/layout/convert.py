"""``ConvertLayout``: give chosen operators the data layouts asked for, and let the
operators around them follow, so that layout transforms gather at the edges.

``ConvertLayout({"nn.conv2d": ["NCHW", "default"]})`` rewrites each ``nn.conv2d`` into
NCHW data and its usual kernel layout (OIHW) through the operator's
``FTVMConvertOpLayout`` hook; the operators downstream adopt the new layout where
their layout rule allows (elementwise, broadcast, pooling, reductions, concatenation,
...), and ``layout_transform`` calls are put where a value must change layout. The
function computes what it computed before.

>>> import numpy as np
>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(1, 8, 8, 4))
>>> w = relay.var("w", shape=(3, 3, 4, 4))
>>> y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1), data_layout="NHWC",
...                                   kernel_layout="HWIO"))
>>> mod = IRModule.from_expr(relay.Function([x, w], y))
>>> with relay.transform.PassContext(opt_level=3):
...     out = ConvertLayout({"nn.conv2d": ["NCHW", "default"]})(mod)
>>> body = out["main"].body
>>> body.op.name, body.attrs.src_layout, body.args[0].op.name
('layout_transform', 'NCHW', 'nn.relu')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from relaykit.errors import ArgumentError
from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none
from relaykit.ir.types import TupleType
from relaykit.transform.infer_type import infer_type
from relaykit.transform.legalize import canonicalize_ops
from relaykit.transform.pass_infra import FunctionPass

from .convert_hooks import convert_hook
from .rewrite import LayoutTransformer

__all__ = ["ConvertLayout", "convert_layout"]


def _tinfos(call: Call) -> list[Any]:
    out: list[Any] = []
    for a in call.args:
        ty = checked_type_or_none(a)
        if isinstance(ty, TupleType):
            out.extend(ty.fields)
        else:
            out.append(ty)
    return out


def convert_layout(
    func: Function, desired_layouts: Mapping[str, Sequence[str]], mod: Any = None
) -> Function:
    """``func`` with the operators named in ``desired_layouts`` converted (module docs)."""
    desired = {str(k): [str(v) for v in vs] for k, vs in desired_layouts.items()}

    def hook(call: Call, attrs: Any, args: list[Expr]) -> Expr | None:
        name = call.op.name  # type: ignore[attr-defined]
        if name not in desired:
            return None
        fn = convert_hook(name)
        if fn is None:
            return None
        out = fn(attrs, list(args), _tinfos(call), desired[name])
        if out is None:
            return None
        if not isinstance(out, Call):
            raise ArgumentError(
                f"the FTVMConvertOpLayout hook of {name} returned {type(out).__name__}; it must "
                "return a call (the operator in its new layouts)"
            )
        return out

    func = canonicalize_ops(func)  # type: ignore[assignment]
    infer_type(func, mod)
    return LayoutTransformer(hook).run(func)


class ConvertLayout(FunctionPass):
    """``relay.transform.ConvertLayout(desired_layouts)`` (opt_level 3): see the module docs.

    ``desired_layouts`` maps an operator name to its layouts, data first (``["NCHW",
    "default"]`` for a convolution, ``["NHWC"]`` for a pool)."""

    def __init__(self, desired_layouts: Mapping[str, Sequence[str]]) -> None:
        if not isinstance(desired_layouts, Mapping):
            raise ArgumentError(
                "ConvertLayout takes a dict from operator name to its desired layouts, such "
                f"as {{'nn.conv2d': ['NCHW', 'default']}}, got {type(desired_layouts).__name__}"
            )
        self.desired_layouts = dict(desired_layouts)
        super().__init__(
            lambda fn, mod, ctx: convert_layout(fn, self.desired_layouts, mod),
            opt_level=3,
            name="ConvertLayout",
        )
