"""``relay.op.annotation.simulated_quantize``: automatic quantization's stand-in for a
quantize-then-dequantize pair, computed in float.

``simulated_quantize(data, dom_scale, clip_min, clip_max, kind, sign, rounding)``
computes ``round(clip(data / dom_scale, clip_min, clip_max)) * dom_scale``, rounding
halves away from zero as the ``round`` operator does (TVM's ``round`` is LLVM's
``llvm.round``), so the simulated and the realized graph round alike; ``kind`` 0
(``IDENTITY``) passes ``data`` through. The three
parameters are float32 scalars, set by calibration.

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(3,))
>>> call = simulated_quantize(x, relay.const(0.5), relay.const(-127.0), relay.const(127.0), 1)
>>> call.attrs.kind, call.attrs.rounding
(1, 'round')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import AttrError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._numeric import round_half_away
from relaykit.op._relations import tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["simulated_quantize"]

OP_NAME = "relay.op.annotation.simulated_quantize"

#: The annotation kinds (TVM's ``QAnnotateKind``): 0 passes data through.
KINDS = (0, 1, 2, 3)


def _rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in ("float16", "float32", "float64"):
        raise TypeRelError(f"{OP_NAME} takes float data, got {data}")
    for i, what in ((1, "dom_scale"), (2, "clip_min"), (3, "clip_max")):
        t = tensor_arg(arg_types, i, what)
        if t.shape != () or t.dtype != "float32":
            raise TypeRelError(f"{OP_NAME}: {what} must be a float32 scalar, got {t}")
    return TensorType(data.shape, data.dtype)


def _compute(inputs: Sequence[Any], attrs: Attrs) -> np.ndarray:
    data = np.asarray(inputs[0])
    if int(attrs.kind) == 0:
        return data
    scale, lo, hi = (np.asarray(v, data.dtype) for v in inputs[1:4])
    clipped = np.minimum(np.maximum(data / scale, lo), hi)
    return (round_half_away(clipped) * scale).astype(data.dtype)


define_op(
    OP_NAME,
    num_inputs=4,
    attrs={"kind": 0, "sign": True, "rounding": "round"},
    attrs_type_key="relay.attrs.SimulatedQuantizeAttrs",
    type_rel=_rel,
    compute=_compute,
    pattern=OpPattern.ELEMWISE,
    doc="Quantize-then-dequantize simulated in float (automatic quantization).",
)


def simulated_quantize(
    data: Expr,
    dom_scale: Any,
    clip_min: Any,
    clip_max: Any,
    kind: int,
    sign: bool = True,
    rounding: str = "round",
) -> Call:
    """TVM's ``relay.quantize._quantize.simulated_quantize``: see the module docstring."""
    if int(kind) not in KINDS:
        raise AttrError(f"{OP_NAME}: kind must be one of {KINDS} (QAnnotateKind), got {kind!r}")
    return make_call(
        OP_NAME,
        [data, dom_scale, clip_min, clip_max],
        kind=int(kind),
        sign=bool(sign),
        rounding=str(rounding),
    )
