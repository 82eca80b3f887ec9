"""``Legalize`` and ``AlterOpLayout``: rewrite operator calls through per-op hooks.

Both passes visit every call of an operator that has the hook registered
(``relay.op.register_legalize(name, fn)`` / ``register_alter_op_layout``) and
replace the call by what the hook returns (``None`` keeps it):

``FTVMLegalize``
    ``fn(attrs, inputs, types)``: ``types`` are the inputs' types followed by the
    call's own type (TVM's signature).
``FTVMAlterOpLayout``
    ``fn(attrs, inputs, tinfos, out_type)``: ``tinfos`` describe the inputs (relaykit
    gives their ``TensorType``, which has ``shape`` and ``dtype`` as TVM's placeholders
    do). relaykit does not propagate layouts afterwards: a hook that changes an
    operator's output layout must transform it back itself (``layout_transform``).

With no hooks registered the passes change nothing (as TVM on a target with no
layout-specific kernels).

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(4,))
>>> mod = IRModule.from_expr(relay.Function([x], relay.negative(x)))
>>> str(Legalize()(mod)["main"].body.op.name)
'negative'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op

from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["Legalize", "AlterOpLayout", "apply_op_hook"]

Hook = Callable[[Call, list[Any]], Any]


def apply_op_hook(expr: Expr, attr_name: str, call_hook: Hook, mod: IRModule | None = None) -> Expr:
    """``expr`` with each call of an operator having ``attr_name`` replaced by
    ``call_hook(call, types)`` when that returns an expression. ``types`` are the
    original call's argument types and its own type (inferred first)."""
    infer_type(expr, mod)

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is not Call or type(new.op) is not Op:
            return None
        hook = new.op.get_attr(attr_name)
        if hook is None:
            return None
        types = [checked_type_or_none(a) for a in (*old.args, old)]  # type: ignore[attr-defined]
        out = call_hook(new, [hook, *types])
        if out is None:
            return None
        if not isinstance(out, Expr):
            raise IRError(
                f"the {attr_name} hook of {new.op.name} returned {type(out).__name__}; "
                "it must return a relay expression or None"
            )
        return out

    return rewrite_post_order(expr, post)


def _legalize(call: Call, hook_and_types: list[Any]) -> Any:
    hook, *types = hook_and_types
    return hook(call.attrs, list(call.args), types)


def _alter(call: Call, hook_and_types: list[Any]) -> Any:
    hook, *types = hook_and_types
    return hook(call.attrs, list(call.args), types[:-1], types[-1])


class _HookPass(FunctionPass):
    def __init__(self, attr_name: str, call_hook: Hook, opt_level: int, name: str) -> None:
        self._attr_name, self._call_hook = attr_name, call_hook
        super().__init__(self._transform_fn, opt_level=opt_level, name=name)

    def _transform_fn(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = apply_op_hook(fn, self._attr_name, self._call_hook, mod)
        return out if isinstance(out, Function) else fn


class Legalize(_HookPass):
    """``relay.transform.Legalize(legalize_map_attr_name="FTVMLegalize")`` (opt_level 0):
    replace calls by what their operator's legalize hook returns."""

    def __init__(self, legalize_map_attr_name: str = "FTVMLegalize") -> None:
        super().__init__(legalize_map_attr_name, _legalize, 0, "Legalize")


class AlterOpLayout(_HookPass):
    """``relay.transform.AlterOpLayout()`` (opt_level 3): replace calls by what their
    operator's ``FTVMAlterOpLayout`` hook returns (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__("FTVMAlterOpLayout", _alter, 3, "AlterOpLayout")
