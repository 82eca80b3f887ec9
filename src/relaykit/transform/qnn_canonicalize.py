"""``relay.qnn.transform.CanonicalizeOps`` and ``Legalize``: run each QNN operator's
``FTVMQnnCanonicalize`` hook (its lowering to plain integer Relay, registered in
:mod:`relaykit.op.qnn.canonicalize`) or ``FTVMQnnLegalize`` hook on every call and put
the expression returned in the call's place (a hook returning ``None`` keeps the call).

>>> import numpy as np
>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(4,), dtype="int32")
>>> y = relay.qnn.op.requantize(x, relay.const(0.5), relay.const(0), relay.const(1.0),
...                             relay.const(0))
>>> mod = CanonicalizeOps()(IRModule.from_expr(relay.Function([x], y)))
>>> "qnn." in str(mod)
False
"""

from __future__ import annotations

import relaykit.op.qnn.canonicalize  # noqa: F401 - registers the FTVMQnnCanonicalize hooks
from relaykit.ir.expr import Function

from .legalize import legalize
from .pass_infra import FunctionPass

__all__ = ["CanonicalizeOps", "Legalize"]


def _keep(out: object, fn: Function) -> Function:
    return out if isinstance(out, Function) else fn


class CanonicalizeOps(FunctionPass):
    """``relay.qnn.transform.CanonicalizeOps()``: QNN operators lowered to integer Relay."""

    def __init__(self) -> None:
        super().__init__(
            lambda fn, mod, ctx: _keep(legalize(fn, "FTVMQnnCanonicalize"), fn),
            opt_level=0,
            name="QnnCanonicalize",
        )


class Legalize(FunctionPass):
    """``relay.qnn.transform.Legalize()``: each QNN operator's ``FTVMQnnLegalize`` hook."""

    def __init__(self) -> None:
        super().__init__(
            lambda fn, mod, ctx: _keep(legalize(fn, "FTVMQnnLegalize"), fn),
            opt_level=0,
            name="QnnLegalize",
        )
