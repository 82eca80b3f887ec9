"""Operator rules of target ``dnnl`` for quantized (int8) graphs.

The QNN operators oneDNN runs as int8 primitives (lowered by
:mod:`relaykit.backends.dnnl.compile.int8`): ``qnn.conv2d`` and ``qnn.dense`` with
constant symmetric int8 weights over uint8 / int8 data, ``qnn.requantize``,
``qnn.quantize`` / ``qnn.dequantize`` (scalar zero points), ``qnn.add``,
``qnn.concatenate``; and float
operators on integer tensors that oneDNN runs in their data type or the lowering
folds: pooling, reshapes, ``clip``, the int32 ``nn.bias_add`` after a quantized layer.

>>> sorted(QNN_RULES)[:2]
['qnn.add', 'qnn.batch_matmul']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np

from relaykit.byoc import Decline, decline
from relaykit.ir.expr import Call, Constant, Expr, Tuple
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType

__all__ = ["QNN_RULES", "INT_OPS", "check_int8_call"]

Verdict = bool | Decline

_ACT = ("uint8", "int8")
_RANGE = {"uint8": (0, 255), "int8": (-128, 127), "int32": (-(2**31), 2**31 - 1)}
#: Float operators taken on integer tensors (data types they accept).
INT_OPS: dict[str, tuple[str, ...]] = {
    "nn.max_pool2d": ("uint8", "int8", "int32"),
    "nn.avg_pool2d": ("uint8", "int8", "int32"),
    "nn.global_avg_pool2d": ("uint8", "int8", "int32"),
    "nn.global_max_pool2d": ("uint8", "int8", "int32"),
    "reshape": ("uint8", "int8", "int32"),
    "transpose": ("uint8", "int8", "int32"),
    "nn.batch_flatten": ("uint8", "int8", "int32"),
    "squeeze": ("uint8", "int8", "int32"),
    "expand_dims": ("uint8", "int8", "int32"),
    "clip": ("uint8", "int8", "int32"),
    "maximum": ("uint8", "int8"),
    "minimum": ("uint8", "int8"),
    "nn.bias_add": ("int32",),
    "add": ("int32",),
    "cast": ("uint8", "int8", "int32"),
}


def _dtype(expr: Expr) -> str:
    ty = expr.checked_type
    return str(ty.dtype) if isinstance(ty, TensorType) else ""


def _static(expr: Expr) -> bool:
    ty = expr.checked_type
    return isinstance(ty, TensorType) and ty.is_static and len(ty.shape) <= 6


def _shape_of(expr: Expr) -> tuple[int, ...]:
    ty = expr.checked_type
    return tuple(int(d) for d in ty.shape) if isinstance(ty, TensorType) else ()


def _quantized_constant(expr: Expr) -> bool:
    """A ``qnn.quantize`` of a constant (the lowering computes it)."""
    return (
        isinstance(expr, Call)
        and isinstance(expr.op, Op)
        and expr.op.name == "qnn.quantize"
        and isinstance(expr.args[0], Constant)
    )


def _scalar_const(expr: Expr) -> bool:
    if not isinstance(expr, Constant):
        return False
    v = np.asarray(expr.data.numpy()).reshape(-1)
    return v.size >= 1 and bool(np.all(v == v[0]))


def _const(expr: Expr) -> bool:
    return isinstance(expr, Constant)


def _weighted(call: Call) -> Verdict:
    if _dtype(call.args[0]) not in _ACT or _dtype(call.args[1]) != "int8":
        return decline(
            f"{call.op} of {_dtype(call.args[0])} x {_dtype(call.args[1])}: oneDNN's int8 "
            "kernels take uint8 / int8 data and int8 weights"
        )
    if not isinstance(call.args[1], Constant):
        return decline("the int8 weight is not a constant: bind the params")
    if not all(_const(a) for a in call.args[2:]) or not _scalar_const(call.args[2]):
        return decline("quantization parameters must be constants (one input zero point)")
    kernel_zp = call.args[3]
    if not isinstance(kernel_zp, Constant) or np.any(kernel_zp.data.numpy() != 0):
        return decline("asymmetric weights (kernel zero point not 0): oneDNN takes symmetric ones")
    if str(call.attrs.out_dtype) not in ("", "int32"):
        return decline(f"out_dtype {call.attrs.out_dtype}: the accumulator is int32")
    return True


def _qnn_conv2d(call: Call) -> Verdict:
    a = call.attrs
    known = (a.data_layout, a.kernel_layout) in (("NCHW", "OIHW"), ("NHWC", "HWIO"))
    if not known or a.out_layout not in ("", a.data_layout):
        return decline(
            f"layout {a.data_layout}/{a.kernel_layout}: the dnnl backend takes NCHW/OIHW "
            "or NHWC/HWIO"
        )
    return _weighted(call)


def _qnn_dense(call: Call) -> Verdict:
    if len(call.args[1].checked_type.shape) != 2:  # type: ignore[attr-defined]
        return decline("a qnn.dense whose weight is not 2-D")
    return _weighted(call)


def _requantize(call: Call) -> Verdict:
    if not all(_const(a) for a in call.args[1:]):
        return decline("requantize parameters must be constants")
    if not all(_scalar_const(call.args[k]) for k in (2, 3, 4)):
        return decline("requantize: one input zero point, output scale and zero point")
    if _dtype(call.args[0]) not in (*_ACT, "int32") or _dtype(call) not in (*_ACT, "int32"):
        return decline(f"requantize {_dtype(call.args[0])} -> {_dtype(call)}")
    return True


def _quantize(call: Call) -> Verdict:
    if not (_scalar_const(call.args[1]) and _scalar_const(call.args[2])):
        return decline("quantize: per-channel scales or computed parameters")
    if _dtype(call.args[0]) != "float32" or _dtype(call) not in _ACT:
        return decline(f"quantize {_dtype(call.args[0])} -> {_dtype(call)}")
    if str(call.attrs.rounding) not in ("TONEAREST_EVEN", "TONEAREST", "UPWARD"):
        return decline(f"quantize rounding {call.attrs.rounding}")
    return True


def _dequantize(call: Call) -> Verdict:
    if not (_const(call.args[1]) and _scalar_const(call.args[2])):
        return decline("dequantize: computed parameters or per-channel zero points")
    if _dtype(call.args[0]) not in ("uint8", "int8", "int32"):
        return decline(f"dequantize of {_dtype(call.args[0])}")
    return True


def _qnn_add(call: Call) -> Verdict:
    if not all(_scalar_const(a) for a in call.args[2:]):
        return decline("qnn.add: per-channel or computed parameters")
    lhs, rhs = call.args[0].checked_type, call.args[1].checked_type
    if not (isinstance(lhs, TensorType) and isinstance(rhs, TensorType)):
        return decline("qnn.add of non-tensors")
    out = tuple(call.checked_type.shape)  # type: ignore[attr-defined]
    if tuple(lhs.shape) != out and tuple(rhs.shape) != out:
        return decline("qnn.add where neither operand has the result's shape")
    return True


def _int_cast(call: Call) -> Verdict:
    """An integer cast whose values a ``clip`` keeps in the target's range (so saturating
    and wrapping agree)."""
    lo_t, hi_t = _RANGE[_dtype(call)]
    src = call.args[0]
    if isinstance(src, Call) and isinstance(src.op, Op) and src.op.name == "clip":
        bounded = float(src.attrs.a_min) >= lo_t and float(src.attrs.a_max) <= hi_t
        if bounded:
            return True
    if _dtype(src) == "uint8" and _dtype(call) == "int32":
        return True
    return decline(f"a cast to {_dtype(call)} of values that may wrap around (no clip before it)")


def _qnn_batch_matmul(call: Call) -> Verdict:
    if not all(_scalar_const(a) for a in call.args[2:6]):
        return decline("qnn.batch_matmul: per-channel or computed parameters")
    lhs = call.args[0].checked_type
    if not isinstance(lhs, TensorType) or len(lhs.shape) != 3:
        return decline("qnn.batch_matmul of other than 3-D operands")
    depth = int(lhs.shape[1] if call.attrs.transpose_a else lhs.shape[2])
    if depth * 256 * 256 >= 2**31:
        return decline(f"qnn.batch_matmul of depth {depth}: its sums could exceed int32")
    if _dtype(call.args[0]) not in _ACT or _dtype(call.args[1]) not in _ACT:
        return decline("qnn.batch_matmul of other than uint8 / int8 operands")
    if str(call.attrs.out_dtype) not in ("", "int32"):
        return decline(f"out_dtype {call.attrs.out_dtype}: the accumulator is int32")
    return True


def _qnn_concatenate(call: Call) -> Verdict:
    """Tensors of one int8 type, each requantized to the output's parameters (constants)."""
    data, scales, zps = call.args[0], call.args[1], call.args[2]
    if not all(isinstance(t, Tuple) for t in (data, scales, zps)):
        return decline("qnn.concatenate whose tensors or parameters are not tuples")
    fields = list(data.fields)  # type: ignore[attr-defined]
    params = [*scales.fields, *zps.fields, call.args[3], call.args[4]]  # type: ignore[attr-defined]
    if not all(_scalar_const(p) for p in params):
        return decline("qnn.concatenate: per-channel or computed parameters")
    dtypes = {_dtype(f) for f in fields} | {_dtype(call)}
    if len(dtypes) != 1 or not dtypes <= set(_ACT):
        return decline(f"qnn.concatenate of {sorted(dtypes)}: one of uint8 / int8 throughout")
    if not all(_static(f) and _shape_of(f) for f in [*fields, call]):
        return decline("qnn.concatenate: dynamic shapes, scalars or a rank above 6")
    return True


