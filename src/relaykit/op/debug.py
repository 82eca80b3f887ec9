"""``debug``: an identity that calls a Python function with its value when it runs
(TVM's ``relay.op.debug``), to look inside a program while the interpreter evaluates it.

The function gets the value as an :class:`~relaykit.runtime.NDArray` (its result is
ignored). The operator is stateful, so constant folding and common-subexpression
elimination leave it in place.

>>> import numpy as np
>>> from relaykit import relay
>>> seen = []
>>> x = relay.var("x", shape=(2,))
>>> f = relay.Function([x], debug(x * x, debug_func=lambda v: seen.append(v.numpy().tolist())))
>>> relay.create_executor("debug").evaluate(f)(np.array([1.0, 3.0], "float32")).numpy().tolist()
[1.0, 9.0]
>>> seen
[[1.0, 9.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import Type
from relaykit.runtime.ndarray import NDArray

from .define import OpPattern, TypeRelError, define_op, make_call
from .op import register_stateful

__all__ = ["debug"]


def _debug_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    if len(arg_types) != 1:
        raise TypeRelError(f"debug takes 1 input, got {len(arg_types)}")
    return arg_types[0]


def _debug_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> Any:
    value = inputs[0]
    func = attrs.debug_func
    if func is not None:
        func(NDArray(np.asarray(value)) if isinstance(value, np.ndarray | np.generic) else value)
    return value


define_op(
    "debug",
    num_inputs=1,
    attrs={"debug_func": None},
    attrs_type_key="relay.attrs.DebugAttrs",
    type_rel=_debug_rel,
    compute=_debug_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Identity calling debug_func(value) when evaluated.",
)
register_stateful("debug", True)


def debug(expr: Expr, debug_func: Callable[[Any], Any] | None = None) -> Call:
    """``expr``, with ``debug_func(value)`` called each time it is evaluated."""
    if debug_func is not None and not callable(debug_func):
        raise ArgumentError(f"debug_func must be callable, got {debug_func!r}")
    return make_call("debug", [expr], debug_func=debug_func)
