"""``nn.gelu``: the Gaussian error linear unit ``0.5 x (1 + erf(x / sqrt 2))`` as one operator.

TVM's Relay has no GELU: frontends write the chain (divide, erf, add, multiply, multiply),
as relaykit's do; Relax and onnxruntime have it as one operator. ``relay.build`` forms it
from the chain for the host (:mod:`relaykit.transform.gelu`), which runs it in one pass
(:mod:`relaykit.backends.host.nn`) instead of five.

>>> from relaykit import relay
>>> gelu(relay.var("x", shape=(2, 3))).op.name
'nn.gelu'
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.op import _numeric as num
from relaykit.op._relations import identity_rel
from relaykit.op.define import OpPattern, define_op, make_call

__all__ = ["gelu"]


def _gelu_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    x64 = x.astype(np.float64, copy=False)
    out = 0.5 * x64 * (1.0 + num.erf(x64 / math.sqrt(2.0)))
    return num.as_out(out, x.dtype)


define_op(
    "nn.gelu",
    num_inputs=1,
    type_rel=identity_rel,
    compute=_gelu_kernel,
    pattern=OpPattern.ELEMWISE,
    doc="GELU, 0.5 x (1 + erf(x / sqrt 2)) (the exact form).",
)


def gelu(data: Expr) -> Call:
    """``0.5 * data * (1 + erf(data / sqrt(2)))``."""
    return make_call("nn.gelu", [data])
