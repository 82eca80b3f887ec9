"""``qnn.conv2d`` and ``qnn.dense`` rewritten for the CPU in scope (their
``FTVMQnnLegalize`` hooks, run by ``relay.qnn.transform.Legalize``), as TVM does:

- an x86 CPU with fast 8-bit arithmetic (an ``-mcpu`` with SSE4.2, such as
  ``skylake-avx512`` or ``cascadelake``) wants uint8 data and int8 weights: an operand
  of the other signedness is moved by 128, its zero point with it;
- an ARM CPU wants data and weights of one dtype (the data is moved by 128), unless it
  lacks dot-product instructions, in which case (as on an x86 CPU without fast 8-bit
  arithmetic) the operator becomes ``nn.conv2d`` / ``nn.dense`` of the int16 operands
  minus their zero points.

On CUDA both operands become int8 (Vulkan: one dtype). Each rewrite computes the
same int32 results. With no target in scope, or another kind (``c``), the operators
stay as they are.

>>> from relaykit.target import Target
>>> _fast_int8_x86(Target("llvm -mcpu=cascadelake")), _fast_int8_x86(Target("llvm"))
(True, False)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant, Expr, const
from relaykit.ir.op import default_registry, register_op_attr
from relaykit.ir.types import TensorType
from relaykit.op.define import make_attrs
from relaykit.target import Target

__all__ = ["legalize_qnn_conv2d", "legalize_qnn_dense"]

#: x86 CPUs (LLVM names) without SSE4.2; any other named x86 CPU has it
_NO_SSE42 = {"generic", "x86-64", "i386", "i486", "i586", "i686", "pentium4", "core2",
             "penryn", "athlon64", "k8", "btver1", "bonnell", "atom"}  # fmt: skip


def _attr(t: Target, key: str) -> str:
    value = t.attrs.get(key, "")
    return str(value) if value is not None else ""


def _mattr(t: Target) -> tuple[str, ...]:
    return tuple(str(a) for a in (t.mattr or ()))


def _is_arm(t: Target) -> bool:
    triple = _attr(t, "mtriple")
    return _attr(t, "device") == "arm_cpu" or triple.startswith(("aarch64", "arm"))


def _has_asimd(t: Target) -> bool:
    triple = _attr(t, "mtriple")
    return triple.startswith("aarch64") or "+neon" in _mattr(t)


def _has_dotprod(t: Target) -> bool:
    return "+dotprod" in _mattr(t)


def _fast_int8_x86(t: Target) -> bool:
    mcpu = str(t.mcpu or "")
    return bool(mcpu) and mcpu not in _NO_SSE42


def _target() -> Target | None:
    t = Target.current(allow_none=True)
    return t if t is not None and str(t.kind) in ("llvm", "cuda", "vulkan") else None


def _shift(data: Expr, zero_point: Expr, dtype: str) -> tuple[Expr, Expr]:
    """``data`` moved by 128 into ``dtype`` (uint8 up, int8 down), and its zero point."""
    shift = 128 if dtype == "uint8" else -128
    cast = default_registry.get("cast")
    add = default_registry.get("add")
    wide = Call(cast, [data], Attrs({"dtype": "int32"}))
    moved = Call(add, [wide, const(shift, "int32")])
    out = Call(cast, [moved], Attrs({"dtype": dtype}))
    if isinstance(zero_point, Constant):
        zp: Expr = const(np.asarray(zero_point.data.numpy()).astype("int64") + shift, "int32")
    else:
        zp = Call(add, [zero_point, const(shift, "int32")])
    return out, zp


def _qnn(name: str, inputs: Sequence[Expr], attrs: Attrs) -> Expr:
    return Call(default_registry.get(name), list(inputs), attrs)


def _to_uint8_int8(
    name: str, attrs: Attrs, inputs: Sequence[Expr], types: Sequence[Any]
) -> Expr | None:
    data_t, kernel_t = types[0].dtype, types[1].dtype
    if data_t == "uint8" and kernel_t == "int8":
        return None
    data, kernel, dzp, kzp, dscale, kscale = inputs
    if data_t == "int8":
        data, dzp = _shift(data, dzp, "uint8")
    if kernel_t == "uint8":
        kernel, kzp = _shift(kernel, kzp, "int8")
    return _qnn(name, [data, kernel, dzp, kzp, dscale, kscale], attrs)


def _to_int8(name: str, attrs: Attrs, inputs: Sequence[Expr], types: Sequence[Any]) -> Expr | None:
    data_t, kernel_t = types[0].dtype, types[1].dtype
    if data_t == "int8" and kernel_t == "int8":
        return None
    data, kernel, dzp, kzp, dscale, kscale = inputs
    if data_t == "uint8":
        data, dzp = _shift(data, dzp, "int8")
    if kernel_t == "uint8":
        kernel, kzp = _shift(kernel, kzp, "int8")
    return _qnn(name, [data, kernel, dzp, kzp, dscale, kscale], attrs)


def _gpu(
    name: str, t: Target, attrs: Attrs, inputs: Sequence[Expr], types: Sequence[Any]
) -> Expr | None:
    if str(t.kind) == "vulkan":
        return _to_same(name, attrs, inputs, types)
    return _to_int8(name, attrs, inputs, types)


def _to_same(name: str, attrs: Attrs, inputs: Sequence[Expr], types: Sequence[Any]) -> Expr | None:
    data_t, kernel_t = types[0].dtype, types[1].dtype
    if data_t == kernel_t:
        return None
    data, kernel, dzp, kzp, dscale, kscale = inputs
    data, dzp = _shift(data, dzp, kernel_t)
    return _qnn(name, [data, kernel, dzp, kzp, dscale, kscale], attrs)


def _int16(name: str, attrs: Attrs, inputs: Sequence[Expr], types: Sequence[Any]) -> Expr:
    """``name`` (``nn.conv2d`` / ``nn.dense``) of the int16 operands minus zero points."""
    data, kernel, dzp, kzp = inputs[:4]
    cast = default_registry.get("cast")
    sub = default_registry.get("subtract")

    def i16(e: Expr) -> Expr:
        return Call(cast, [e], Attrs({"dtype": "int16"}))

    shifted_data = Call(sub, [i16(data), i16(dzp)])
    kzp_t = types[3]
    if isinstance(kzp_t, TensorType) and len(kzp_t.shape) == 0:
        shifted_kernel: Expr = Call(sub, [i16(kernel), i16(kzp)])
    else:  # per output channel zero points
        layout = str(attrs.get("kernel_layout", "OI"))
        axis = layout.index("O")
        neg = Call(default_registry.get("negative"), [i16(kzp)])
        shifted_kernel = Call(
            default_registry.get("nn.bias_add"), [i16(kernel), neg], Attrs({"axis": axis})
        )
    op = default_registry.get(name)
    return Call(op, [shifted_data, shifted_kernel], make_attrs(op, dict(attrs)))


def _depthwise(attrs: Attrs, types: Sequence[Any]) -> bool:
    data, kernel = types[0], types[1]
    groups = int(attrs.groups)
    ic = data.shape[str(attrs.data_layout).index("C")]
    ki = kernel.shape[str(attrs.kernel_layout).index("I")]
    return groups > 1 and ic == groups and ki == 1


def legalize_qnn_conv2d(attrs: Attrs, inputs: Sequence[Expr], types: Sequence[Any]) -> Expr | None:
    """``qnn.conv2d`` for the target in scope (module docs)."""
    t = _target()
    if t is None:
        return None
    if str(t.kind) != "llvm":
        return _gpu("qnn.conv2d", t, attrs, inputs, types)
    if _is_arm(t):
        int8_nhwc = not _depthwise(attrs, types) and attrs.data_layout == "NHWC"
        if _has_asimd(t) and not (int8_nhwc or _has_dotprod(t)):
            return _int16("nn.conv2d", attrs, inputs, types)
        return _to_same("qnn.conv2d", attrs, inputs, types)
    if _fast_int8_x86(t):
        return _to_uint8_int8("qnn.conv2d", attrs, inputs, types)
    return _int16("nn.conv2d", attrs, inputs, types)


def legalize_qnn_dense(attrs: Attrs, inputs: Sequence[Expr], types: Sequence[Any]) -> Expr | None:
    """``qnn.dense`` for the target in scope (module docs)."""
    t = _target()
    if t is None:
        return None
    if str(t.kind) != "llvm":
        return _gpu("qnn.dense", t, attrs, inputs, types)
    if _is_arm(t):
        if _has_asimd(t) and not _has_dotprod(t):
            return _int16("nn.dense", attrs, inputs, types)
        return _to_same("qnn.dense", attrs, inputs, types)
    if _fast_int8_x86(t):
        return _to_uint8_int8("qnn.dense", attrs, inputs, types)
    return _int16("nn.dense", attrs, inputs, types)


_HOOKS: dict[str, Callable[..., Expr | None]] = {
    "qnn.conv2d": legalize_qnn_conv2d,
    "qnn.dense": legalize_qnn_dense,
}
for _name, _fn in _HOOKS.items():
    register_op_attr(_name, "FTVMQnnLegalize", _fn, 10)
