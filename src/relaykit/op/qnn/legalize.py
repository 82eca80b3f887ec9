"""Legalizations of QNN chains (TVM's ``FTVMLegalize`` hooks for them): a ``clip`` right
after ``qnn.requantize`` whose bounds are its output dtype's whole range does nothing
(requantize already clips there), so ``relay.transform.Legalize`` removes it.

>>> from relaykit.ir.op import default_registry
>>> callable(default_registry.get_attr("clip", "FTVMLegalize"))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.op import Op, register_op_attr

from ._common import QUANT_DTYPES, qrange

__all__ = ["legalize_clip"]


def legalize_clip(attrs: Attrs, inputs: Sequence[Expr], types: Sequence[Any]) -> Expr | None:
    """``requantize`` for ``clip(requantize(...))`` clipping to the dtype's full range."""
    arg = inputs[0]
    if not (isinstance(arg, Call) and isinstance(arg.op, Op) and arg.op.name == "qnn.requantize"):
        return None
    dtype = str(arg.attrs.out_dtype)
    if dtype not in QUANT_DTYPES:
        return None
    lo, hi = qrange(dtype)
    if float(attrs.a_min) == lo and float(attrs.a_max) == hi:
        return arg
    return None


register_op_attr("clip", "FTVMLegalize", legalize_clip, 10)
