"""The ``ccompiler`` codegen: one C call per operator or composite, compiled by the system
C compiler (:class:`relaykit.execution.codegen.CSourceCodegen`).

Shapes and strides are written as small literal arrays; tensors (inputs,
outputs, constants, workspace) arrive as pointers, so even a large model's
weights never appear in the C text.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.execution.codegen.c_source import (
    CBuffer,
    CSourceCodegen,
    EmitContext,
    composite_calls,
)
from relaykit.ir.expr import Call
from relaykit.op.nn.geometry import pad4, pair

from .kernels_c import PREAMBLE
from .rules import TARGET

__all__ = ["codegen", "broadcast_strides"]

codegen = CSourceCodegen(TARGET, preamble=PREAMBLE)

_OPCODE = {"add": "RK_ADD", "subtract": "RK_SUB", "multiply": "RK_MUL"}


def broadcast_strides(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> list[int]:
    """Element strides of a contiguous ``shape`` read at each axis of ``out_shape``
    (0 on broadcast axes).

    >>> broadcast_strides((3, 1), (2, 3, 4))
    [0, 1, 0]
    """
    pad = len(out_shape) - len(shape)
    full = (1,) * pad + tuple(shape)
    strides = [0] * len(full)
    step = 1
    for d in range(len(full) - 1, -1, -1):
        strides[d] = 0 if full[d] == 1 else step
        step *= full[d]
    return strides


def _ints(values: list[int]) -> str:
    return "{" + ", ".join(str(int(v)) for v in values) + "}"


def _binary(
    ctx: EmitContext,
    op: str,
    a: CBuffer,
    b: CBuffer,
    out: CBuffer,
    relu: bool,
    b_axis: int | None = None,
) -> None:
    """Emit ``out = a (op) b``; ``b_axis``: b is a 1-D bias along that axis of ``out``."""
    shape = list(out.shape) or [1]
    sa = broadcast_strides(a.shape, out.shape) or [0]
    if b_axis is None:
        sb = broadcast_strides(b.shape, out.shape) or [0]
    else:
        sb = [0] * len(shape)
        sb[b_axis] = 1
    ctx.line("{")
    ctx.line(f"  static const int64_t shape[] = {_ints(shape)};")
    ctx.line(f"  static const int64_t sa[] = {_ints(sa)};")
    ctx.line(f"  static const int64_t sb[] = {_ints(sb)};")
    ctx.line(
        f"  rk_binary_f32({_OPCODE[op]}, {int(relu)}, {a.name}, {b.name}, {out.name}, "
        f"{len(shape)}, shape, sa, sb);"
    )
    ctx.line("}")


@codegen.emitter("add", "subtract", "multiply")
def _emit_binary(ctx: EmitContext, call: Call, ins: list[Any], outs: list[CBuffer]) -> None:
    _binary(ctx, str(call.op), ins[0], ins[1], outs[0], relu=False)


@codegen.emitter("nn.relu")
def _emit_relu(ctx: EmitContext, call: Call, ins: list[Any], outs: list[CBuffer]) -> None:
    ctx.line(f"rk_relu_f32({ins[0].name}, {outs[0].name}, {outs[0].size});")


@codegen.emitter("nn.bias_add")
def _emit_bias_add(ctx: EmitContext, call: Call, ins: list[Any], outs: list[CBuffer]) -> None:
    ndim = len(outs[0].shape)
    _binary(ctx, "add", ins[0], ins[1], outs[0], relu=False, b_axis=call.attrs.axis % ndim)


def _dense(ctx: EmitContext, x: CBuffer, w: CBuffer, bias: str, relu: bool, out: CBuffer) -> None:
    k = x.shape[-1]
    m = int(np.prod(x.shape[:-1], dtype=np.int64))
    n = w.shape[0]
    ctx.line(f"rk_dense_f32({x.name}, {w.name}, {bias}, {int(relu)}, {out.name}, {m}, {k}, {n});")


def _conv2d(
    ctx: EmitContext, conv: Call, x: CBuffer, w: CBuffer, bias: str, relu: bool, out: CBuffer
) -> None:
    a = conv.attrs
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    _, _, oh, ow = out.shape
    sh, sw = pair(a.strides, "strides")
    dh, dw = pair(a.dilation, "dilation")
    pt, pl, _, _ = pad4(a.padding)
    args = [n, c, h, wd, o, kh, kw, oh, ow, sh, sw, dh, dw, pt, pl, a.groups]
    ctx.line(
        f"rk_conv2d_f32({x.name}, {w.name}, {bias}, {int(relu)}, {out.name}, "
        + ", ".join(str(int(v)) for v in args)
        + ");"
    )


@codegen.emitter("nn.dense")
def _emit_dense(ctx: EmitContext, call: Call, ins: list[Any], outs: list[CBuffer]) -> None:
    _dense(ctx, ins[0], ins[1], "NULL", False, outs[0])


@codegen.emitter("nn.conv2d")
def _emit_conv2d(ctx: EmitContext, call: Call, ins: list[Any], outs: list[CBuffer]) -> None:
    _conv2d(ctx, call, ins[0], ins[1], "NULL", False, outs[0])


@codegen.emitter(f"{TARGET}.conv2d_bias_relu", f"{TARGET}.conv2d_bias")
def _emit_conv2d_bias(ctx: EmitContext, call: Call, ins: list[Any], outs: list[CBuffer]) -> None:
    inner = composite_calls(call)
    conv, bias = inner["nn.conv2d"], inner["nn.bias_add"]
    x, w = ctx.buffer(conv.args[0]), ctx.buffer(conv.args[1])
    b = ctx.buffer(bias.args[1])
    _conv2d(ctx, conv, x, w, b.name, "nn.relu" in inner, outs[0])


@codegen.emitter(f"{TARGET}.dense_bias_relu", f"{TARGET}.dense_bias")
def _emit_dense_bias(ctx: EmitContext, call: Call, ins: list[Any], outs: list[CBuffer]) -> None:
    inner = composite_calls(call)
    dense, bias = inner["nn.dense"], inner["nn.bias_add"]
    x, w = ctx.buffer(dense.args[0]), ctx.buffer(dense.args[1])
    b = ctx.buffer(bias.args[1])
    _dense(ctx, x, w, b.name, "nn.relu" in inner, outs[0])
