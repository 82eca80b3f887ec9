"""The machinery of the dynamic operators: registration, rank helpers, static folds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant
from relaykit.ir.op import default_registry
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import Type
from relaykit.op._relations import INT_DTYPES, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_attrs, make_call
from relaykit.op.shape_func import define_shape_func, output_shapes

__all__ = [
    "DYN_OPS",
    "Converter",
    "define_dyn_op",
    "define_kernel_op",
    "kernel_shapes",
    "Kernel",
    "ints",
    "scalar_int",
    "shape_input",
    "static_equivalent",
    "unknown",
]

#: dyn op name -> (static op name, converter from the dyn call's input values and attrs to
#: (static inputs, static attrs)). The converters are all of a dyn op's semantics.
Converter = Callable[[Sequence[np.ndarray], Attrs], tuple[list[np.ndarray], dict[str, Any]]]
DYN_OPS: dict[str, tuple[str, Converter, tuple[int, ...]]] = {}
#: A NumPy kernel: input values and attributes -> the output (a tuple for several).
Kernel = Callable[[Sequence[np.ndarray], Attrs], Any]


def ints(v: np.ndarray) -> tuple[int, ...]:
    return tuple(int(x) for x in np.asarray(v).reshape(-1))


def shape_input(arg_types: Sequence[Type], i: int, what: str) -> int:
    """The static length of the 1-D integer input ``i`` (a shape, axes or reps vector)."""
    t = tensor_arg(arg_types, i, what)
    if t.dtype not in INT_DTYPES or t.ndim > 1:
        raise TypeRelError(f"{what} must be a 1-D integer tensor, got {t}")
    n = t.shape[0] if t.ndim == 1 else 1
    if not isinstance(n, int):
        raise TypeRelError(
            f"{what} {t} must have a static length: it decides the rank of the result"
        )
    return n


def scalar_int(arg_types: Sequence[Type], i: int, what: str) -> None:
    """Input ``i`` must be an integer scalar (or a 1-element vector)."""
    t = tensor_arg(arg_types, i, what)
    if t.dtype not in INT_DTYPES or t.ndim > 1 or (t.ndim == 1 and t.shape[0] != 1):
        raise TypeRelError(f"{what} must be an integer scalar, got {t}")


def unknown(rank: int) -> tuple[AnyDim, ...]:
    return tuple(AnyDim() for _ in range(rank))


def kernel_shapes(kernel: Kernel) -> Callable[[Attrs, Sequence[Any]], list[tuple[int, ...]]]:
    """A data-dependent shape function that runs ``kernel`` on the input values."""

    def shapes(call_attrs: Attrs, inputs: Sequence[Any]) -> list[tuple[int, ...]]:
        out = kernel([np.asarray(v) for v in inputs], call_attrs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [tuple(np.shape(o)) for o in outs]

    return shapes


def _register(
    name: str,
    num_inputs: int,
    type_rel: Callable[[Sequence[Type], Attrs], Type],
    kernel: Kernel,
    shapes: Callable[[Attrs, Sequence[Any]], list[tuple[int, ...]]],
    attrs: dict[str, Any] | None,
    doc: str,
) -> None:
    """Define the opaque op ``name`` with ``kernel`` and a data-dependent shape function."""
    define_op(
        name,
        num_inputs=num_inputs,
        attrs=attrs or {},
        type_rel=type_rel,
        compute=kernel,
        pattern=OpPattern.OPAQUE,
        doc=doc,
    )

    define_shape_func(name, data_dependent=True)(shapes)


def define_kernel_op(
    name: str,
    num_inputs: int,
    type_rel: Callable[[Sequence[Type], Attrs], Type],
    kernel: Kernel,
    attrs: dict[str, Any] | None = None,
    doc: str = "",
) -> None:
    """Register a dynamic operator computed by a NumPy ``kernel``; its data-dependent shape
    function runs the kernel (its output shapes are what the values make them)."""

    _register(name, num_inputs, type_rel, kernel, kernel_shapes(kernel), attrs, doc)


def define_dyn_op(
    name: str,
    static: str,
    num_inputs: int,
    type_rel: Callable[[Sequence[Type], Attrs], Type],
    convert: Converter,
    attrs: dict[str, Any] | None = None,
    value_inputs: tuple[int, ...] = (),
    doc: str = "",
) -> None:
    """Register ``dyn.X``: its relation, a kernel and a data-dependent shape function that
    both run the static op ``static`` on ``convert(values, attrs)``. ``value_inputs`` are
    the inputs a constant fold (DynamicToStatic) needs as constants."""

    def kernel(ins: Sequence[np.ndarray], call_attrs: Attrs) -> Any:
        sins, sattrs = convert(ins, call_attrs)
        op = default_registry.get(static)
        return op.get_attr("FCompute")(sins, make_attrs(op, sattrs))

    def shapes(call_attrs: Attrs, values: Sequence[Any]) -> list[tuple[int, ...]]:
        sins, sattrs = convert([np.asarray(v) for v in values], call_attrs)
        return output_shapes(static, sattrs, list(sins))

    doc = doc or f"{static} with run-time {', '.join(map(str, value_inputs))} inputs."
    _register(name, num_inputs, type_rel, kernel, shapes, attrs, doc)
    DYN_OPS[name] = (static, convert, value_inputs)


def static_equivalent(call: Call) -> Call | None:
    """The static call a ``dyn.X`` call folds to when its value inputs are constants
    (``None`` otherwise): ``dyn.reshape(x, const([2, 3]))`` -> ``reshape(x, (2, 3))``."""
    entry = DYN_OPS.get(getattr(call.op, "name", ""))
    if entry is None:
        return None
    static, convert, value_inputs = entry
    if not all(isinstance(call.args[i], Constant) for i in value_inputs):
        return None
    values: list[Any] = []
    for i, a in enumerate(call.args):
        values.append(a.data.numpy() if i in value_inputs else a)  # type: ignore[attr-defined]
    sins, sattrs = convert(values, call.attrs)
    return make_call(static, list(sins), **sattrs)
