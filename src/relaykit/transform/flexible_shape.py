"""``FlexibleShapeDispatch``: one ``main`` for many sizes of one axis, dispatching at run
time to a copy of the function specialised for each size in ``buckets``.

The chosen inputs (``input_indices``, default the first) get a ``?`` at ``axis``. The new
``main`` reads that size from the first of them and calls ``main_<bucket>`` (the body with
those inputs' ``axis`` fixed to the bucket) when the size is a bucket, else
``main_dynamic`` (the body with ``?`` there). With ``auto_pad`` a size between two buckets
is padded (with ``pad_value``) up to the next bucket and, when the axis reaches the output
(``affects_output``), every output is sliced back to the input's size; sizes above the
largest bucket go to ``main_dynamic``. Buckets are taken in ascending order. Run the result
on the VM (``relay.vm.compile``), which executes the dispatch.

>>> import numpy as np
>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(4, 3))
>>> mod = FlexibleShapeDispatch(buckets=[2, 4])(IRModule.from_expr(relay.Function([x], x * x)))
>>> sorted(gv.name_hint for gv in mod.get_global_vars())
['main', 'main_2', 'main_4', 'main_dynamic']
>>> vm = relay.create_executor("vm", mod=mod).evaluate()
>>> vm(np.ones((3, 3), "float32")).shape
(3, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit import op
from relaykit.errors import ArgumentError
from relaykit.ir.expr import Call, Constant, Expr, Function, GlobalVar, If, Tuple, TupleGetItem, Var
from relaykit.ir.module import IRModule
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, TupleType, Type

from .bind import bind
from .infer_type import InferType
from .pass_infra import ModulePass, PassContext

__all__ = ["FlexibleShapeDispatch", "flexible_dispatch", "override_shape", "specialize_body"]


def override_shape(ty: Type, axis: int, dim: Any) -> TensorType:
    """``ty`` (a tensor type) with its ``axis`` set to ``dim`` (an int or ``relay.Any()``)."""
    if not isinstance(ty, TensorType):
        raise ArgumentError(f"FlexibleShapeDispatch dispatches over tensor inputs, got {ty}")
    shape = list(ty.shape)
    if not -len(shape) <= axis < len(shape):
        raise ArgumentError(f"axis {axis} is out of range for the input {ty}")
    shape[axis] = dim
    return TensorType(tuple(shape), ty.dtype)


def _param_type(p: Var) -> Type:
    ty = p.type_annotation if p.type_annotation is not None else getattr(p, "checked_type", None)
    if ty is None:
        raise ArgumentError(f"parameter %{p.name_hint} needs a type annotation to dispatch on")
    return ty


def specialize_body(
    mod: IRModule,
    function: Function,
    axis: int,
    dim: Any,
    input_indices: Sequence[int],
    affects_output: bool = True,
) -> tuple[GlobalVar, IRModule]:
    """Add to ``mod`` a copy of ``function`` whose inputs ``input_indices`` have ``dim`` at
    ``axis`` (``main_<dim>``, or ``main_dynamic`` for ``relay.Any()``); its global var.
    ``affects_output`` is accepted for TVM's signature: the result type is inferred."""
    _ = affects_output
    params = [
        Var(
            p.name_hint,
            override_shape(_param_type(p), axis, dim) if i in input_indices else _param_type(p),
        )
        for i, p in enumerate(function.params)
    ]
    body = bind(function.body, dict(zip(function.params, params, strict=True)))
    name = "main_dynamic" if isinstance(dim, AnyDim) else f"main_{int(dim)}"
    gv = GlobalVar(name)
    mod[gv] = Function(params, body)
    return mod.get_global_var(name), mod


def _int(value: int, dtype: str) -> Constant:
    return Constant(np.array(value, dtype=dtype))


def _padded(inp: Var, rank: int, axis: int, missing: Expr, pad_value: Any) -> Expr:
    """``inp`` padded at the end of ``axis`` by ``missing`` elements."""
    where = np.zeros((rank, 2), dtype="int64")
    where[axis, 1] = 1
    widths = op.multiply(Constant(where), op.reshape(op.cast(missing, "int64"), [1, 1]))
    return op.nn.pad(inp, widths, pad_value)


