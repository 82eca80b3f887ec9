"""The machinery of the dynamic operators: their one registration helper
(:func:`define_dyn_op`), rank helpers and the folds back to static twins."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant
from relaykit.ir.op import default_registry
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import Type
from relaykit.op._relations import INT_DTYPES, tensor_arg
from relaykit.op.define import (
    OpPattern,
    TypeRelError,
    caller_module,
    define_op,
    make_attrs,
    make_call,
)
from relaykit.op.shape_func import define_shape_func, output_shapes

__all__ = [
    "DYN_OPS",
    "Converter",
    "define_dyn_op",
    "kernel_shapes",
    "Kernel",
    "ints",
    "scalar_int",
    "shape_input",
    "static_equivalent",
    "static_kernel",
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


def static_kernel(static: str, convert: Converter) -> Kernel:
    """The kernel of a ``dyn.X`` whose static twin is ``static``: ``static``'s kernel run
    on ``convert(values, attrs)``."""

    def kernel(ins: Sequence[np.ndarray], call_attrs: Attrs) -> Any:
        sins, sattrs = convert(ins, call_attrs)
        op = default_registry.get(static)
        return op.get_attr("FCompute")(sins, make_attrs(op, sattrs))

    return kernel


def _static_shapes(
    static: str, convert: Converter
) -> Callable[[Attrs, Sequence[Any]], list[tuple[int, ...]]]:
    """A data-dependent shape function: ``static``'s output shapes for the converted values."""

    def shapes(call_attrs: Attrs, values: Sequence[Any]) -> list[tuple[int, ...]]:
        sins, sattrs = convert([np.asarray(v) for v in values], call_attrs)
        return output_shapes(static, sattrs, list(sins))

    return shapes


def define_dyn_op(
    name: str,
    num_inputs: int,
    type_rel: Callable[[Sequence[Type], Attrs], Type],
    *,
    static: str | None = None,
    convert: Converter | None = None,
    kernel: Kernel | None = None,
    attrs: dict[str, Any] | None = None,
    attrs_type_key: str = "DictAttrs",
    value_inputs: tuple[int, ...] = (),
    data_dependent: bool = True,
    doc: str = "",
) -> None:
    """Register the dynamic operator ``name``, an opaque op with its type relation, a
    kernel and (``data_dependent``) a data-dependent shape function, from either

    * a static twin: ``static`` (the op ``X`` of ``dyn.X``) and ``convert`` from the
      call's input values and attributes to ``static``'s inputs and attributes; the
      kernel and the shape function run ``static``, and the call folds back to
      ``static`` when its ``value_inputs`` are constants (:func:`static_equivalent`,
      DynamicToStatic); or
    * a ``kernel``: a NumPy function whose output shapes are the shape function.

    Given both, ``kernel`` computes and the fold to ``static`` stays. With
    ``data_dependent=False`` the shape function is left to the type relation.
    The operator is recorded as defined in the caller's module.
    """
    if (static is None) != (convert is None):
        raise ArgumentError(f"{name}: a static twin needs both static= and convert=")
    if kernel is not None:
        compute, shapes = kernel, kernel_shapes(kernel)
    elif static is not None and convert is not None:
        compute, shapes = static_kernel(static, convert), _static_shapes(static, convert)
        doc = doc or f"{static} with run-time {', '.join(map(str, value_inputs))} inputs."
    else:
        raise ArgumentError(f"{name}: give a static twin (static=, convert=) or a kernel")
    define_op(
        name,
        num_inputs=num_inputs,
        attrs=attrs or {},
        attrs_type_key=attrs_type_key,
        type_rel=type_rel,
        compute=compute,
        pattern=OpPattern.OPAQUE,
        doc=doc,
        module=caller_module(),
    )
    if data_dependent:
        define_shape_func(name, data_dependent=True)(shapes)
    if static is not None and convert is not None:
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
