"""The weight of a convolution, as TVM's convolution relations see it: the weight an
unannotated ``relay.var("w")`` gets from the data, ``channels=`` and ``kernel_size=``
(for ``nn.conv1d``/``conv2d``/``conv3d`` and their transposes), and the depthwise weight
with a channel multiplier.

TVM takes two weights for a depthwise convolution of ``C`` input channels
(``groups == C``) with ``M`` outputs per channel: the grouped one, ``(C*M, 1, *K)`` in
``OI...`` order, and ``(C, M, *K)``, where output channel ``c*M + m`` applies
``weight[c, m]``. Both hold the taps in the same order, so the second is a reshape of
the first; :func:`depthwise_multiplier` recognises it and :func:`grouped_weight` gives
the kernels the grouped form.

>>> from relaykit.ir.attrs import Attrs
>>> from relaykit.ir.types import IncompleteType, TensorType
>>> attrs = Attrs({"channels": 2, "kernel_size": (3,), "groups": 1,
...                "data_layout": "NCW", "kernel_layout": "OIW"})
>>> solve = conv_weight_solver("nn.conv1d", "NCW", "OIW")
>>> str(solve([TensorType((1, 10, 224)), IncompleteType()], attrs)[1])
'Tensor[(2, 10, 3), float32]'
>>> depthwise_multiplier(4, 4, 2, groups=4, channels=8)
2
>>> grouped_weight(np.zeros((4, 2, 3, 3)), 4, 4, 8).shape
(8, 1, 3, 3)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, checked_type_or_none
from relaykit.ir.types import IncompleteType, TensorType, Type
from relaykit.op._relations import static
from relaykit.op.define import TypeRelError

from .geometry import canonical_shape, to_layout
from .operands import Solved, fill_input, known_data

__all__ = [
    "MULTIPLIER_DECLINE",
    "conv_weight_solver",
    "depthwise_multiplier",
    "grouped_weight",
    "has_multiplier_weight",
]

#: Why a backend that takes grouped weights only declines :func:`has_multiplier_weight`.
MULTIPLIER_DECLINE = (
    "TVM's depthwise weight with a channel multiplier (C, M, ...): this backend takes the "
    "grouped weight (C*M, 1, ...)"
)


def depthwise_multiplier(c: Any, o: Any, i: Any, groups: Any, channels: Any) -> int | None:
    """``M`` when a weight of ``(o, i, ...)`` (``OI...`` order) for data of ``c``
    channels is TVM's depthwise weight with multiplier ``(C, M, ...)``: ``groups`` equal
    to ``c`` and to ``o``, and ``channels == C * M`` with ``M > 1`` (with ``M == 1`` the
    two forms coincide). ``None`` otherwise, or while a size is symbolic."""
    if channels is None or not isinstance(groups, int) or groups < 2:
        return None
    if not static(c, o, i, channels):
        return None
    if c == groups and o == groups and i > 1 and channels == o * i:
        return int(i)
    return None


def grouped_weight(w: np.ndarray, c: int, groups: int, channels: Any) -> np.ndarray:
    """``w`` (``OI...`` order) in the grouped form ``(O, C/groups, *K)``: a depthwise
    weight with multiplier ``(C, M, *K)`` becomes ``(C*M, 1, *K)``; any other ``w`` is
    returned as it is."""
    o, i = w.shape[0], w.shape[1]
    m = depthwise_multiplier(c, o, i, groups, channels)
    if m is None:
        return w
    return w.reshape(o * m, 1, *w.shape[2:])


def has_multiplier_weight(call: Call) -> bool:
    """Whether a forward convolution ``call`` (typed) uses TVM's depthwise weight with a
    channel multiplier (see :func:`depthwise_multiplier`); what a backend that takes
    grouped weights only declines with :data:`MULTIPLIER_DECLINE`.

    >>> from relaykit import relay
    >>> from relaykit.ir import IRModule
    >>> from relaykit.transform import InferType
    >>> x = relay.var("x", shape=(1, 4, 6, 6))
    >>> def conv(wshape):
    ...     w = relay.var("w", shape=wshape)
    ...     y = relay.nn.conv2d(x, w, groups=4, channels=8, kernel_size=3)
    ...     return InferType()(IRModule.from_expr(relay.Function([x, w], y)))["main"].body
    >>> has_multiplier_weight(conv((4, 2, 3, 3))), has_multiplier_weight(conv((8, 1, 3, 3)))
    (True, False)
    """
    if len(call.args) < 2:
        return False
    data, weight = checked_type_or_none(call.args[0]), checked_type_or_none(call.args[1])
    attrs = call.attrs
    if not isinstance(data, TensorType) or not isinstance(weight, TensorType):
        return False
    layout, kernel_layout = str(attrs.data_layout), str(attrs.kernel_layout)
    if len(layout) != data.ndim or len(kernel_layout) != weight.ndim:
        return False  # blocked layouts: not this form
    if "C" not in layout or "O" not in kernel_layout or "I" not in kernel_layout:
        return False
    c = data.shape[layout.index("C")]
    o, i = weight.shape[kernel_layout.index("O")], weight.shape[kernel_layout.index("I")]
    return depthwise_multiplier(c, o, i, attrs.groups, attrs.get("channels")) is not None


def _sizes(value: Any, n: int) -> tuple[int, ...]:
    vals = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n:
        raise TypeRelError(f"kernel_size must have 1 or {n} values, got {value!r}")
    return tuple(int(v) for v in vals)


def conv_weight_solver(
    op: str, data_canonical: str, weight_canonical: str
) -> Callable[[Sequence[Type], Attrs], Solved]:
    """The ``"FTypeSolveInputs"`` of convolution ``op``: an unknown weight is
    ``(channels, C/groups, *kernel_size)`` in ``OI...`` order, or for a transpose
    (``weight_canonical`` starting ``IO``) ``(C, channels/groups, *kernel_size)``, laid
    out in the call's ``kernel_layout``, of the data's dtype."""
    n = len(weight_canonical) - 2
    transpose = weight_canonical.startswith("IO")

    def solve(arg_types: Sequence[Type], attrs: Attrs) -> Solved:
        data = known_data(arg_types)
        if data is None or len(arg_types) < 2 or not isinstance(arg_types[1], IncompleteType):
            return list(arg_types)
        if attrs.kernel_size is None or attrs.channels is None:
            raise TypeRelError(
                f"cannot deduce the shape of the weight of {op}: it has no type annotation "
                "and the call does not give both channels= and kernel_size=; give those "
                "attributes or annotate the weight"
            )
        kernel = _sizes(attrs.kernel_size, n)
        c = canonical_shape(data, attrs.data_layout, data_canonical, "data")[1]
        groups, channels = attrs.groups, int(attrs.channels)
        split = channels if transpose else c
        if not static(c):
            return list(arg_types)
        if not isinstance(groups, int) or groups < 1 or split % groups:
            what = f"channels={channels}" if transpose else f"the {c} input channels"
            raise TypeRelError(f"groups={groups!r} must be a positive divisor of {what}")
        shape = (c, channels // groups) if transpose else (channels, c // groups)
        layout = attrs.kernel_layout
        return fill_input(
            arg_types,
            1,
            lambda: TensorType(to_layout((*shape, *kernel), weight_canonical, layout), data.dtype),
        )

    return solve
