"""The model's layout, and its weights as ``params``.

Converters build the model as Keras computes it, channels last. With TVM's default
``layout="NCHW"``, :func:`to_channels_first` turns the convolutions (and what the
layout passes carry along with them: pooling, normalisation, elementwise ops) into
NCHW, the layout relaykit's kernels are fastest in, and folds the weights'
transposes. :func:`lift_params` then makes every weight a parameter of ``main``, as
TVM's frontend returns them.
"""

from __future__ import annotations

from collections.abc import Mapping

from relaykit.ir.expr import Call, Constant, Expr, Function, Var
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType
from relaykit.runtime.ndarray import NDArray
from relaykit.transform.fold_constant import DEFAULT_MAX_FOLD_BYTES, FoldConstant, fold_constant
from relaykit.transform.infer_type import InferType
from relaykit.transform.layout import ConvertLayout
from relaykit.transform.pass_infra import PassContext, Sequential
from relaykit.transform.simplify_expr import SimplifyExpr

__all__ = ["lift_params", "to_channels_first"]

_CHANNELS_FIRST = {
    "nn.conv2d": ["NCHW", "default"],
    "nn.conv2d_transpose": ["NCHW", "default"],
    "nn.conv3d": ["NCDHW", "default"],
    "nn.conv3d_transpose": ["NCDHW", "default"],
}


def to_channels_first(mod: IRModule, names: dict[Constant, str]) -> IRModule:
    """``mod`` (channels-last inside) with its convolutions in NCHW / NCDHW, the
    transposes between them removed and the weights' transposes folded. A weight
    folded into a new layout keeps its name in ``names`` (updated in place)."""
    largest = max((int(c.data.numpy().nbytes) for c in names), default=0)
    config = {"relay.FoldConstant.max_bytes": max(DEFAULT_MAX_FOLD_BYTES, 2 * largest)}
    with PassContext(opt_level=3, config=config):
        mod = Sequential([InferType(), ConvertLayout(_CHANNELS_FIRST), SimplifyExpr()])(mod)
        mod = _fold_weights(mod, names)
        return Sequential([FoldConstant(), InferType()])(mod)


def _fold_weights(mod: IRModule, names: dict[Constant, str]) -> IRModule:
    """Fold each call on weights alone (a kernel's layout transform), the result named
    as the weight was."""
    main = mod["main"]
    if not isinstance(main, Function):
        return mod

    def fold(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(new, Call) or not new.args:
            return None
        if not all(isinstance(a, Constant) for a in new.args):
            return None
        named = [names[a] for a in new.args if isinstance(a, Constant) and a in names]
        if not named:
            return None
        folded = fold_constant(new)
        if isinstance(folded, Constant):
            names[folded] = named[0]
            return folded
        return None

    body = rewrite_post_order(main.body, fold)
    return InferType()(IRModule.from_expr(main.with_fields(body=body)))


def lift_params(
    mod: IRModule, names: Mapping[Constant, str]
) -> tuple[IRModule, dict[str, NDArray]]:
    """``main`` with each constant of more than one element made a parameter (named
    ``names[c]`` when the constant is a layer's weight, else ``_param_<n>``), and the
    values of those parameters."""
    main = mod["main"]
    if not isinstance(main, Function):
        return mod, {}
    params: dict[str, NDArray] = {}
    new_vars: list[Var] = []
    taken = {p.name_hint for p in main.params}

    def lift(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(old, Constant) or int(old.data.numpy().size) <= 1:
            return None
        name = names.get(old) or f"_param_{len(new_vars)}"
        base, k = name, 1
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        var = Var(name, TensorType(old.data.shape, old.data.dtype))
        params[name] = old.data
        new_vars.append(var)
        return var

    body = rewrite_post_order(main.body, lift)
    func = Function([*main.params, *new_vars], body, main.ret_type)
    return InferType()(IRModule.from_expr(func)), params
