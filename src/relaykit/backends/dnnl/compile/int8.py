"""Lowering of QNN operators to oneDNN int8 nodes (``qconv``, ``qdense``, ``qreorder``).

A quantized layer reaches the codegen as the operators ``FakeQuantizationToInteger``
and the frontends produce: ``qnn.conv2d`` / ``qnn.dense`` (int32 accumulator), then
``nn.bias_add`` of an int32 bias, ``qnn.requantize`` to uint8 / int8, maybe ``clip``
(ReLU on integers) and a residual ``qnn.add``. Each is lowered as it comes, and folded
into the node before it when that node's result has no other reader, as oneDNN's int8
primitives compute it in one pass:

- the bias becomes the primitive's bias (in real units once the scale is known);
- the requantize becomes the weight scales (input scale times weight scale, per output
  channel) and the output scale and zero point: the layer writes uint8 / int8 directly;
- a ``clip`` of the requantized integers becomes an eltwise clip post-op in real units;
- a ``qnn.add`` is a ``qadd`` node (a oneDNN binary with scales, rounded once; the
  second operand may broadcast, as a quantized bias does), a ``clip`` after it its
  post-op.

What is not folded runs on its own: ``qnn.quantize``, ``qnn.dequantize`` and
``qnn.requantize`` as ``qreorder`` nodes (oneDNN reorders with scales and zero points),
an unfused ``qnn.add`` through float32. Weights travel as float32 constants holding
their integer values (the runtime reorders them once into oneDNN's int8 layout).

>>> sorted(QNN_LOWER)[:3]
['add', 'cast', 'clip']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from relaykit.backends.dnnl.run.program import Node, Program
from relaykit.errors import CodegenError
from relaykit.ir.expr import Call, Constant, Expr
from relaykit.ir.types import TensorType
from relaykit.op.nn.geometry import pad4, pair

from .nhwc import nhwc_view


class _Lowerer(Protocol):
    """What these lowerings use of :mod:`.lower`'s lowerer."""

    p: Program
    uses: dict[int, int]
    qstage: dict[int, str]
    qbias: dict[int, np.ndarray]
    qparams: dict[int, tuple[float, int]]
    qrange: dict[int, tuple[float, float]]
    qview: dict[int, int]

    def tensor(self, v: Any, what: str) -> int: ...
    def emit(self, op: str, inputs: list[int], shape: tuple[int, ...], **attrs: Any) -> int: ...
    def as_rank(self, t: int, ndim: int) -> int: ...
    def const(self, t: int) -> np.ndarray | None: ...


__all__ = ["QNN_LOWER", "INT_DTYPES", "integer_average", "reshape_view"]

INT_DTYPES = ("uint8", "int8", "int32")
_RANGE = {"uint8": (0, 255), "int8": (-128, 127), "int32": (-(2**31), 2**31 - 1)}


def _values(expr: Expr, what: str) -> np.ndarray:
    if not isinstance(expr, Constant):
        raise CodegenError(f"dnnl: the {what} of a quantized operator must be a constant")
    return np.asarray(expr.data.numpy()).reshape(-1)


def _scalar(expr: Expr, what: str) -> float:
    v = _values(expr, what)
    if v.size != 1 and not np.all(v == v[0]):
        raise CodegenError(f"dnnl: the {what} must be one value")
    return float(v[0])


def _shape(expr: Expr) -> tuple[int, ...]:
    ty = expr.checked_type
    assert isinstance(ty, TensorType)
    return tuple(int(d) for d in ty.shape)


def _dtype(expr: Expr) -> str:
    ty = expr.checked_type
    assert isinstance(ty, TensorType)
    return str(ty.dtype)


def op_name_of(call: Call) -> str:
    return str(getattr(call.op, "name", ""))


def _producer(lw: _Lowerer, t: int) -> Node | None:
    for node in reversed(lw.p.nodes):
        if node.out == t:
            return node
    return None


#: Nodes a requantize, clip or cast after them folds into.
_FOLDING = ("qconv", "qdense", "qadd", "qmatmul")


