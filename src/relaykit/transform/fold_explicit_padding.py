"""``FoldExplicitPadding``: an ``nn.pad`` feeding a convolution or a pooling is folded
into that operator's own ``padding``.

The pad must be ``constant`` mode, pad only the spatial axes (``D``, ``H``, ``W`` of the
consumer's layout), and pad with the value the consumer pads with implicitly:

* ``nn.conv1d`` / ``conv2d`` / ``conv3d``: 0;
* ``qnn.conv2d``: the input zero point (a constant);
* ``nn.max_pool*``: the lowest value of the dtype (or ``-inf``);
* ``nn.avg_pool*``: 0, and the padded zeros count in the average, so the pool becomes
  ``count_include_pad=True`` (it must already be, if it had padding of its own).

The explicit widths are added to the operator's (``before..., after...``). Any other pad
is left alone. One post-order rewrite (opt_level 0).

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(1, 3, 8, 8))
>>> w = relay.var("w", shape=(4, 3, 3, 3))
>>> y = relay.nn.conv2d(relay.nn.pad(x, [[0, 0], [0, 0], [1, 1], [2, 0]]), w)
>>> out = FoldExplicitPadding()(IRModule.from_expr(y))["main"].body
>>> out.args[0] is x, out.attrs.padding
(True, [1, 2, 1, 0])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.ir.expr import Call, Constant, Expr, Function
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op

from .pass_infra import FunctionPass, PassContext

__all__ = ["FoldExplicitPadding", "fold_explicit_padding"]

_CONV = {"nn.conv1d": 1, "nn.conv2d": 2, "nn.conv3d": 3, "qnn.conv2d": 2}
_MAX = {"nn.max_pool1d": 1, "nn.max_pool2d": 2, "nn.max_pool3d": 3}
_AVG = {"nn.avg_pool1d": 1, "nn.avg_pool2d": 2, "nn.avg_pool3d": 3}


def _full_padding(value: Any, n: int) -> list[int]:
    """``(before..., after...)`` from 1, n or 2n values."""
    vals = [int(value)] if isinstance(value, int | np.integer) else [int(v) for v in value]
    if len(vals) == 1:
        return vals * (2 * n)
    if len(vals) == n:
        return vals + vals
    return vals


def _scalar(e: Expr) -> float | None:
    if type(e) is not Constant or e.data.numpy().size != 1:
        return None
    return float(e.data.numpy().reshape(-1)[0])


def _implicit_value(consumer: Call, name: str, dtype: str) -> float | None:
    """The value ``consumer`` pads with implicitly (None: it cannot take a pad)."""
    if name in _CONV:
        return _scalar(consumer.args[2]) if name == "qnn.conv2d" else 0.0
    if name in _MAX:
        info = np.finfo(dtype) if np.issubdtype(np.dtype(dtype), np.floating) else np.iinfo(dtype)
        return float(info.min)
    if name in _AVG:
        return 0.0
    return None


def _spatial_widths(pad: Call, layout: str, n: int) -> list[int] | None:
    """The pad's widths as ``(before..., after...)`` over the spatial axes of ``layout``,
    or None when it pads another axis."""
    widths = [tuple(int(v) for v in row) for row in pad.attrs.pad_width]
    if len(widths) != len(layout):
        return None
    spatial = [i for i, a in enumerate(layout) if a in "DHW"]
    if len(spatial) != n or any(
        widths[i] != (0, 0) for i in range(len(layout)) if i not in spatial
    ):
        return None
    return [widths[i][0] for i in spatial] + [widths[i][1] for i in spatial]


def _fold(new: Expr, old: Expr) -> Expr | None:
    if type(new) is not Call or type(new.op) is not Op:
        return None
    name = new.op.name
    n = _CONV.get(name) or _MAX.get(name) or _AVG.get(name)
    pad = new.args[0] if n else None
    if n is None or not isinstance(old, Call):
        return None
    if type(pad) is not Call or type(pad.op) is not Op or pad.op.name != "nn.pad":
        return None
    if pad.attrs.pad_mode != "constant":
        return None
    value = _scalar(pad.args[1])
    dtype = getattr(getattr(old.args[0], "checked_type", None), "dtype", None) or "float32"
    implicit = _implicit_value(new, name, dtype)
    if value is None or implicit is None or value != implicit:
        return None
    attrs = new.attrs
    layout = str(attrs.data_layout if name in _CONV else attrs.layout)
    widths = _spatial_widths(pad, layout, n)
    if widths is None:
        return None
    own = _full_padding(attrs.padding, n)
    updates: dict[str, Any] = {"padding": tuple(a + b for a, b in zip(own, widths, strict=True))}
    if name in _AVG and not attrs.count_include_pad:
        if any(own):
            return None  # its own padding is left out of the average: the pad's cannot be
        updates["count_include_pad"] = True
    return Call(new.op, [pad.args[0], *new.args[1:]], attrs.with_updates(**updates), span=new.span)


def fold_explicit_padding(expr: Expr) -> Expr:
    """``expr`` with explicit pads folded into the convolutions and pools they feed."""
    return rewrite_post_order(expr, _fold)


class FoldExplicitPadding(FunctionPass):
    """``relay.transform.FoldExplicitPadding()`` (opt_level 0)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="FoldExplicitPadding")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = fold_explicit_padding(fn)
        return out if isinstance(out, Function) else fn
