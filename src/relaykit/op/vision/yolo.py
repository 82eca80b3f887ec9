"""YOLO (TVM's ``vision/yolo.py``): ``vision.yolo_reorg``.

``yolo_reorg(data, stride)`` is Darknet's ``reorg`` layer: viewing the (N, C, H, W)
input as (N, C / s^2, H * s, W * s), each ``s x s`` tile goes to ``s^2`` channel
groups; the output is (N, C * s^2, H / s, W / s).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 8, 4, 4))
>>> yolo_reorg(x, 2).attrs.stride
2
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import static, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["yolo_reorg"]


def _reorg_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    s = int(attrs.stride)
    if data.ndim != 4 or s <= 0:
        raise TypeRelError(f"yolo_reorg needs 4-D NCHW data and a positive stride, got {data}")
    n, c, h, w = data.shape
    if any(static(d) and d % k for d, k in ((c, s * s), (h, s), (w, s))):
        raise TypeRelError(
            f"yolo_reorg stride {s}: channels {c} must divide by {s * s} and {h}x{w} by {s}"
        )
    return TensorType((n, c * s * s, h // s, w // s), data.dtype)


def _reorg_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    n, c, h, w = x.shape
    s = int(attrs.stride)
    y = x.reshape(n, c // (s * s), h, s, w, s).transpose(0, 3, 5, 1, 2, 4)
    return np.ascontiguousarray(y.reshape(n, c * s * s, h // s, w // s))


define_op(
    "vision.yolo_reorg",
    num_inputs=1,
    attrs={"stride": 1},
    attrs_type_key="relay.attrs.YoloReorgAttrs",
    type_rel=_reorg_rel,
    compute=_reorg_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Darknet's reorg layer.",
)


def yolo_reorg(data: Expr, stride: int) -> Call:
    """Darknet's ``reorg``: ``stride x stride`` tiles into channel groups."""
    return make_call("vision.yolo_reorg", [data], stride=int(stride))