#: QNN operator -> rule.
QNN_RULES: dict[str, Callable[[Call], Verdict]] = {
    "qnn.conv2d": _qnn_conv2d,
    "qnn.dense": _qnn_dense,
    "qnn.requantize": _requantize,
    "qnn.quantize": _quantize,
    "qnn.dequantize": _dequantize,
    "qnn.add": _qnn_add,
    "qnn.mul": _qnn_add,  # the same conditions
    "qnn.batch_matmul": _qnn_batch_matmul,
    "qnn.concatenate": _qnn_concatenate,
}


def _wide(expr: Expr) -> bool:
    """A ``qnn.requantize`` of an 8-bit tensor to int32 with zero output zero point and
    scalar constant parameters (an operand of an add rounded once)."""
    if not (isinstance(expr, Call) and isinstance(expr.op, Op)):
        return False
    if expr.op.name != "qnn.requantize" or _dtype(expr) != "int32":
        return False
    if _dtype(expr.args[0]) not in _ACT or not all(_scalar_const(a) for a in expr.args[1:]):
        return False
    return not np.any(cast(Constant, expr.args[4]).data.numpy())


def _bound(call: Call) -> Verdict:
    """``maximum`` / ``minimum`` of integers and a scalar constant (a relu at the zero
    point): a clip."""
    if not (_scalar_const(call.args[1]) and _dtype(call.args[0]) == _dtype(call)):
        return decline(f"{call.op} of two tensors: only a bound (a scalar constant) is taken")
    if _shape_of(call.args[0]) != _shape_of(call):
        return decline(f"{call.op} by a constant that broadcasts the data to a larger shape")
    return True


