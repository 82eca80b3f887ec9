"""Quantization's last pass: turn the simulated (float) graph into integer arithmetic.

A value in integers travels as :class:`QRealizeIntExpr` (the integer expression, its
``dom_scale`` — one integer step in real units — and its dtype). A simulated quantize
of a float value becomes ``clip(round(x / s))``; of an integer value, a rescale by
shifts (``right_shift`` with a rounding bias when ``round_for_shift``, ``left_shift``)
or a fixed-point multiply when the scales are not a power of two apart.
``nn.conv2d``/``nn.dense``/``nn.batch_matmul`` run on ``dtype_input``/``dtype_weight``
operands with ``out_dtype=dtype_activation`` and multiply the scales; ``add`` and
``concatenate`` first bring their operands to the smaller scale. Where a value leaves
integers it is realized as ``cast(x, "float32") * dom_scale``. Rules are the op
attribute ``"FQRealizeRewrite"``.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(4,))
>>> sq = relay.op.relay.simulated_quantize(
...     x, relay.const(0.25), relay.const(-127.0), relay.const(127.0), kind=1)
>>> from .config import qconfig
>>> with qconfig():
...     out = realize_function(relay.Function([x], relay.nn.relu(sq)))
>>> "round" in str(out) and "relay.op.annotation" not in str(out)
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import IRError
from relaykit.ir.expr import Call, Constant, Expr, Function, Tuple, const
from relaykit.ir.module import IRModule
from relaykit.ir.op import get_op, register_op_attr
from relaykit.op.annotation import stop_fusion
from relaykit.op.define import make_call
from relaykit.op.qnn._common import fixed_point
from relaykit.op.qnn.canonicalize import fixed_point_expr
from relaykit.op.relay.quantize import OP_NAME
from relaykit.transform.pass_infra import FunctionPass, Pass, PassContext

from .config import QAnnotateKind, current_qconfig
from .rewrite import TempExpr, TempTuple, forward_op, forward_rewrite

__all__ = ["QRealizeIntExpr", "realize", "realize_function"]

RULE_KEY = "FQRealizeRewrite"


class QRealizeIntExpr(TempExpr):
    """An integer value: ``data`` (of ``dtype``) times ``dom_scale`` is the real value."""

    def __init__(self, data: Expr, dom_scale: float, dtype: str) -> None:
        self.data = data
        self.dom_scale = float(np.float32(dom_scale))
        self.dtype = dtype

    def realize(self) -> Expr:
        data = make_call("cast", [self.data], dtype="float32")
        return make_call("multiply", [data, const(np.float32(self.dom_scale), "float32")])


def _scalar(expr: Any, what: str) -> float:
    if type(expr) is not Constant or expr.data.numpy().size != 1:
        raise IRError(
            f"quantize realize: the {what} of a simulated quantize is not a constant; "
            "run calibrate first (relay.quantize.quantize runs every step)"
        )
    return float(expr.data.numpy().reshape(()))


def _c(value: Any, dtype: str) -> Constant:
    return const(np.array(value, dtype=dtype), dtype)


def _cast(data: Expr, dtype: str) -> Expr:
    return make_call("cast", [data], dtype=dtype)


def _clip(data: Expr, lo: float, hi: float) -> Expr:
    return make_call("clip", [data], a_min=float(lo), a_max=float(hi))


def _fixed_point(data: Expr, factor: float) -> Expr:
    """``data * factor`` in integers, rounded as the ``rounding`` option says."""
    if current_qconfig().rounding == "UPWARD":
        m, shift = fixed_point(factor)
        return make_call("fixed_point_multiply", [data], multiplier=int(m), shift=int(shift))
    return fixed_point_expr(data, np.array(factor, np.float64), "TONEAREST")


def _simulated_quantize(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    cfg = current_qconfig()
    if ref_call.attrs.rounding != "round":
        raise IRError(f"quantize realize: rounding {ref_call.attrs.rounding!r} is not supported")
    if int(ref_call.attrs.kind) == QAnnotateKind.IDENTITY:
        return None
    scale = _scalar(new_args[1], "dom_scale")
    lo, hi = _scalar(new_args[2], "clip_min"), _scalar(new_args[3], "clip_max")
    arg = new_args[0]
    if not isinstance(arg, QRealizeIntExpr):
        scaled = make_call("multiply", [arg, _c(np.float32(1.0) / np.float32(scale), "float32")])
        return QRealizeIntExpr(_clip(make_call("round", [scaled]), lo, hi), scale, "float32")
    data = arg.data
    if np.float32(arg.dom_scale) == np.float32(scale):
        return QRealizeIntExpr(_clip(data, lo, hi), scale, arg.dtype)
    shift = math.log2(float(np.float32(scale) / np.float32(arg.dom_scale)))
    act = cfg.dtype_activation
    if shift == int(shift):
        nbit = int(shift)
        dtype = arg.dtype
        if dtype != act:  # shift in the activation dtype (an int8 value would overflow)
            data, dtype = _cast(data, act), act
        if nbit > 0:
            if cfg.round_for_shift:
                data = make_call("add", [data, _c(1 << (nbit - 1), act)])
            data = make_call("right_shift", [data, _c(nbit, act)])
        else:
            data = make_call("left_shift", [data, _c(-nbit, act)])
        return QRealizeIntExpr(_clip(data, lo, hi), scale, dtype)
    factor = float(np.float32(arg.dom_scale) / np.float32(scale))
    data = _fixed_point(_cast(data, "int64") if cfg.rounding == "UPWARD" else data, factor)
    return QRealizeIntExpr(_cast(_clip(data, lo, hi), arg.dtype), scale, arg.dtype)


def _operands(
    ref_call: Call, new_args: list[Any]
) -> tuple[QRealizeIntExpr, QRealizeIntExpr] | None:
    lhs, rhs = new_args[0], new_args[1]
    if isinstance(lhs, QRealizeIntExpr) and isinstance(rhs, QRealizeIntExpr):
        return lhs, rhs
    return None


def _matmul_like(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    pair = _operands(ref_call, new_args)
    if pair is None:
        return None
    cfg = current_qconfig()
    lhs, rhs = pair
    ldata = lhs.data if lhs.dtype == cfg.dtype_input else _cast(lhs.data, cfg.dtype_input)
    rdata = rhs.data if rhs.dtype == cfg.dtype_weight else _cast(rhs.data, cfg.dtype_weight)
    attrs = ref_call.attrs.with_updates(out_dtype=cfg.dtype_activation)
    out = Call(ref_call.op, [ldata, rdata], attrs, ref_call.type_args, ref_call.span)
    return QRealizeIntExpr(out, lhs.dom_scale * rhs.dom_scale, cfg.dtype_activation)


def _multiply(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    pair = _operands(ref_call, new_args)
    if pair is None:
        return None
    act = current_qconfig().dtype_activation
    lhs, rhs = pair
    ldata = lhs.data if lhs.dtype == act else _cast(lhs.data, act)
    rdata = rhs.data if rhs.dtype == act else _cast(rhs.data, act)
    return QRealizeIntExpr(forward_op(ref_call, [ldata, rdata]), lhs.dom_scale * rhs.dom_scale, act)


def _mul_and_div(data: Expr, s1: float, s2: float, dtype: str) -> Expr:
    """``data * s1 / s2`` (``s1 >= s2``) in integers: a shift when possible."""
    if np.float32(s1) == np.float32(s2):
        return data
    factor = float(np.float32(s1) / np.float32(s2))
    bits = np.iinfo(np.dtype(dtype)).bits - 1
    if factor >= 2.0**bits:
        raise IRError(
            f"quantize realize: adding values whose scales ({s1:.3g} and {s2:.3g}) differ by "
            f"a factor of {factor:.3g} would overflow {dtype}; the smaller scale comes from "
            "calibration data that keeps a value near zero: calibrate with representative "
            "data, or use calibrate_mode='global_scale'"
        )
    shift = math.log2(factor)
    if shift == int(shift):
        return make_call("left_shift", [data, _c(int(shift), dtype)])
    if factor == int(factor):
        return make_call("multiply", [data, _c(int(factor), dtype)])
    return _cast(_fixed_point(data, factor), dtype)


def _unify(
    ref_args: Sequence[Expr], args: Sequence[Any], dtype: str | None = None
) -> tuple[list[Expr], str, float]:
    """Operands brought to one dtype and the smallest of their scales (TVM's
    ``UnifyDTypeScale``): a value fresh out of an INPUT quantize is cast to
    ``dtype_input`` behind a ``stop_fusion`` first."""
    cfg = current_qconfig()
    sq = get_op(OP_NAME)
    if dtype is None:
        dtype = (
            cfg.dtype_input
            if len(args) == 2 and args[1].dtype == cfg.dtype_input
            else cfg.dtype_activation
        )
    out: list[Expr] = []
    for ref, arg in zip(ref_args, args, strict=True):
        data = arg.data
        if arg.dtype != dtype:
            data = _cast(data, dtype)
        elif type(ref) is Call and ref.op is sq and int(ref.attrs.kind) == QAnnotateKind.INPUT:
            data = _cast(stop_fusion(_cast(data, cfg.dtype_input)), dtype)
        out.append(data)
    if len(args) == 2:
        scale = min(args[0].dom_scale, args[1].dom_scale)
    else:
        scale = cfg.global_scale / 2.0 ** (cfg.nbit_activation - 1)
    out = [_mul_and_div(d, a.dom_scale, scale, dtype) for d, a in zip(out, args, strict=True)]
    return out, dtype, scale


def _add(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    if _operands(ref_call, new_args) is None:
        return None  # the operands are realized to float
    act = current_qconfig().dtype_activation
    args, dtype, scale = _unify(ref_call.args, new_args, act)
    pairs = zip(args, new_args, strict=True)
    args = [stop_fusion(d) if a.dtype == "float32" else d for d, a in pairs]
    return QRealizeIntExpr(forward_op(ref_call, args), scale, dtype)


def _clip_rule(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    arg = new_args[0]
    if not isinstance(arg, QRealizeIntExpr):
        return None
    s = float(np.float32(arg.dom_scale))
    attrs = ref_call.attrs.with_updates(
        a_min=float(ref_call.attrs.a_min) / s, a_max=float(ref_call.attrs.a_max) / s
    )
    out = Call(ref_call.op, [arg.data], attrs, ref_call.type_args, ref_call.span)
    return QRealizeIntExpr(out, arg.dom_scale, arg.dtype)


def _concatenate(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    tup = new_args[0]
    ref = ref_call.args[0]
    if not isinstance(tup, TempTuple) or not isinstance(tup[0], QRealizeIntExpr):
        return None
    if type(ref) is not Tuple or not all(isinstance(f, QRealizeIntExpr) for f in tup):
        raise IRError("quantize realize: concatenate mixes integer and float operands")
    args, dtype, scale = _unify(ref.fields, list(tup))
    return QRealizeIntExpr(forward_op(ref_call, [Tuple(args)]), scale, dtype)


def _identity(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    arg = new_args[0]
    if not isinstance(arg, QRealizeIntExpr):
        return None
    return QRealizeIntExpr(forward_op(ref_call, [arg.data]), arg.dom_scale, arg.dtype)


def _to_input_dtype(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    arg = new_args[0]
    if not isinstance(arg, QRealizeIntExpr):
        return None
    dtype = current_qconfig().dtype_input
    return QRealizeIntExpr(forward_op(ref_call, [_cast(arg.data, dtype)]), arg.dom_scale, dtype)


def _avg_pool(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    arg = new_args[0]
    if not isinstance(arg, QRealizeIntExpr):
        return None
    act = current_qconfig().dtype_activation
    data = arg.data if arg.dtype == act else _cast(arg.data, act)
    return QRealizeIntExpr(forward_op(ref_call, [data]), arg.dom_scale, act)


def _cast_hint(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    arg = new_args[0]
    if not isinstance(arg, QRealizeIntExpr):
        return None
    dtype = str(ref_call.attrs.dtype)
    return QRealizeIntExpr(_cast(arg.data, dtype), arg.dom_scale, dtype)


def _batch_matmul(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    return _matmul_like(ref_call, new_args, ctx)


_RULES = {
    OP_NAME: _simulated_quantize,
    "nn.conv2d": _matmul_like,
    "nn.conv1d": _matmul_like,
    "nn.dense": _matmul_like,
    "nn.batch_matmul": _batch_matmul,
    "multiply": _multiply,
    "add": _add,
    "clip": _clip_rule,
    "concatenate": _concatenate,
    "nn.relu": _identity,
    "reshape": _identity,
    "strided_slice": _identity,
    "nn.batch_flatten": _identity,
    "transpose": _identity,
    "annotation.stop_fusion": _identity,
    "nn.max_pool2d": _to_input_dtype,
    "nn.max_pool1d": _to_input_dtype,
    "nn.avg_pool2d": _avg_pool,
    "nn.global_avg_pool2d": _avg_pool,
    "annotation.cast_hint": _cast_hint,
}
#: Realized whatever ``debug_enabled_ops`` says: annotation always handles them.
_ALWAYS = frozenset({OP_NAME, "annotation.cast_hint", "annotation.stop_fusion"})


def _guarded(name: str, rule: Any) -> Any:
    """``rule``, skipped (the operands realized to float) for an operator that
    ``debug_enabled_ops`` kept out of annotation: its operands were not requantized for
    it (TVM realized it anyway, casting unscaled int32 values to int8)."""
    if name in _ALWAYS:
        return rule

    def guarded(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
        if not current_qconfig().guard(ref_call):
            return None
        return rule(ref_call, new_args, ctx)

    return guarded


for _name, _rule in _RULES.items():
    register_op_attr(_name, RULE_KEY, _guarded(_name, _rule))


def realize_function(func: Function) -> Function:
    """``func`` in integer arithmetic (see the module docstring)."""
    return forward_rewrite(func, RULE_KEY)


def realize() -> Pass:
    """TVM's ``relay.quantize.realize()``: the pass ``QuantizeRealize``."""

    def run(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return realize_function(func)

    return FunctionPass(run, 1, "QuantizeRealize")