def _cut(value: Expr, ty: Type, axis: int, size: Expr) -> Expr:
    """Each output of ``value`` (of type ``ty``) sliced to ``size`` along ``axis``."""
    if isinstance(ty, TupleType):
        return Tuple([_cut(TupleGetItem(value, i), f, axis, size) for i, f in enumerate(ty.fields)])
    assert isinstance(ty, TensorType)
    rank = ty.ndim
    mask = Constant(np.arange(rank) == (axis % rank))
    sizes = op.where(mask, op.cast(size, "int64"), Constant(np.full((rank,), -1, "int64")))
    return op.strided_slice(value, Constant(np.zeros(rank, "int64")), sizes, slice_mode="size")


def flexible_dispatch(
    mod: IRModule,
    buckets: Sequence[int],
    axis: int = 0,
    auto_pad: bool = False,
    pad_value: Any = 0,
    input_indices: Sequence[int] | None = None,
    affects_output: bool = True,
) -> IRModule:
    """``mod`` whose ``main`` dispatches over the size of ``axis`` (see the module doc)."""
    if not buckets:
        raise ArgumentError("FlexibleShapeDispatch needs at least one bucket size")
    buckets = sorted(int(b) for b in buckets)
    indices = list(input_indices) if input_indices is not None else [0]
    mod = InferType()(mod)
    main = mod["main"]
    if any(not 0 <= i < len(main.params) for i in indices):
        raise ArgumentError(f"input_indices {indices} name inputs main does not have")
    dyn = [
        Var(
            p.name_hint,
            override_shape(_param_type(p), axis, AnyDim()) if i in indices else _param_type(p),
        )
        for i, p in enumerate(main.params)
    ]
    first = dyn[indices[0]]
    rank = len(_param_type(first).shape)  # type: ignore[attr-defined]
    size = op.take(op.shape_of(first, "int64"), _int(axis % rank, "int64"))
    out_type = main.checked_type.ret_type  # type: ignore[attr-defined]
    default, mod = specialize_body(mod, main, axis, AnyDim(), indices, affects_output)
    result: Expr = Call(default, list(dyn))
    for i in reversed(range(len(buckets))):
        bucket = buckets[i]
        target, mod = specialize_body(mod, main, axis, bucket, indices, affects_output)
        if not auto_pad:
            cond = op.equal(size, _int(bucket, "int64"))
            result = If(cond, Call(target, list(dyn)), result)
            continue
        cond = op.less_equal(size, _int(bucket, "int64"))
        if i > 0:
            cond = op.logical_and(cond, op.greater(size, _int(buckets[i - 1], "int64")))
        missing = op.subtract(_int(bucket, "int64"), size)
        args = [
            _padded(v, rank, axis % rank, missing, pad_value) if j in indices else v
            for j, v in enumerate(dyn)
        ]
        call: Expr = Call(target, args)
        if affects_output:
            call = _cut(call, out_type, axis, size)
        result = If(cond, call, result)
    mod["main"] = Function(dyn, result)
    return InferType()(mod)


class FlexibleShapeDispatch(ModulePass):
    """``relay.transform.FlexibleShapeDispatch(buckets, axis=0, auto_pad=False, pad_value=0,
    input_indices=None, affects_output=True)`` (opt_level 0)."""

    def __init__(
        self,
        buckets: Sequence[int],
        axis: int = 0,
        auto_pad: bool = False,
        pad_value: Any = 0,
        input_indices: Sequence[int] | None = None,
        affects_output: bool = True,
    ) -> None:
        options = (list(buckets), axis, auto_pad, pad_value, input_indices, affects_output)

        def run(mod: IRModule, ctx: PassContext) -> IRModule:
            return flexible_dispatch(mod.copy(), *options)

        super().__init__(run, opt_level=0, name="FlexibleShapeDispatch")