def _foldable(lw: _Lowerer, expr: Expr, t: int, *stages: str) -> Node | None:
    """The qconv / qdense / qadd node writing ``t`` in one of ``stages`` when ``expr`` (its value)
    has no other reader, else None."""
    if lw.uses.get(id(expr), 0) != 1 or t in lw.p.outputs:
        return None
    node = _producer(lw, lw.qview.get(t, t))  # an NHWC layer: the NCHW node behind the view
    if node is None or node.op not in _FOLDING or lw.qstage.get(t) not in stages:
        return None
    return node


def _retype(lw: _Lowerer, t: int, dtype: str) -> None:
    """The data type a folded layer now writes, for ``t`` and the result behind its view."""
    lw.p.dtypes[t] = dtype
    if t in lw.qview:
        lw.p.dtypes[lw.qview[t]] = dtype


def _bias(lw: _Lowerer, node: Node, bias: np.ndarray) -> int:
    """The bias constant of a qconv (C,) or qdense (1, N)."""
    b = bias.astype(np.float32)
    return lw.p.add_constant(b if node.op == "qconv" else b.reshape(1, -1))


def _convert(value: np.ndarray, dtype: str, attrs: dict[str, Any]) -> np.ndarray:
    """What a ``qreorder`` node makes of ``value`` (halves rounded to even, saturated)."""
    v = value.astype(np.float64)
    scale = np.asarray(attrs.get("src_scale") or [1.0], dtype=np.float64)
    if scale.size > 1:
        shape = [1] * v.ndim
        shape[int(attrs.get("axis", 1))] = scale.size
        scale = scale.reshape(shape)
    v = scale * (v - float(attrs.get("src_zp") or 0))
    if dtype != "float32":
        v = np.rint(v / float(attrs.get("dst_scale") or 1.0)) + float(attrs.get("dst_zp") or 0)
        v = np.clip(v, *_RANGE[dtype])
    return v.astype(np.float32)


def _qreorder(lw: _Lowerer, x: int, shape: tuple[int, ...], dtype: str, **attrs: Any) -> int:
    value = lw.p.constants.get(x)
    if value is not None:  # a constant: converted here (as the runtime would)
        return lw.p.add_constant(_convert(value, dtype, attrs))
    out = lw.emit("qreorder", [x], shape, **{k: v for k, v in attrs.items() if v is not None})
    lw.p.dtypes[out] = dtype
    return out


def integer_average(
    lw: _Lowerer, expr: Expr, x: int, dtype: str, pool: Callable[[int], int]
) -> int:
    """An average pooling of integers ``x`` (the value of ``expr``) as the frameworks
    define a quantized average (ONNX's DequantizeLinear, AveragePool, QuantizeLinear;
    torch's quantized pools): the mean of the real values, rounded once, halves to even,
    then the zero point added. The frontends give it as a requantize (or cast) of the
    input to the result's parameters in int32, then the pool: when that conversion is
    this pool's alone it writes float32 without its rounding and zero point, else the
    integers are converted (exactly). ``pool(t)`` emits the float pool of ``t``. (The
    host averages the int32 values as they come and truncates.)"""
    node = _producer(lw, x)
    zp = 0
    if (
        node is not None and node.op == "qreorder" and lw.p.dtype(x) == "int32"
        and lw.uses.get(id(expr), 0) == 1 and x not in lw.p.outputs
    ):  # fmt: skip
        zp = int(node.attrs.pop("dst_zp", 0) or 0)
        scale = node.attrs.pop("dst_scale", None)
        if scale:
            node.attrs["src_scale"] = [s / scale for s in node.attrs.get("src_scale", [1.0])]
        lw.p.dtypes[x] = "float32"
        f = x
    else:
        f = _qreorder(lw, x, lw.p.shapes[x], "float32")
    pooled = pool(f)
    return _qreorder(lw, pooled, lw.p.shapes[pooled], dtype, dst_zp=zp or None)


# -- the layers -------------------------------------------------------------------------------


