"""``nn.adaptive_avg_pool1d`` and ``nn.adaptive_max_pool1d`` (TVM's names): the 2-D
adaptive pools over a unit height, layouts ``NCW`` / ``NWC``.

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 2, 6))
>>> adaptive_avg_pool1d(x, 3).attrs.output_size
(3,)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

from .pooling import adaptive_avg_pool2d_kernel, adaptive_max_pool2d_kernel

__all__ = ["adaptive_avg_pool1d", "adaptive_max_pool1d"]

_LAYOUT_2D = {"NCW": "NCHW", "NWC": "NHWC"}


def _as_2d(attrs: Attrs) -> tuple[Attrs, str, str]:
    layout = _LAYOUT_2D.get(str(attrs.layout))
    out_layout = _LAYOUT_2D.get(str(attrs.out_layout or attrs.layout))
    if layout is None or out_layout is None:
        raise TypeRelError(f"adaptive pool1d layout must be NCW or NWC, got {attrs.layout!r}")
    size = tuple(attrs.output_size)
    values = {
        "output_size": () if not size else (1, size[0]),
        "layout": layout,
        "out_layout": out_layout,
    }
    return Attrs(values, "DictAttrs"), layout, out_layout


def _rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.ndim != 3:
        raise TypeRelError(f"adaptive pool1d takes a 3-d tensor, got {data}")
    _, _layout, _out_layout = _as_2d(attrs)
    w_axis = str(attrs.layout).index("W")
    width = data.shape[w_axis]
    if width == 0:
        raise TypeRelError(f"cannot pool an empty input {data}")
    size = tuple(attrs.output_size)
    ow = width if not size or size[0] is None else int(size[0])
    dims = {"N": data.shape[str(attrs.layout).index("N")]}
    dims["C"] = data.shape[str(attrs.layout).index("C")]
    dims["W"] = ow
    out = str(attrs.out_layout or attrs.layout)
    return TensorType(tuple(dims[a] for a in out), data.dtype)


def _kernel(kernel2d: Any) -> Any:
    def kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        attrs2, layout, out_layout = _as_2d(attrs)
        out = kernel2d([np.expand_dims(inputs[0], layout.index("H"))], attrs2)
        return np.ascontiguousarray(np.squeeze(out, out_layout.index("H")))

    return kernel


for _name, _k in (
    ("nn.adaptive_avg_pool1d", adaptive_avg_pool2d_kernel),
    ("nn.adaptive_max_pool1d", adaptive_max_pool2d_kernel),
):
    define_op(
        _name,
        num_inputs=1,
        attrs={"output_size": (), "layout": "NCW", "out_layout": ""},
        attrs_type_key="relay.attrs.AdaptivePool1DAttrs",
        type_rel=_rel,
        compute=_kernel(_k),
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        doc="Pool a 1-d signal to a fixed output width.",
    )


def _size(output_size: Any) -> tuple[int, ...]:
    if output_size is None:
        return ()
    if isinstance(output_size, int | np.integer):
        return (int(output_size),)
    return tuple(int(s) for s in output_size)


def adaptive_avg_pool1d(
    data: Expr, output_size: Any = None, layout: str = "NCW", out_layout: str = ""
) -> Call:
    """Average pooling to a fixed output width (PyTorch's window bounds)."""
    return make_call(
        "nn.adaptive_avg_pool1d",
        [data],
        output_size=_size(output_size),
        layout=layout,
        out_layout=out_layout,
    )


def adaptive_max_pool1d(
    data: Expr, output_size: Any = None, layout: str = "NCW", out_layout: str = ""
) -> Call:
    """Max pooling to a fixed output width."""
    return make_call(
        "nn.adaptive_max_pool1d",
        [data],
        output_size=_size(output_size),
        layout=layout,
        out_layout=out_layout,
    )
