"""``AlterOpLayout``: let each operator's ``FTVMAlterOpLayout`` hook pick its layouts
(a blocked ``NCHW16c`` convolution, a packed dense), and carry the new layouts on.

The hook gets ``(attrs, inputs, tinfos, out_type)`` and returns a replacement call or
``None``. As in ``ConvertLayout``, the operators after it follow the new layout where
their layout rule allows, and ``layout_transform`` calls are put where a value must
change layout; an operator with a hook but no layout rule is replaced as it is. The
hooks are registered with ``relay.op.register_alter_op_layout`` (or, for a ``with``
block, ``relay.testing.temp_op_attr.TempOpAttr``).

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> from relaykit.testing.temp_op_attr import TempOpAttr
>>> x = relay.var("x", shape=(1, 8, 4, 4))
>>> w = relay.var("w", shape=(8, 8, 3, 3))
>>> y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)))
>>> def blocked(attrs, inputs, tinfos, out_type):
...     return relay.nn.conv2d(*inputs, **{**dict(attrs), "data_layout": "NCHW4c"})
>>> with TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", blocked):
...     with relay.transform.PassContext(opt_level=3):
...         body = AlterOpLayout()(IRModule.from_expr(relay.Function([x, w], y)))["main"].body
>>> body.attrs.src_layout, body.args[0].op.name
('NCHW4c', 'nn.relu')
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none
from relaykit.ir.op import default_registry
from relaykit.transform.infer_type import infer_type
from relaykit.transform.pass_infra import FunctionPass

from .rewrite import LayoutTransformer

__all__ = ["AlterOpLayout", "alter_op_layout"]


def _alter_hook(name: str) -> Any:
    fn = default_registry.get_attr(name, "FTVMAlterOpLayout")
    return fn if callable(fn) else None


def alter_op_layout(func: Function, mod: Any = None) -> Function:
    """``func`` with each operator's ``FTVMAlterOpLayout`` hook applied (module docs)."""
    if not default_registry.attr_table("FTVMAlterOpLayout"):
        return func
    infer_type(func, mod)

    def hook(call: Call, attrs: Any, args: list[Expr]) -> Expr | None:
        fn = _alter_hook(call.op.name)  # type: ignore[attr-defined]
        if fn is None:
            return None
        tinfos = [checked_type_or_none(a) for a in call.args]
        out = fn(attrs, list(args), tinfos, checked_type_or_none(call))
        return out if isinstance(out, Expr) else None

    transformer = LayoutTransformer(
        hook, has_hook=lambda name: _alter_hook(name) is not None, alter_mode=True
    )
    return transformer.run(func)


class AlterOpLayout(FunctionPass):
    """``relay.transform.AlterOpLayout()`` (opt_level 3): see the module docs."""

    def __init__(self) -> None:
        super().__init__(
            lambda fn, mod, ctx: alter_op_layout(fn, mod),
            opt_level=3,
            name="AlterOpLayout",
        )
