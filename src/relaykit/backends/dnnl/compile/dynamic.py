"""Lowering of the dynamic-quantization composites (``dnnl.dynamic_quantize``,
``dnnl.dynamic_dense``, made by
:mod:`relaykit.backends.dnnl.partition.dynamic`).

A quantization becomes two nodes: ``dynparams`` (the input's range, then its scale and
zero point as ``DynamicQuantizeLinear`` computes them, into a two-element int32 tensor:
the scale's float32 bits, then the zero point) and ``dynquant`` (the uint8 tensor,
``saturate(round(x / scale) + zp)``, halves to even). Each dense reading it is a
``qdense`` whose second input is that parameter tensor: oneDNN's int8 matmul reads the
source scale and zero point at run time, the weight scales and the bias are constants,
and it writes float32: ``dst = scale * weight_scale[n] * sum((q - zp) * w) + bias[n]``,
what ``MatMulInteger``, ``Cast``, ``Mul`` and ``Add`` compute.

>>> sorted(DYNAMIC_COMPOSITES)
['dnnl.dynamic_dense', 'dnnl.dynamic_quantize']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from relaykit.backends.dnnl.run.program import Program
from relaykit.errors import CodegenError
from relaykit.ir.expr import Call, Constant, Expr, Function
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType

__all__ = ["DYNAMIC_COMPOSITES", "DYNAMIC_QUANTIZE", "DYNAMIC_DENSE"]

DYNAMIC_QUANTIZE = "dnnl.dynamic_quantize"
DYNAMIC_DENSE = "dnnl.dynamic_dense"


class _Lowerer(Protocol):
    p: Program

    def tensor(self, v: Any, what: str) -> int: ...
    def emit(self, op: str, inputs: list[int], shape: tuple[int, ...], **attrs: Any) -> int: ...


def _shape(expr: Expr) -> tuple[int, ...]:
    ty = expr.checked_type
    if not isinstance(ty, TensorType):
        raise CodegenError("dnnl: a dynamic quantization composite of a non-tensor")
    return tuple(int(d) for d in ty.shape)


def _quantize(lw: _Lowerer, func: Function, args: list[Any]) -> Any:
    if len(args) != 1:
        raise CodegenError("dnnl: a dynamic_quantize composite takes one tensor")
    x = lw.tensor(args[0], "dynamic_quantize input")
    params = lw.emit("dynparams", [x], (2,))
    lw.p.dtypes[params] = "int32"
    q = lw.emit("dynquant", [x, params], lw.p.shapes[x])
    lw.p.dtypes[q] = "uint8"
    return (q, params, params)  # the scale and zero point travel as one tensor


def _name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _const_values(e: Expr) -> np.ndarray:
    if not isinstance(e, Constant):
        raise CodegenError("dnnl: a dynamic_dense composite with a computed weight scale or bias")
    return np.asarray(e.data.numpy(), dtype=np.float64).reshape(-1)


def _dense(lw: _Lowerer, func: Function, args: list[Any]) -> Any:
    if len(args) != 3:
        raise CodegenError("dnnl: a dynamic_dense composite takes q, scale and zero point")
    q = lw.tensor(args[0], "dynamic_dense data")
    params = lw.tensor(args[1], "dynamic_dense parameters")
    scale = func.params[1]
    calls = [n for n in post_order(func.body, skip=lambda n: type(n) is Function) if _name(n)]
    dense = next((n for n in calls if _name(n) == "qnn.dense"), None)
    factor = next(
        (n for n in calls if _name(n) == "multiply" and any(a is scale for a in n.args)),  # type: ignore[attr-defined]
        None,
    )
    if dense is None or factor is None:
        raise CodegenError("dnnl: a dynamic_dense composite without its dense or scale")
    w = dense.args[1]  # type: ignore[attr-defined]
    if not isinstance(w, Constant):
        raise CodegenError("dnnl: a dynamic_dense composite with a computed weight")
    wv = w.data.numpy().astype(np.float32)  # (N, K)
    units, depth = wv.shape
    ws = _const_values(next(a for a in factor.args if a is not scale))  # type: ignore[attr-defined]
    body = func.body
    bias = None
    if _name(body) == "add":
        bias = _const_values(next(a for a in body.args if isinstance(a, Constant)))  # type: ignore[attr-defined]
        bias = np.broadcast_to(bias, (units,))
    data_shape = _shape(dense.args[0])  # type: ignore[attr-defined]
    x = q
    if lw.p.shapes[q] != data_shape:
        x = lw.emit("reshape", [q], data_shape)
        lw.p.dtypes[x] = "uint8"
    attrs: dict[str, Any] = {
        "weight": lw.p.add_constant(np.ascontiguousarray(wv.T)),
        "bias": -1 if bias is None else lw.p.add_constant(bias.reshape(1, -1)),
        "wscale": [float(s) for s in ws],
    }
    out = lw.emit("qdense", [x, params], (data_shape[0], units), **attrs)
    if data_shape[1] != depth:
        raise CodegenError("dnnl: a dynamic_dense composite whose weight does not match")
    shape = _shape(body)
    return out if shape == lw.p.shapes[out] else lw.emit("reshape", [out], shape)


#: Composite name -> its lowering (returns the composite's value: a tensor or a tuple).
DYNAMIC_COMPOSITES: dict[str, Callable[[_Lowerer, Function, list[Any]], Any]] = {
    DYNAMIC_QUANTIZE: _quantize,
    DYNAMIC_DENSE: _dense,
}
