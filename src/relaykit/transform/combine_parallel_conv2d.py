"""``CombineParallelConv2D``: convolutions of one input with the same kernel size and
attributes become one convolution over the concatenated weights (TVM's Inception
optimisation), together with the elementwise/broadcast operators that follow each of
them alike; each branch's result is a ``strided_slice`` of the merged output.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(1, 4, 8, 8))
>>> ws = [relay.var(f"w{i}", shape=(c, 4, 3, 3)) for i, c in enumerate((2, 3))]
>>> f = relay.Function([x, *ws], relay.Tuple([relay.nn.conv2d(x, w) for w in ws]))
>>> out = CombineParallelConv2D(min_num_branches=2)(IRModule.from_expr(f))["main"].body
>>> [field.op.name for field in out.fields], out.fields[0].args[0].attrs.channels
(['strided_slice', 'strided_slice'], 5)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaykit import op
from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType

from .combine_parallel_op import Combiner, combine_parallel
from .pass_infra import FunctionPass, PassContext

__all__ = ["CombineParallelConv2D", "combine_parallel_conv2d", "Conv2DCombiner"]


def _hashable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value if isinstance(value, (int, str, float, type(None))) else str(value)


class Conv2DCombiner(Combiner):
    """``nn.conv2d`` calls with one group, equal attributes and kernel height/width."""

    op_name = "nn.conv2d"

    def key(self, call: Call) -> Any:
        a = call.attrs
        w = checked_type_or_none(call.args[1])
        if int(a.groups) != 1 or not isinstance(w, TensorType):
            return None
        if not isinstance(checked_type_or_none(call), TensorType):
            return None
        layout = str(a.kernel_layout)
        kh, kw = w.shape[layout.index("H")], w.shape[layout.index("W")]
        return tuple(
            _hashable(v)
            for v in (
                a.strides,
                a.padding,
                a.dilation,
                a.data_layout,
                a.kernel_layout,
                a.out_layout,
                a.out_dtype,
                kh,
                kw,
            )
        )

    def channel_pos(self, call: Call) -> int:
        layout = str(call.attrs.out_layout or call.attrs.data_layout)
        return layout.index("C")

    def merge(self, group: Sequence[Call]) -> Call:
        first = group[0]
        a = first.attrs
        pos = self.channel_pos(first)
        channels = 0
        for call in group:
            out = checked_type_or_none(call)
            assert isinstance(out, TensorType)  # key() admits typed calls only
            channels += int(out.shape[pos])
        weight = op.concatenate([c.args[1] for c in group], axis=str(a.kernel_layout).index("O"))
        return op.nn.conv2d(
            first.args[0],
            weight,
            strides=a.strides,
            padding=a.padding,
            dilation=a.dilation,
            groups=a.groups,
            channels=channels,
            kernel_size=a.kernel_size,
            data_layout=a.data_layout,
            kernel_layout=a.kernel_layout,
            out_layout=a.out_layout,
            out_dtype=a.out_dtype,
        )


def combine_parallel_conv2d(expr: Expr, min_num_branches: int = 3) -> Expr:
    """``expr`` with groups of parallel ``nn.conv2d`` branches merged."""
    return combine_parallel(expr, Conv2DCombiner(), min_num_branches)


class CombineParallelConv2D(FunctionPass):
    """``relay.transform.CombineParallelConv2D(min_num_branches=3)`` (opt_level 4)."""

    def __init__(self, min_num_branches: int = 3) -> None:
        self.min_num_branches = min_num_branches
        super().__init__(self._transform, opt_level=4, name="CombineParallelConv2D")

    def _transform(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = combine_parallel_conv2d(fn, self.min_num_branches)
        return out if isinstance(out, Function) else fn
