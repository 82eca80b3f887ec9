"""``tvm.relay.op.op``: defining operators and setting their attributes, TVM's way.

A new operator is registered by name, then described on its :class:`Op`
(``set_num_inputs``, ``add_argument``, ``add_type_rel``); its kernel is a NumPy
function (relaykit has no tensor expressions). Each ``register_*`` function sets
one attribute table entry, as TVM's do; the passes that read those attributes
(legalisation, layout changes, gradients...) find them there.

>>> import numpy as np
>>> from relaykit.ir.op import default_registry
>>> with default_registry.scoped():
...     op = register("demo.twice", "double the input")
...     op.set_num_inputs(1)
...     op.add_type_rel("Identity")
...     _ = register_compute("demo.twice", lambda attrs, inputs, out_type: [inputs[0] * 2])
...     register_pattern("demo.twice", OpPattern.ELEMWISE)
...     get("demo.twice").get_attr("TOpPattern")
0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.errors import IRError
from relaykit.ir.attrs import Attrs
from relaykit.ir.op import Op, default_registry, get_op, named_type_relations, register_op_attr

from ._relations import broadcast_rel, identity_rel, make_broadcast_rel
from .define import OpPattern

__all__ = [
    "get",
    "register",
    "register_stateful",
    "register_pattern",
    "register_compute",
    "register_injective_schedule",
    "register_broadcast_schedule",
    "register_reduce_schedule",
    "register_alter_op_layout",
    "register_convert_op_layout",
    "register_infer_correct_layout",
    "register_legalize",
    "register_shape_func",
    "register_gradient",
    "register_mixed_precision_conversion",
    "OpPattern",
]

get = get_op

for _name, _rel in (
    ("Identity", identity_rel),
    ("Broadcast", broadcast_rel),
    ("BroadcastComp", make_broadcast_rel(out_dtype="bool")),
):
    if _name not in named_type_relations:
        named_type_relations.register(_name, _rel)


def register(op_name: str, describe: str = "") -> Op:
    """Register a new operator ``op_name``; describe it on the returned Op. Registering
    a name twice is an error, as in TVM."""
    if op_name in default_registry:
        raise IRError(
            f"operator {op_name} is registered before; set its attributes with "
            f"tvm.ir.register_op_attr({op_name!r}, key, value) instead"
        )
    op = default_registry.register(op_name)
    if describe:
        op.set_attr("doc", describe)
    return op


def _setter(key: str) -> Callable[..., Any]:
    def register_attr(op_name: str, value: Any = None, level: int = 10) -> Any:
        return register_op_attr(op_name, key, value, level)

    register_attr.__name__ = f"register_{key}"
    register_attr.__doc__ = f"Set the ``{key}`` attribute of an operator (decorator or value)."
    return register_attr


def register_stateful(op_name: str, stateful: bool, level: int = 10) -> None:
    """Whether the operator has side effects (``TOpIsStateful``)."""
    register_op_attr(op_name, "TOpIsStateful", bool(stateful), level)


def register_pattern(op_name: str, pattern: int, level: int = 10) -> None:
    """The operator's fusion pattern (``TOpPattern``, an :class:`OpPattern`)."""
    register_op_attr(op_name, "TOpPattern", int(pattern), level)


def register_compute(
    op_name: str, compute: Callable[..., Any] | None = None, level: int = 10
) -> Any:
    """The operator's kernel. relaykit's kernels are NumPy functions:
    ``compute(attrs, inputs, out_type)`` gets NumPy arrays and returns an array or a
    list of arrays (TVM passes tensor expressions instead)."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> Any:
            out = fn(attrs, list(inputs), None)
            if isinstance(out, (list, tuple)) and len(out) == 1:
                return out[0]
            return tuple(out) if isinstance(out, list) else out

        register_op_attr(op_name, "FCompute", kernel, level)
        return fn

    return wrap if compute is None else wrap(compute)


def _schedule(kind: str) -> Callable[..., None]:
    def register_schedule(op_name: str, level: int = 10) -> None:
        register_op_attr(op_name, "FTVMSchedule", kind, level)

    register_schedule.__name__ = f"register_{kind}_schedule"
    register_schedule.__doc__ = (
        f"Record that the operator is scheduled as {kind} (relaykit's NumPy kernels need "
        "no schedule; the kind is kept for tools that read it)."
    )
    return register_schedule


register_injective_schedule = _schedule("injective")
register_broadcast_schedule = _schedule("broadcast")
register_reduce_schedule = _schedule("reduce")
register_alter_op_layout = _setter("FTVMAlterOpLayout")
register_convert_op_layout = _setter("FTVMConvertOpLayout")
register_infer_correct_layout = _setter("FInferCorrectLayout")
register_legalize = _setter("FTVMLegalize")
register_gradient = _setter("FPrimalGradient")
register_mixed_precision_conversion = _setter("FTVMMixedPrecisionConversionType")


def register_shape_func(
    op_name: str,
    data_dependent: bool,
    shape_func: Callable[..., Any] | None = None,
    level: int = 10,
) -> Any:
    """The operator's shape function (``FShapeFunc``) and whether it reads input values."""
    register_op_attr(op_name, "TShapeDataDependent", bool(data_dependent), level)
    return register_op_attr(op_name, "FShapeFunc", shape_func, level)