def _weighted(lw: _Lowerer, call: Call, args: list[Any], conv: bool) -> int:
    x = lw.tensor(args[0], "qnn data")
    nhwc = conv and call.attrs.data_layout == "NHWC"
    weight = call.args[1]
    if not isinstance(weight, Constant):
        raise CodegenError("dnnl: int8 weights must be constants (bind the params)")
    if np.any(_values(call.args[3], "kernel zero point") != 0):
        raise CodegenError("dnnl: int8 weights must be symmetric (kernel zero point 0)")
    wv = weight.data.numpy().astype(np.float32)
    if nhwc:  # HWIO -> OIHW; the data seen as NCHW (a view)
        wv = np.ascontiguousarray(wv.transpose(3, 2, 0, 1))
        x = nhwc_view(lw, x, True)
    w = lw.p.add_constant(wv if conv else wv.T)  # qdense runs as a matmul: (K, N)
    src_zp = round(_scalar(call.args[2], "input zero point"))
    attrs: dict[str, Any] = {"weight": w, "bias": -1}
    if src_zp:
        attrs["src_zp"] = src_zp
    if conv:
        a = call.attrs
        attrs.update(strides=list(pair(a.strides)), dilation=list(pair(a.dilation)),
                     pad=list(pad4(a.padding)), groups=int(a.groups))  # fmt: skip
    shape = _shape(call)
    if nhwc:
        shape = (shape[0], shape[3], shape[1], shape[2])
    out = lw.emit("qconv" if conv else "qdense", [x], shape, **attrs)
    lw.p.dtypes[out] = "int32"
    if nhwc:
        inner, out = out, nhwc_view(lw, out, False)
        lw.qview[out] = inner
    lw.qstage[out] = "acc"
    return out


def reshape_view(lw: _Lowerer, source: Expr, x: int, out: int) -> None:
    """Let the folds reach a ``qdense`` through a reshape of its int32 result that keeps
    the last axis (an encoder's dense runs on (tokens, features), its result is read as
    (batch, tokens, features)): ``out`` becomes a view of ``x``, as an NHWC view of a
    ``qconv`` is, so the requantize after it is the layer's output scales."""
    stage = lw.qstage.get(x)
    if stage not in ("acc", "biased") or x in lw.qview or x in lw.p.outputs:
        return
    node = _producer(lw, x)
    if lw.uses.get(id(source), 0) != 1 or node is None or node.op not in ("qdense", "qmatmul"):
        return
    if lw.p.shapes[x][-1] != lw.p.shapes[out][-1]:
        return
    lw.qview[out] = x
    lw.qstage[out] = stage
    if x in lw.qbias:
        lw.qbias[out] = lw.qbias[x]


