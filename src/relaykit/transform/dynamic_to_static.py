"""``DynamicToStatic``: dynamic operators whose shape-like inputs are constants become
their static twins (TVM's ``relay.transform.DynamicToStatic``, opt_level 3).

``dyn.reshape(x, const([2, 3]))`` becomes ``reshape(x, newshape=(2, 3))``, and likewise
for every ``relay.op.dyn`` operator and ``dyn.arange``; ``shape_of`` / ``ndarray_size`` of
a tensor whose type is static become constants. Constant folding runs between rounds, so
a shape computed from constants (or from ``shape_of`` of a static tensor) folds too, until
nothing changes. The result's types are static wherever the inputs' are, so a model the
importer wrote with dynamic operators can still be built for the graph executor.

>>> import numpy as np
>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2, 6))
>>> shape = relay.shape_of(relay.zeros((3, 4), "float32"))
>>> mod = IRModule.from_expr(relay.Function([x], relay.reshape(x, shape)))
>>> mod["main"].body.op.name
'dyn.reshape'
>>> out = DynamicToStatic()(mod)["main"]
>>> out.body.op.name, out.body.checked_type
('reshape', TensorType((3, 4), float32))
"""

from __future__ import annotations

import numpy as np

from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none, const
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType
from relaykit.op.dyn import DYN_OPS, static_equivalent

from .fold_constant import fold_constant, max_fold_bytes, max_fold_macs, rewrite_outside_opaque
from .infer_type import infer_module
from .pass_infra import FunctionPass, PassContext

__all__ = ["DynamicToStatic", "dynamic_to_static"]

_MAX_ROUNDS = 32
_CANDIDATES: set[str] = {"shape_of", "ndarray_size"}


def _static_shape_value(call: Call, old: Call) -> Expr | None:
    """``shape_of(x)`` / ``ndarray_size(x)`` as a constant when ``x``'s type is static."""
    name = getattr(call.op, "name", "")
    if name not in ("shape_of", "ndarray_size"):
        return None
    t = checked_type_or_none(old.args[0])
    if not isinstance(t, TensorType) or not t.is_static:
        return None
    dtype = call.attrs.dtype or "int32"
    if name == "shape_of":
        return const(np.array(t.shape, dtype=dtype))
    return const(np.array(int(np.prod(t.shape)), dtype=dtype))


def _one_round(fn: Function) -> tuple[Function, int]:
    changed = 0

    def post(new: Expr, old: Expr) -> Expr | None:
        nonlocal changed
        if type(new) is not Call or not isinstance(new.op, Op):
            return None
        out: Expr | None = static_equivalent(new)
        if out is None:
            out = _static_shape_value(new, old)  # type: ignore[arg-type]
        if out is not None:
            changed += 1
        return out

    out = rewrite_outside_opaque(fn, post)
    return (out if isinstance(out, Function) else fn), changed


_SCRATCH = "__dynamic_to_static__"


def _typed(fn: Function, mod: IRModule | None) -> Function:
    """``fn`` type-checked in (a copy of) ``mod``, so calls of its globals resolve."""
    scratch = IRModule() if mod is None else mod.copy()
    scratch[_SCRATCH] = fn
    infer_module(scratch)
    return scratch[_SCRATCH]


def _has_candidates(fn: Function) -> bool:
    for node in post_order(fn):
        if type(node) is Call and isinstance(node.op, Op) and node.op.name in _CANDIDATES:
            return True
    return False


def dynamic_to_static(fn: Function, mod: IRModule | None = None) -> Function:
    """``fn`` with every foldable dynamic operator made static (see the module doc); a
    function without dynamic operators is returned as it is, without re-inference."""
    _CANDIDATES.update(DYN_OPS)
    if not _has_candidates(fn):
        return fn
    for _ in range(_MAX_ROUNDS):
        folded = fold_constant(_typed(fn, mod), mod, max_fold_bytes(), max_fold_macs())
        fn = folded if isinstance(folded, Function) else fn
        fn, changed = _one_round(_typed(fn, mod))
        if not changed:
            break
    return _typed(fn, mod)


class DynamicToStatic(FunctionPass):
    """``relay.transform.DynamicToStatic()``; part of the standard pipeline."""

    def __init__(self) -> None:
        # TVM registers it at opt_level 3; relaykit runs it at 2 (relay.build's default)
        # because the graph executor can only run the static result.
        super().__init__(self._transform, opt_level=2, name="DynamicToStatic")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        return dynamic_to_static(fn, mod)
