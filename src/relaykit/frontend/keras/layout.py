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

from relaykit.ir.expr import Constant, Expr, Function, Var
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType
from relaykit.runtime.ndarray import NDArray
from relaykit.transform.fold_constant import FoldConstant
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


def to_channels_first(mod: IRModule) -> IRModule:
    """``mod`` (channels-last inside) with its convolutions in NCHW / NCDHW, the
    transposes between them removed and the weights' transposes folded."""
    passes = Sequential(
        [InferType(), ConvertLayout(_CHANNELS_FIRST), SimplifyExpr(), FoldConstant(), InferType()]
    )
    with PassContext(opt_level=3):
        return passes(mod)


def lift_params(
    mod: IRModule, names: Mapping[Constant, str]
) -> tuple[IRModule, dict[str, NDArray]]:
    """``main`` with each constant of more than one element made a parameter (named
    ``names[c]`` when the constant is a layer's weight as it was read, else
    ``_param_<n>``), and the values of those parameters."""
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