def _qnn_conv2d(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    return _weighted(lw, call, args, conv=True)


def _qnn_dense(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    return _weighted(lw, call, args, conv=False)


def _wide_operands(call: Call) -> bool:
    """An int32 add of a requantized tensor and another (or an int32 constant): not a
    layer's accumulator plus its bias."""
    kinds = [
        "q" if isinstance(a, Call) and op_name_of(a) == "qnn.requantize" else
        "c" if isinstance(a, Constant) else "x"
        for a in call.args
    ]  # fmt: skip
    return "x" not in kinds and "q" in kinds


def _wide_add(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    """An int32 ``add`` of two 8-bit tensors each requantized to int32 at one fine step
    (FakeQuantizationToInteger's add rounded once): one ``qadd`` of the 8-bit tensors
    writing int32 in that step (float, rounded once; a requantize read elsewhere too
    stays, else it is dropped). A requantize after it makes the qadd write
    its own output instead (:func:`_requantize`)."""
    sources, s, z, step = [], [], [], None
    for expr, v in zip(call.args, args, strict=True):
        if isinstance(expr, Constant):  # int32 in the fine step (a bias): after the other
            continue
        node = _producer(lw, lw.tensor(v, "add operand"))
        scales = node.attrs.get("src_scale", []) if node is not None else []
        if node is None or node.op != "qreorder" or len(scales) != 1 or node.attrs.get("dst_zp"):
            raise CodegenError("dnnl: an int32 add of operands that are not requantized 8-bit")
        if step is not None and node.attrs["dst_scale"] != step:
            raise CodegenError("dnnl: an int32 add of operands in two different steps")
        step = float(node.attrs["dst_scale"])
        if lw.uses.get(id(expr), 0) == 1 and node.out not in lw.p.outputs:
            lw.p.nodes.remove(node)  # read by this add alone: the qadd reads its source
        sources.append(node.inputs[0])
        s.append(float(scales[0]))
        z.append(int(node.attrs.get("src_zp") or 0))
    if step is None:
        raise CodegenError("dnnl: an int32 add of two constants")
    for expr, v in zip(call.args, args, strict=True):
        if isinstance(expr, Constant):  # values in the step itself, as float32
            sources.append(lw.tensor(v, "add operand"))
            s.append(step)
            z.append(0)
    shape = _shape(call)
    a, b = sources
    if lw.p.shapes[a] != shape:  # the operand of the output's shape first (add commutes)
        a, b, s, z = b, a, [s[1], s[0]], [z[1], z[0]]
    if lw.p.shapes[a] != shape or len(lw.p.shapes[b]) > len(shape):
        raise CodegenError("dnnl: an int32 add where neither operand has the result's shape")
    attrs: dict[str, Any] = {"s0": s[0], "s1": s[1], "dst_scale": step}
    for key, zp in (("z0", z[0]), ("z1", z[1])):
        if zp:
            attrs[key] = zp
    out = lw.emit("qadd", [a, lw.as_rank(b, len(shape))], shape, **attrs)
    lw.p.dtypes[out] = "int32"
    lw.qstage[out] = "wide"
    lw.qparams[out] = (float(step or 1.0), 0)
    lw.qrange[out] = _RANGE["int32"]
    return out


def _bias_add(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    """``nn.bias_add``, or ``add`` of a constant (per channel), on a layer's accumulator;
    an ``add`` of two requantized 8-bit tensors is :func:`_wide_add`."""
    if op_name_of(call) == "add" and _wide_operands(call):
        return _wide_add(lw, call, args)
    x = lw.tensor(args[0], "bias_add data")
    node = _foldable(lw, call.args[0], x, "acc")
    if not isinstance(call.args[1], Constant):
        raise CodegenError("dnnl: an int32 bias must be a constant")
    if node is None:  # the accumulator has other readers: an add of its own, exact in float32
        shape = _shape(call)
        f = _qreorder(lw, x, shape, "float32")
        b = lw.p.add_constant(call.args[1].data.numpy().astype(np.float32))
        if op_name_of(call) == "nn.bias_add":
            b = lw.p.add_constant(
                lw.p.constants[b].reshape(
                    (-1,) + (1,) * (len(shape) - 1 - int(call.attrs.axis) % len(shape))
                )
            )
        total = lw.emit("binary", [f, lw.as_rank(b, len(shape))], shape, alg="add")
        return _qreorder(lw, total, shape, "int32")
    bias = call.args[1].data.numpy().astype(np.float64).reshape(-1)
    channels = lw.p.shapes[node.out][1]  # (N, C, H, W) or (M, N)
    if bias.size == 1:
        bias = np.full(channels, bias[0])
    if bias.size != channels:
        raise CodegenError(f"dnnl: a bias of {bias.size} values for {channels} channels")
    node.attrs["bias"] = _bias(lw, node, bias)
    lw.qbias[x] = bias
    lw.qstage[x] = "biased"
    return x


def _requantize(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    x = lw.tensor(args[0], "requantize data")
    in_scale = _values(call.args[1], "input scale").astype(np.float64)
    in_zp = _scalar(call.args[2], "input zero point")
    out_scale = _scalar(call.args[3], "output scale")
    out_zp = round(_scalar(call.args[4], "output zero point"))
    dtype = str(call.attrs.out_dtype)
    wide = _foldable(lw, call.args[0], x, "wide")
    if (
        wide is not None and in_zp == 0 and in_scale.size == 1
        and float(in_scale[0]) == float(wide.attrs["dst_scale"])
    ):  # fmt: skip
        wide.attrs["dst_scale"] = out_scale  # the qadd writes this requantize's output
        if out_zp:
            wide.attrs["dst_zp"] = out_zp
        _retype(lw, x, dtype)
        lw.qstage[x] = "scaled"
        lw.qparams[x] = (out_scale, out_zp)
        lw.qrange[x] = _RANGE[dtype]
        return x
    node = _foldable(lw, call.args[0], x, "acc") or _foldable(lw, call.args[0], x, "biased")
    ndim = len(_shape(call))
    per_channel_elsewhere = in_scale.size > 1 and int(call.attrs.axis) % ndim != ndim - 1
    if node is not None and node.op == "qdense" and per_channel_elsewhere:
        node = None  # a dense's scales are per output feature (its last axis)
    if node is not None and node.op == "qmatmul" and in_scale.size > 1:
        node = None  # one scale for a matmul of two activations
    if node is not None and in_zp == 0:
        node.attrs["wscale"] = [float(s) for s in in_scale]
        bias = lw.qbias.get(x)
        if bias is not None:
            scale = np.broadcast_to(in_scale, bias.shape)
            node.attrs["bias"] = _bias(lw, node, bias * scale)
        node.attrs["dst_scale"] = out_scale
        if out_zp:
            node.attrs["dst_zp"] = out_zp
        _retype(lw, x, dtype)
        lw.qstage[x] = "scaled"
        lw.qparams[x] = (out_scale, out_zp)
        lw.qrange[x] = _RANGE[dtype]
        return x
    return _qreorder(
        lw, x, _shape(call), dtype, src_scale=[float(s) for s in in_scale],
        axis=int(call.attrs.axis) % len(_shape(call)), src_zp=round(in_zp) or None,
        dst_scale=out_scale, dst_zp=out_zp or None,
    )  # fmt: skip


def _quantize(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    x = lw.tensor(args[0], "quantize data")
    zp = round(_scalar(call.args[2], "zero point"))
    data = call.args[0]
    if isinstance(data, Constant):  # computed here (halves to even, as oneDNN rounds)
        lo, hi = _RANGE[str(call.attrs.out_dtype)]
        q = np.rint(data.data.numpy().astype(np.float64) / _scalar(call.args[1], "scale")) + zp
        return lw.p.add_constant(np.clip(q, lo, hi).astype(np.float32))
    return _qreorder(lw, x, _shape(call), str(call.attrs.out_dtype),
                     dst_scale=_scalar(call.args[1], "scale"), dst_zp=zp or None)  # fmt: skip


def _dequantize(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    x = lw.tensor(args[0], "dequantize data")
    scale = _values(call.args[1], "scale")
    zp = round(_scalar(call.args[2], "zero point"))
    ndim = len(_shape(call))
    return _qreorder(lw, x, _shape(call), "float32", src_scale=[float(s) for s in scale],
                     axis=int(call.attrs.axis) % ndim, src_zp=zp or None)  # fmt: skip


def _clip(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    return _clipped(lw, call, args, float(call.attrs.a_min), float(call.attrs.a_max))


def _bound(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    """``maximum`` / ``minimum`` of integers and a scalar constant (a relu at the zero
    point, as FakeQuantizationToInteger writes it): a clip."""
    c = _scalar(call.args[1], "bound")
    if op_name_of(call) == "maximum":
        return _clipped(lw, call, args, c, float(_RANGE[_dtype(call)][1]))
    return _clipped(lw, call, args, float(_RANGE[_dtype(call)][0]), c)


def _clipped(lw: _Lowerer, call: Call, args: list[Any], lo: float, hi: float) -> int:
    x = lw.tensor(args[0], "clip data")
    dtype = _dtype(call)
    node = _foldable(lw, call.args[0], x, "scaled", "summed")
    if node is not None:
        lo_t, hi_t = lw.qrange[x]
        if lo <= lo_t and hi >= hi_t:
            return x  # the saturation to the data type does it
        lw.qrange[x] = (max(lo, lo_t), min(hi, hi_t))
        scale, zp = lw.qparams[x]
        # real units, before the output scale: y = (q - zp) * scale
        node.post.append({"op": "clip", "alpha": (max(lo, lo_t) - zp) * scale,
                          "beta": (min(hi, hi_t) - zp) * scale})  # fmt: skip
        return x
    # elsewhere: through float32 (exact for integers)
    shape = _shape(call)
    f = _qreorder(lw, x, shape, "float32")
    c = lw.emit("eltwise", [f], shape, alg="clip", alpha=lo, beta=hi)
    return _qreorder(lw, c, shape, dtype)


def _cast(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    """An integer cast of values already in the target's range (the rules check that a
    ``clip`` bounds them): the layer writes the target type, or a saturating reorder."""
    x = lw.tensor(args[0], "cast data")
    dtype = _dtype(call)
    node = _foldable(lw, call.args[0], x, "scaled", "summed")
    lo_t, hi_t = _RANGE[dtype]
    if node is not None:
        lo, hi = lw.qrange[x]
        if lo >= lo_t and hi <= hi_t:
            _retype(lw, x, dtype)
            lw.qrange[x] = (lo, hi)
            return x
    return _qreorder(lw, x, _shape(call), dtype)


def _qnn_add(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    """A quantized add (one operand of the output's shape, the other the same or
    broadcasting to it): one ``qadd`` node (float,
    rounded once into the output's type, as ONNX's QLinearAdd and torch's quantized add
    compute it). Not a ``sum`` post-op of the layer before: that would skip the rounding
    of the layer's own output, a one-step difference on many elements that grows from
    one residual block to the next."""
    lhs, rhs = lw.tensor(args[0], "qnn.add lhs"), lw.tensor(args[1], "qnn.add rhs")
    s = [_scalar(call.args[k], "scale") for k in (2, 4, 6)]
    z = [round(_scalar(call.args[k], "zero point")) for k in (3, 5, 7)]
    shape, dtype = _shape(call), _dtype(call)
    if lw.p.shapes[lhs] != shape:  # the operand of the output's shape first (add commutes)
        lhs, rhs, s, z = rhs, lhs, [s[1], s[0], s[2]], [z[1], z[0], z[2]]
    if dtype == "int32" or lw.p.shapes[lhs] != shape or len(lw.p.shapes[rhs]) > len(shape):
        return _through_float(lw, call, "add", (lhs, rhs), s, z)
    # a broadcast operand (a quantized bias): the binary broadcasts it, rounded once
    rhs = lw.as_rank(rhs, len(shape))
    attrs: dict[str, Any] = {"s0": s[0], "s1": s[1], "dst_scale": s[2]}
    for key, zp in (("z0", z[0]), ("z1", z[1]), ("dst_zp", z[2])):
        if zp:
            attrs[key] = zp
    out = lw.emit("qadd", [lhs, rhs], shape, **attrs)
    lw.p.dtypes[out] = dtype
    lw.qstage[out] = "scaled"
    lw.qparams[out] = (s[2], z[2])
    lw.qrange[out] = _RANGE[dtype]
    return out


def _through_float(
    lw: _Lowerer, call: Call, alg: str, xs: tuple[int, int], s: list[float], z: list[int]
) -> int:
    """A quantized binary operator as dequantize, the float binary, quantize."""
    shape, dtype = _shape(call), _dtype(call)
    a, b = (
        _qreorder(lw, t, lw.p.shapes[t], "float32", src_scale=[s[k]], src_zp=z[k] or None)
        for k, t in enumerate(xs)
    )
    if lw.p.shapes[a] != shape:  # the runtime broadcasts the second operand
        a, b = b, a
    b = lw.as_rank(b, len(shape))
    result = lw.emit("binary", [a, b], shape, alg=alg)
    return _qreorder(lw, result, shape, dtype, dst_scale=s[2], dst_zp=z[2] or None)


def _qnn_mul(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    """A quantized multiply: by a positive scalar constant (an encoder's 1/sqrt(d), GELU's
    0.5) one ``qreorder`` whose scale carries the factor (rounded once, as a float
    multiply then quantize rounds); otherwise through float."""
    xs = (lw.tensor(args[0], "qnn.mul lhs"), lw.tensor(args[1], "qnn.mul rhs"))
    s = [_scalar(call.args[k], "scale") for k in (2, 4, 6)]
    z = [round(_scalar(call.args[k], "zero point")) for k in (3, 5, 7)]
    for k in (0, 1):  # by a positive scalar constant: one requantizing reorder
        c, shape = lw.const(xs[1 - k]), _shape(call)
        if c is None or c.size != 1 or lw.p.shapes[xs[k]] != shape:
            continue
        factor = s[1 - k] * (float(c.reshape(-1)[0]) - z[1 - k])
        if factor > 0:
            return _qreorder(lw, xs[k], shape, _dtype(call), src_scale=[s[k] * factor],
                             src_zp=z[k] or None, dst_scale=s[2], dst_zp=z[2] or None)  # fmt: skip
    return _through_float(lw, call, "mul", xs, s, z)


def _qnn_batch_matmul(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    """A quantized batched matmul (attention's Q K^T and P V) as a oneDNN int8 matmul
    (``qmatmul``): the zero points as its attributes, int32 accumulation; a requantize
    after it (through a reshape that keeps the last axis) folds into its output scales
    as a qdense's does. oneDNN's int8 matmul takes int8 weights: a uint8 second operand
    is shifted by 128 into int8 (one exact reorder) and its zero point with it."""
    a, b = lw.tensor(args[0], "qnn.batch_matmul lhs"), lw.tensor(args[1], "qnn.batch_matmul rhs")
    za = round(_scalar(call.args[2], "lhs zero point"))
    zb = round(_scalar(call.args[3], "rhs zero point"))
    if call.attrs.transpose_a:
        ba, k, m = lw.p.shapes[a]
        a = lw.emit("transpose", [a], (ba, m, k), perm=[0, 2, 1])
        lw.p.dtypes[a] = _dtype(call.args[0])
    if call.attrs.transpose_b:
        bb, n, k = lw.p.shapes[b]
        b = lw.emit("transpose", [b], (bb, k, n), perm=[0, 2, 1])
        lw.p.dtypes[b] = _dtype(call.args[1])
    if lw.p.dtype(b) == "uint8":
        b = _qreorder(lw, b, lw.p.shapes[b], "int8", src_zp=128)
        zb -= 128
    attrs: dict[str, Any] = {}
    if za:
        attrs["src_zp"] = za
    if zb:
        attrs["wei_zp"] = zb
    out = lw.emit("qmatmul", [a, b], _shape(call), **attrs)
    lw.p.dtypes[out] = "int32"
    lw.qstage[out] = "acc"
    return out


def _qnn_concatenate(lw: _Lowerer, call: Call, args: list[Any]) -> int:
    """Each tensor requantized to the output's scale and zero point (a ``qreorder``,
    rounded half to even, where its own differ), then one ``concat`` in the int8 type."""
    fields = args[0]
    if not isinstance(fields, tuple):
        raise CodegenError("dnnl: qnn.concatenate of a non-tuple")
    data, scales, zps = call.args[0], call.args[1], call.args[2]
    s = [_scalar(e, "input scale") for e in scales.fields]  # type: ignore[attr-defined]
    z = [round(_scalar(e, "input zero point")) for e in zps.fields]  # type: ignore[attr-defined]
    out_s, out_z = (
        _scalar(call.args[3], "output scale"),
        round(_scalar(call.args[4], "output zero point")),
    )
    shape, dtype = _shape(call), _dtype(call)
    ins = []
    for k, v in enumerate(fields):
        t = lw.tensor(v, "qnn.concatenate field")
        if lw.p.dtype(t) != dtype or s[k] != out_s or z[k] != out_z:
            t = _qreorder(
                lw, t, _shape(data.fields[k]), dtype, src_scale=[s[k]], src_zp=z[k] or None,  # type: ignore[attr-defined]
                dst_scale=out_s, dst_zp=out_z or None,
            )  # fmt: skip
        ins.append(t)
    out = lw.emit("concat", ins, shape, axis=int(call.attrs.axis) % len(shape))
    lw.p.dtypes[out] = dtype
    return out


#: QNN operator (or integer use of a float one) -> its lowering.
QNN_LOWER: dict[str, Callable[[_Lowerer, Call, list[Any]], int]] = {
    "qnn.conv2d": _qnn_conv2d,
    "qnn.dense": _qnn_dense,
    "qnn.requantize": _requantize,
    "qnn.quantize": _quantize,
    "qnn.dequantize": _dequantize,
    "qnn.add": _qnn_add,
    "nn.bias_add": _bias_add,
    "clip": _clip,
    "maximum": _bound,
    "minimum": _bound,
    "qnn.mul": _qnn_mul,
    "qnn.batch_matmul": _qnn_batch_matmul,
    "qnn.concatenate": _qnn_concatenate,
    "add": _bias_add,
    "cast": _cast,
}