def _one_step(call: Call) -> Verdict:
    """The int32 ``add`` of requantized operands the lowering takes as one ``qadd``:
    the operands in one step (the requantizes' output scale) and one of them of the
    result's shape (the other broadcast to it)."""
    wides = [cast(Call, a) for a in call.args if _wide(a)]
    steps = {float(cast(Constant, a.args[3]).data.numpy().reshape(-1)[0]) for a in wides}
    if len(steps) != 1:
        return decline(
            f"add of int32 operands requantized to different steps {sorted(steps)}: "
            "the int8 add takes one"
        )
    if not any(_shape_of(a) == _shape_of(call) for a in call.args):
        return decline("add of int32 operands neither of which has the result's shape")
    return True


def _int_add(call: Call) -> Verdict | None:
    """An int32 ``add``: an 8-bit add rounded once (FakeQuantizationToInteger: requantized
    operands, maybe an int32 constant; one qadd), or a layer's bias."""
    if any(_wide(a) for a in call.args) and all(
        _wide(a) or (_const(a) and _dtype(a) == "int32") for a in call.args
    ):
        return _one_step(call)
    src = call.args[0]
    producer = src.op.name if isinstance(src, Call) and isinstance(src.op, Op) else ""
    if producer not in ("qnn.conv2d", "qnn.dense") or not isinstance(call.args[1], Constant):
        return None  # integer arithmetic of its own: the float rules decline it
    return True


#: Integer operators with a rule of their own (after the data-type check).
_INT_RULES: dict[str, Callable[[Call], Verdict | None]] = {
    "cast": _int_cast,
    "maximum": _bound,
    "minimum": _bound,
    "nn.bias_add": _int_add,
    "add": _int_add,
}


def check_int8_call(call: Call, float_rule: Callable[[Call], Verdict] | None) -> Verdict | None:
    """The verdict on a QNN call or a float operator on integer tensors; None for a
    float32 call or integer arithmetic int8 regions do not fold (the float rules decide)."""
    name = call.op.name if isinstance(call.op, Op) else ""
    if name == "qnn.concatenate":  # tuple arguments: the rule checks each field
        return _qnn_concatenate(call)
    exprs = [*call.args, call]
    rule = QNN_RULES.get(name)
    dtypes = {_dtype(e) for e in exprs if not isinstance(e, Constant)} - {""}
    if rule is None and (dtypes <= {"float32", "bfloat16"} or name not in INT_OPS):
        return None  # a float operator, or one without int8 support: the float rules decide
    if not all(_static(e) or isinstance(e, Constant) for e in exprs):
        return decline("dynamic shapes or a rank above 6 in a quantized operator")
    # scalars: only a quantize of a constant (computed by the lowering) and its use
    quantize_const = name == "qnn.quantize" and isinstance(call.args[0], Constant)
    scalar_args = [a for a in call.args if not isinstance(a, Constant) and not _shape_of(a)]
    scalar_out = isinstance(call.checked_type, TensorType) and not _shape_of(call)
    if not quantize_const and (scalar_out or not all(_quantized_constant(a) for a in scalar_args)):
        return decline("a scalar tensor in a quantized operator (oneDNN takes ranks 1 to 6)")
    if rule is not None:
        return rule(call)
    allowed = INT_OPS[name]
    if not dtypes <= set(allowed):
        return decline(f"{name} on {sorted(dtypes)} tensors: no int8 primitive in this backend")
    if name in _INT_RULES:
        return _INT_RULES[name](call)
    return True if float_rule is None else float_rule(call)
