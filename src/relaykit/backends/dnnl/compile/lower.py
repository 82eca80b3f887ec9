"""Lowering: a partitioned ``Compiler="dnnl"`` function to a region :class:`Program`.

Composite functions named in :data:`COMPOSITES` (GELU, layer norm: chains
with no oneDNN primitive operator by operator) become one node each, read from
the composite's name and body; the other composites are expanded into their
operators (the fusion pass, :mod:`.fuse`, makes every fusion from the whole
region, so nothing is lost); each operator becomes oneDNN-level nodes, and
constants become program constants:
``nn.batch_norm`` turns into a per-channel scale and shift, ``nn.bias_add``
into a broadcast add, ``nn.dropout`` into the identity. What a node cannot
express raises :class:`~relaykit.errors.CodegenError`; the target rules
(:mod:`relaykit.backends.dnnl.partition.rules`) decline those operators first, so
partitioned functions always lower.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 8))
>>> f = relay.Function([x], relay.nn.relu(x))
>>> from relaykit.transform import InferType
>>> import relaykit as tvm
>>> f = InferType()(tvm.IRModule.from_expr(f))["main"]
>>> [n.op for n in lower_function(f).nodes]
['eltwise']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Union, cast

import numpy as np

from relaykit.backends.dnnl.run.program import Node, Program
from relaykit.errors import CodegenError
from relaykit.ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, TupleType
from relaykit.op.nn.geometry import pad4, pair
from relaykit.transform.idioms import match_layer_norm

from .dynamic import DYNAMIC_COMPOSITES
from .int8 import INT_DTYPES, QNN_LOWER, integer_average, reshape_view
from .int8_folds import fold_int8
from .nhwc import hwio_as_oihw, nhwc_view

__all__ = [
    "lower_function",
    "op_name",
    "layer_norm_parts",
    "COMPOSITES",
    "ELTWISE_OPS",
    "BINARY_OPS",
    "COMMUTATIVE",
]

Value = Union[int, tuple["Value", ...]]  # noqa: UP007 (a runtime alias)

#: Relay unary operators that are one oneDNN eltwise algorithm (name, alpha, beta).
ELTWISE_OPS: dict[str, Callable[[Any], tuple[str, float, float]]] = {
    "nn.relu": lambda a: ("relu", 0.0, 0.0),
    "nn.leaky_relu": lambda a: ("relu", float(a.alpha), 0.0),
    "clip": lambda a: ("clip", float(a.a_min), float(a.a_max)),
    "sigmoid": lambda a: ("sigmoid", 0.0, 0.0),
    "tanh": lambda a: ("tanh", 0.0, 0.0),
    "exp": lambda a: ("exp", 0.0, 0.0),
    "log": lambda a: ("log", 0.0, 0.0),
    "sqrt": lambda a: ("sqrt", 0.0, 0.0),
    "abs": lambda a: ("abs", 0.0, 0.0),
    "negative": lambda a: ("linear", -1.0, 0.0),
}

#: Relay binary operators and the oneDNN binary algorithm computing them.
BINARY_OPS: dict[str, str] = {
    "add": "add",
    "subtract": "sub",
    "multiply": "mul",
    "divide": "div",
    "maximum": "max",
    "minimum": "min",
}

COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum"})


def _integer(call: Call) -> bool:
    """Whether ``call`` reads or writes an integer tensor (an int8 region's operator)."""
    types = [a.checked_type for a in call.args] + [call.checked_type]
    return any(isinstance(t, TensorType) and str(t.dtype) in INT_DTYPES for t in types)


def _count_uses(root: Expr) -> dict[int, int]:
    uses: dict[int, int] = {id(root): 1}
    skip = lambda n: type(n) is Function or type(n) is Op  # noqa: E731
    for node in post_order(root, skip=skip):
        children: list[Expr] = []
        if isinstance(node, Call):
            children = list(node.args)
        elif isinstance(node, Tuple):
            children = list(node.fields)
        elif isinstance(node, TupleGetItem):
            children = [node.tuple_value]
        for c in children:
            uses[id(c)] = uses.get(id(c), 0) + 1
    return uses


def op_name(call: Call) -> str:
    """The operator name of an operator call."""
    return cast(Op, call.op).name


def _shape(expr: Expr) -> tuple[int, ...]:
    ty = expr.checked_type
    if not isinstance(ty, TensorType):
        raise CodegenError(f"dnnl: expected a tensor, got {ty}")
    return tuple(int(d) for d in ty.shape)


def _along(vec: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = vec.shape[0]
    return vec.reshape(shape)


class _Lowerer:
    def __init__(self) -> None:
        self.p = Program()
        #: How many expressions read each expression (by id): int8 folds need one reader.
        self.uses: dict[int, int] = {}
        #: int8 layers (by output tensor): fold stage, int32 bias, output (scale, zero point).
        self.qstage: dict[int, str] = {}
        self.qbias: dict[int, np.ndarray] = {}
        self.qparams: dict[int, tuple[float, int]] = {}
        self.qrange: dict[int, tuple[float, float]] = {}
        #: NHWC view of a quantized convolution's NCHW result -> that result
        self.qview: dict[int, int] = {}

    # -- values ----------------------------------------------------------------------

    def tensor(self, v: Value, what: str) -> int:
        if not isinstance(v, int):
            raise CodegenError(f"dnnl: {what} is a tuple, expected a tensor")
        return v

    def const(self, t: int) -> np.ndarray | None:
        return self.p.constants.get(t)

    def weight(self, t: int, what: str) -> None:
        """Check that weight ``t`` is a constant or a region input (read at run time)."""
        if self.const(t) is None and t not in self.p.inputs:
            raise CodegenError(
                f"dnnl: {what} weights must be constants or inputs of the region, not computed"
            )

    def emit(self, op: str, inputs: list[int], shape: tuple[int, ...], **attrs: Any) -> int:
        out = self.p.new_tensor(shape)
        self.p.nodes.append(Node(op, list(inputs), out, attrs))
        return out

    def as_rank(self, t: int, ndim: int) -> int:
        """``t`` with leading 1-dims so that it has rank ``ndim`` (broadcast operand)."""
        shape = self.p.shapes[t]
        if len(shape) == ndim:
            return t
        new = (1,) * (ndim - len(shape)) + shape
        c = self.const(t)
        if c is not None:
            return self.p.add_constant(c.reshape(new))
        return self.emit("reshape", [t], new)

    # -- walking ---------------------------------------------------------------------

    def evaluate(self, root: Expr, env: dict[Var, Value]) -> Value:
        memo: dict[int, Value] = {}
        skip = lambda n: type(n) is Function or type(n) is Op  # noqa: E731
        for node in post_order(root, skip=skip):
            memo[id(node)] = self.visit(node, env, memo)
        return memo[id(root)]

    def visit(self, node: Expr, env: dict[Var, Value], memo: dict[int, Value]) -> Value:
        if isinstance(node, Call):
            args = [memo[id(a)] for a in node.args]
            op = node.op
            if isinstance(op, Function):
                composite = COMPOSITES.get(_composite_kind(op))
                if composite is not None:
                    return composite(self, op, args)
                inner = dict(zip(op.params, args, strict=True))
                return self.evaluate(op.body, inner)
            if isinstance(op, Op):
                fn = _LOWER.get(op.name)
                if op.name in QNN_LOWER and (op.name.startswith("qnn.") or _integer(node)):
                    fn = QNN_LOWER[op.name]
                if fn is None:
                    raise CodegenError(f"dnnl: no lowering for operator {op.name}")
                value = fn(self, node, args)
                ty = node.checked_type
                integer = isinstance(ty, TensorType) and str(ty.dtype) in INT_DTYPES
                if isinstance(value, int) and integer and not self.p.is_constant(value):
                    self.p.dtypes[value] = str(cast(TensorType, ty).dtype)
                return value
        elif isinstance(node, Var):
            try:
                return env[node]
            except KeyError:
                raise CodegenError(f"dnnl: free variable {node.name_hint} in a region") from None
        elif isinstance(node, Constant):
            return self.p.add_constant(node.data.numpy())
        elif isinstance(node, Tuple):
            return tuple(memo[id(f)] for f in node.fields)
        elif isinstance(node, TupleGetItem):
            value = memo[id(node.tuple_value)]
            if not isinstance(value, tuple):
                raise CodegenError("dnnl: TupleGetItem of a tensor")
            return value[node.index]
        raise CodegenError(f"dnnl: cannot lower a {type(node).__name__} inside a region")


# -- operator lowerings -----------------------------------------------------------------------


def _conv2d(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    a = call.attrs
    x, w = lw.tensor(args[0], "conv2d data"), lw.tensor(args[1], "conv2d weight")
    lw.weight(w, "conv2d")
    nhwc = a.data_layout == "NHWC"
    out = _shape(call)
    if nhwc:  # oneDNN's convolution on NCHW views of the NHWC tensors
        x, w = nhwc_view(lw, x, True), hwio_as_oihw(lw, w)
        out = (out[0], out[3], out[1], out[2])
    y = lw.emit(
        "conv", [x], out, weight=w, bias=-1, strides=list(pair(a.strides)),
        dilation=list(pair(a.dilation)), pad=list(pad4(a.padding)), groups=int(a.groups),
    )  # fmt: skip
    return nhwc_view(lw, y, False) if nhwc else y


def _conv1d(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    """A 1-D convolution as a 2-D one over a unit height (reshapes are views)."""
    a = call.attrs
    x, w = lw.tensor(args[0], "conv1d data"), lw.tensor(args[1], "conv1d weight")
    weight = lw.const(w)
    if weight is None:
        raise CodegenError("dnnl: conv1d weights must be constants (bind the params)")
    n, c, width = lw.p.shapes[x]
    o, i, k = weight.shape
    x4 = lw.emit("reshape", [x], (n, c, 1, width))
    w4 = lw.p.add_constant(weight.reshape(o, i, 1, k))
    (stride,), (dil,) = tuple(a.strides), tuple(a.dilation)
    left, right = tuple(a.padding)
    out = _shape(call)
    y = lw.emit(
        "conv", [x4], (out[0], out[1], 1, out[2]), weight=w4, bias=-1, strides=[1, int(stride)],
        dilation=[1, int(dil)], pad=[0, int(left), 0, int(right)], groups=int(a.groups),
    )  # fmt: skip
    return lw.emit("reshape", [y], out)


def _conv3d(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    a = call.attrs
    x, w = lw.tensor(args[0], "conv3d data"), lw.tensor(args[1], "conv3d weight")
    lw.weight(w, "conv3d")
    pad = [int(p) for p in a.padding]
    return lw.emit(
        "conv_nd", [x], _shape(call), weight=w, strides=[int(s) for s in a.strides],
        dilation=[int(d) for d in a.dilation], pad_l=pad[:3], pad_r=pad[3:],
        groups=int(a.groups),
    )  # fmt: skip


def _conv_transpose(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    """A transposed convolution as oneDNN's deconvolution; the (I, O/groups, ...) weight is
    rearranged once into oneDNN's (O, I/groups, ...)."""
    a = call.attrs
    x, w = lw.tensor(args[0], "conv_transpose data"), lw.tensor(args[1], "conv_transpose weight")
    weight = lw.const(w)
    if weight is None:
        raise CodegenError("dnnl: transposed convolution weights must be constants")
    n = weight.ndim - 2
    g = int(a.groups)
    ic, ocg, *k = weight.shape
    wt = weight.reshape(g, ic // g, ocg, *k).swapaxes(1, 2).reshape(g * ocg, ic // g, *k)
    if n == 2:
        pt, pl, pb, pr = pad4(a.padding)
        lo, hi = [pt, pl], [pb, pr]
    else:
        pad = [int(p) for p in a.padding]
        lo, hi = pad[:n], pad[n:]
    out_pad = [int(p) for p in (a.output_padding or (0,) * n)]
    return lw.emit(
        "deconv", [x], _shape(call), weight=lw.p.add_constant(np.ascontiguousarray(wt)),
        strides=[int(s) for s in a.strides], dilation=[int(d) for d in a.dilation], pad_l=lo,
        pad_r=[h - p for h, p in zip(hi, out_pad, strict=True)], groups=g,
    )  # fmt: skip


def _dense(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    x, w = lw.tensor(args[0], "dense data"), lw.tensor(args[1], "dense weight")
    lw.weight(w, "dense")
    in_shape = lw.p.shapes[x]
    out = _shape(call)
    if len(in_shape) == 2:
        return lw.emit("dense", [x], out, weight=w, bias=-1)
    weight = lw.const(w)
    if weight is None:
        raise CodegenError("dnnl: a dense layer on N-D data needs a constant weight")
    # N-D data: a matmul with the weight transposed once, broadcast over the batch dims.
    wt = lw.p.add_constant(weight.T.reshape((1,) * (len(out) - 2) + weight.T.shape))
    return lw.emit("matmul", [x, wt], out, bias=-1)


def _batch_matmul(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    a = lw.tensor(args[0], "batch_matmul operand")
    b = lw.tensor(args[1], "batch_matmul operand")
    attrs = call.attrs
    # Transposed operands are views in the runtime (strides), not copies.
    if attrs.transpose_a:
        ba, k, m = lw.p.shapes[a]
        a = lw.emit("transpose", [a], (ba, m, k), perm=[0, 2, 1])
    if attrs.transpose_b:
        bb, n, k = lw.p.shapes[b]
        b = lw.emit("transpose", [b], (bb, k, n), perm=[0, 2, 1])
    return lw.emit("matmul", [a, b], _shape(call), bias=-1)


def _layer_norm_node(
    lw: _Lowerer, x: int, out: tuple[int, ...], eps: float, gamma: Any, beta: Any
) -> int:
    """A layer normalisation node over the last axis (``gamma``/``beta``: arrays or None)."""
    c = out[-1]
    attrs: dict[str, Any] = {"eps": float(eps), "weight": -1, "bias": -1}
    if gamma is not None:
        attrs["weight"] = lw.p.add_constant(np.broadcast_to(np.asarray(gamma).reshape(-1), (c,)))
    if beta is not None:
        attrs["bias"] = lw.p.add_constant(np.broadcast_to(np.asarray(beta).reshape(-1), (c,)))
    return lw.emit("layer_norm", [x], out, **attrs)


def _layer_norm(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    a = call.attrs
    x = lw.tensor(args[0], "layer_norm data")
    out = _shape(call)
    if int(a.axis) % len(out) != len(out) - 1:
        raise CodegenError("dnnl: layer_norm over other than the last axis")
    consts = [lw.const(lw.tensor(v, "layer_norm parameter")) for v in args[1:]]
    if any(c is None for c in consts):
        raise CodegenError("dnnl: layer_norm needs constant gamma and beta (bind the params)")
    gamma = consts[0] if a.scale else None
    beta = consts[1] if a.center else None
    return _layer_norm_node(lw, x, out, float(a.epsilon), gamma, beta)


def _binary(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    name = op_name(call)
    a, b = lw.tensor(args[0], name), lw.tensor(args[1], name)
    out = _shape(call)
    if lw.p.shapes[a] != out:
        if name in COMMUTATIVE and lw.p.shapes[b] == out:
            a, b = b, a
        elif name == "subtract" and (c := lw.const(a)) is not None and c.size == 1:
            # c - x = -1 * x + c
            return lw.emit("eltwise", [b], out, alg="linear", alpha=-1.0, beta=float(c.item()))
        else:
            raise CodegenError(f"dnnl: {name} whose first operand broadcasts")
    b = lw.as_rank(b, len(out))
    return lw.emit("binary", [a, b], out, alg=BINARY_OPS[name])


def _bias_add(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    x, b = lw.tensor(args[0], "bias_add data"), lw.tensor(args[1], "bias_add bias")
    out = _shape(call)
    axis = int(call.attrs.axis) % len(out)
    c = lw.const(b)
    if c is not None:
        bt = lw.p.add_constant(_along(c, axis, len(out)))
    else:
        shape = [1] * len(out)
        shape[axis] = out[axis]
        bt = lw.emit("reshape", [b], tuple(shape))
    return lw.emit("binary", [x, bt], out, alg="add")


def _eltwise(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    alg, alpha, beta = ELTWISE_OPS[op_name(call)](call.attrs)
    x = lw.tensor(args[0], op_name(call))
    return lw.emit("eltwise", [x], _shape(call), alg=alg, alpha=alpha, beta=beta)


def _erf(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    """``erf``: no oneDNN algorithm; the runtime's own loop (see ``lower_erf``)."""
    return lw.emit("erf", [lw.tensor(args[0], "erf")], _shape(call))


def _batch_norm(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    a = call.attrs
    x = lw.tensor(args[0], "batch_norm data")
    params = [lw.tensor(v, "batch_norm parameter") for v in args[1:]]
    consts = [lw.const(t) for t in params]
    out = _shape(call.args[0])
    axis = int(a.axis) % len(out)
    if any(c is None for c in consts):
        return _batch_norm_at_run_time(lw, call, x, params, out, axis)
    gamma, beta, mean, var = (np.asarray(c, np.float64) for c in consts)
    scale = 1.0 / np.sqrt(var + float(a.epsilon))
    if a.scale:
        scale = scale * gamma
    shift = -mean * scale
    if a.center:
        shift = shift + beta
    s = lw.p.add_constant(_along(scale.astype(np.float32), axis, len(out)))
    t = lw.p.add_constant(_along(shift.astype(np.float32), axis, len(out)))
    y = lw.emit("binary", [x, s], out, alg="mul")
    y = lw.emit("binary", [y, t], out, alg="add")
    return (y, lw.tensor(args[3], "mean"), lw.tensor(args[4], "var"))


def _batch_norm_at_run_time(
    lw: _Lowerer, call: Call, x: int, params: list[int], out: tuple[int, ...], axis: int
) -> Value:
    """``(x - mean) * gamma / sqrt(var + eps) + beta`` with the statistics read at run time
    (per-channel vectors viewed along ``axis``)."""
    a = call.attrs
    view = [1] * len(out)
    view[axis] = out[axis]

    def along(t: int) -> int:
        c = lw.const(t)
        if c is not None:
            return lw.p.add_constant(np.asarray(c, np.float32).reshape(view))
        return lw.emit("reshape", [t], tuple(view))

    gamma, beta, mean, var = (along(t) for t in params)
    vshape = tuple(view)
    eps = lw.p.add_constant(np.full(vshape, float(a.epsilon), np.float32))
    std = lw.emit("binary", [var, eps], vshape, alg="add")
    std = lw.emit("eltwise", [std], vshape, alg="sqrt", alpha=0.0, beta=0.0)
    y = lw.emit("binary", [x, mean], out, alg="sub")
    y = lw.emit("binary", [y, std], out, alg="div")
    if a.scale:
        y = lw.emit("binary", [y, gamma], out, alg="mul")
    if a.center:
        y = lw.emit("binary", [y, beta], out, alg="add")
    return (y, params[2], params[3])


def _dropout(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    x = lw.tensor(args[0], "dropout data")
    mask = lw.p.add_constant(np.ones(_shape(call.args[0]), np.float32))
    return (x, mask)


def _pool(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    a = call.attrs
    x = lw.tensor(args[0], op_name(call))
    _n, _c, h, w = lw.p.shapes[x]
    out = _shape(call)
    kh, kw = pair(a.pool_size)
    sh, sw = pair(a.strides)
    dh, dw = pair(a.dilation)
    pt, pl, pb, pr = pad4(a.padding)
    oh, ow = out[2], out[3]
    eh = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - (h + pt + pb))
    ew = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - (w + pl + pr))
    if op_name(call) == "nn.max_pool2d":
        alg = "max"
    elif a.count_include_pad and (eh or ew) == 0:
        alg = "avg_include"
    elif a.count_include_pad and any((pt, pl, pb, pr)):
        raise CodegenError("dnnl: avg_pool2d counting padding with ceil_mode's extra padding")
    else:
        alg = "avg_exclude"
    return _pool_node(
        lw, call, x, out, alg=alg, kernel=[kh, kw], strides=[sh, sw], dilation=[dh, dw],
        pad_l=[pt, pl], pad_r=[pb + eh, pr + ew],
    )  # fmt: skip


def _pool_node(lw: _Lowerer, call: Call, x: int, out: tuple[int, ...], **attrs: Any) -> int:
    """A ``pool`` node; an average of integers is taken in float32 (:func:`.integer_average`)."""
    if attrs["alg"] == "max" or lw.p.dtype(x) == "float32":
        return lw.emit("pool", [x], out, **attrs)
    return integer_average(
        lw,
        call.args[0],
        x,
        str(cast(TensorType, call.checked_type).dtype),
        lambda f: lw.emit("pool", [f], out, **attrs),
    )


def _pool3d(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    """3-D pooling (NCDHW); ceil_mode's extra padding is added at the end of each axis."""
    a = call.attrs
    x = lw.tensor(args[0], op_name(call))
    size, out = lw.p.shapes[x][2:], _shape(call)
    k, s, d = (list(map(int, v)) for v in (a.pool_size, a.strides, a.dilation))
    pad = list(map(int, a.padding))
    lo, hi = pad[:3], pad[3:]
    extra = [
        max(0, (out[2 + i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - (size[i] + lo[i] + hi[i]))
        for i in range(3)
    ]
    if op_name(call) == "nn.max_pool3d":
        alg = "max"
    elif a.count_include_pad and not any(extra):
        alg = "avg_include"
    elif a.count_include_pad and any(pad):
        raise CodegenError("dnnl: avg_pool3d counting padding with ceil_mode's extra padding")
    else:
        alg = "avg_exclude"
    return lw.emit(
        "pool", [x], out, alg=alg, kernel=k, strides=s, dilation=d, pad_l=lo,
        pad_r=[h + e for h, e in zip(hi, extra, strict=True)],
    )  # fmt: skip


def _global_pool(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    x = lw.tensor(args[0], op_name(call))
    _, _, h, w = lw.p.shapes[x]
    alg = "max" if "max" in op_name(call) else "avg_exclude"
    return _pool_node(
        lw, call, x, _shape(call), alg=alg, kernel=[h, w], strides=[1, 1], dilation=[1, 1],
        pad_l=[0, 0], pad_r=[0, 0],
    )  # fmt: skip


def _spatial_mean(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    """A mean over H and W of an NCHW tensor (torch's exported adaptive_avg_pool2d(1)) as
    global average pooling, so the classifier stays in the region."""
    x = lw.tensor(args[0], op_name(call))
    n, c, h, w = lw.p.shapes[x]
    pooled = lw.emit(
        "pool", [x], (n, c, 1, 1), alg="avg_exclude", kernel=[h, w], strides=[1, 1],
        dilation=[1, 1], pad_l=[0, 0], pad_r=[0, 0],
    )  # fmt: skip
    out = _shape(call)
    return pooled if out == (n, c, 1, 1) else lw.emit("reshape", [pooled], out)


def _adaptive_pool(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    x = lw.tensor(args[0], op_name(call))
    _, _, h, w = lw.p.shapes[x]
    out = _shape(call)
    oh, ow = out[2], out[3]
    if h % oh or w % ow:
        raise CodegenError("dnnl: adaptive pooling whose output size does not divide the input")
    alg = "max" if "max" in op_name(call) else "avg_exclude"
    return _pool_node(
        lw, call, x, out, alg=alg, kernel=[h // oh, w // ow], strides=[h // oh, w // ow],
        dilation=[1, 1], pad_l=[0, 0], pad_r=[0, 0],
    )  # fmt: skip


def _softmax(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    x = lw.tensor(args[0], op_name(call))
    out = _shape(call)
    axis = int(call.attrs.axis) % len(out)
    return lw.emit("softmax", [x], out, axis=axis, log=int(op_name(call) == "nn.log_softmax"))


def _concatenate(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    fields = args[0]
    if not isinstance(fields, tuple):
        raise CodegenError("dnnl: concatenate of a non-tuple")
    out = _shape(call)
    axis = int(call.attrs.axis) % len(out)
    ins = [lw.tensor(f, "concatenate field") for f in fields]
    if len(ins) == 1:
        return lw.emit("reshape", ins, out)
    return lw.emit("concat", ins, out, axis=axis)


def _reshape(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    x = lw.tensor(args[0], op_name(call))
    out = _shape(call)
    if lw.p.shapes[x] == out:
        return x
    c = lw.const(x)
    if c is not None:
        return lw.p.add_constant(c.reshape(out))
    view = lw.emit("reshape", [x], out)
    reshape_view(lw, call.args[0], x, view)  # an int8 dense's folds reach through it
    return view


def _copy(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    return lw.tensor(args[0], "copy")


def _transpose(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    x = lw.tensor(args[0], "transpose")
    ndim = len(lw.p.shapes[x])
    axes = call.attrs.axes
    perm = list(reversed(range(ndim))) if axes is None else [int(i) % ndim for i in axes]
    if perm == list(range(ndim)):
        return x
    return lw.emit("transpose", [x], _shape(call), perm=perm)


def _lrn(lw: _Lowerer, call: Call, args: list[Value]) -> Value:
    a = call.attrs
    x = lw.tensor(args[0], "nn.lrn")
    return lw.emit(
        "lrn", [x], _shape(call), size=int(a.size), alpha=float(a.alpha), beta=float(a.beta),
        k=float(a.bias),
    )  # fmt: skip


_LOWER: dict[str, Callable[[_Lowerer, Call, list[Value]], Value]] = {
    "nn.conv2d": _conv2d,
    "nn.conv1d": _conv1d,
    "nn.conv3d": _conv3d,
    "nn.conv2d_transpose": _conv_transpose,
    "nn.conv3d_transpose": _conv_transpose,
    "nn.dense": _dense,
    "nn.batch_matmul": _batch_matmul,
    "nn.layer_norm": _layer_norm,
    "nn.bias_add": _bias_add,
    "nn.batch_norm": _batch_norm,
    "nn.dropout": _dropout,
    "nn.max_pool2d": _pool,
    "nn.avg_pool2d": _pool,
    "nn.max_pool3d": _pool3d,
    "nn.avg_pool3d": _pool3d,
    "nn.global_avg_pool2d": _global_pool,
    "nn.global_max_pool2d": _global_pool,
    "nn.adaptive_avg_pool2d": _adaptive_pool,
    "nn.adaptive_max_pool2d": _adaptive_pool,
    "mean": _spatial_mean,
    "nn.softmax": _softmax,
    "nn.log_softmax": _softmax,
    "nn.lrn": _lrn,
    "concatenate": _concatenate,
    "reshape": _reshape,
    "nn.batch_flatten": _reshape,
    "squeeze": _reshape,
    "expand_dims": _reshape,
    "copy": _copy,
    "erf": _erf,
    "transpose": _transpose,
    **{name: _eltwise for name in ELTWISE_OPS},
    **{name: _binary for name in BINARY_OPS},
}

#: Operators the lowering knows (the rules decide which calls of them are taken).
LOWERED_OPS = frozenset(_LOWER)


# -- composites lowered whole (their operators have no oneDNN primitive one by one) ----------


def _composite_kind(func: Function) -> str:
    name = str(func.attrs.get("Composite", "")) if func.attrs else ""
    for kind in COMPOSITES:
        if name == kind or name.startswith(kind + "_"):
            return kind
    return ""


def _composite_input(lw: _Lowerer, args: list[Value], what: str) -> int:
    if len(args) != 1:
        raise CodegenError(f"dnnl: a {what} composite takes one tensor, got {len(args)} inputs")
    return lw.tensor(args[0], what)


def layer_norm_parts(func: Function) -> tuple[float, Any, Any]:
    """(epsilon, gamma or None, beta or None) of a ``dnnl.layer_norm*`` composite, read
    from its body by the shared recogniser (:func:`relaykit.transform.idioms.match_layer_norm`)
    that accepted it."""
    ty = func.body.checked_type
    m = match_layer_norm(func.body, ty) if isinstance(ty, TensorType) else None
    if m is None or not isinstance(ty, TensorType) or m.axis != len(ty.shape) - 1:
        raise CodegenError("dnnl: a layer_norm composite that is not a layer norm")

    def value(e: Expr | None) -> Any:
        if e is None:
            return None
        if type(e) is not Constant:
            raise CodegenError("dnnl: a layer_norm composite with a computed gamma or beta")
        return e.data.numpy()

    return m.epsilon, value(m.gamma), value(m.beta)


def _layer_norm_composite(lw: _Lowerer, func: Function, args: list[Value]) -> Value:
    x = _composite_input(lw, args, "layer_norm")
    eps, gamma, beta = layer_norm_parts(func)
    return _layer_norm_node(lw, x, _shape(func.body), eps, gamma, beta)


def _gelu_composite(alg: str) -> Callable[[_Lowerer, Function, list[Value]], Value]:
    def lower(lw: _Lowerer, func: Function, args: list[Value]) -> Value:
        x = _composite_input(lw, args, alg)
        return lw.emit("eltwise", [x], _shape(func.body), alg=alg, alpha=0.0, beta=0.0)

    return lower


#: Composite names (and their ``<name>_*`` variants) lowered as one node.
COMPOSITES: dict[str, Callable[[_Lowerer, Function, list[Value]], Value]] = {
    "dnnl.layer_norm": _layer_norm_composite,
    "dnnl.gelu_erf": _gelu_composite("gelu_erf"),
    "dnnl.gelu_tanh": _gelu_composite("gelu_tanh"),
    **DYNAMIC_COMPOSITES,
}


def _flatten(value: Value) -> list[int]:
    if isinstance(value, int):
        return [value]
    out: list[int] = []
    for v in value:
        out.extend(_flatten(v))
    return out


def _input_value(p: Program, ty: Any, name: str) -> Value:
    """Region inputs for a parameter: a tensor, or a tuple of them (flattened in order)."""
    if isinstance(ty, TupleType):
        return tuple(_input_value(p, f, name) for f in ty.fields)
    if not isinstance(ty, TensorType) or not ty.shape:
        raise CodegenError(f"dnnl: region input {name} must be a tensor of rank >= 1, got {ty}")
    t = p.add_input(tuple(int(d) for d in ty.shape))
    if str(ty.dtype) in INT_DTYPES:  # (bfloat16 computes in float32)
        p.dtypes[t] = str(ty.dtype)
    return t


def lower_function(func: Function) -> Program:
    """The region program of a typed ``Compiler="dnnl"`` function (before fusion)."""
    lw = _Lowerer()
    lw.uses = _count_uses(func.body)
    env: dict[Var, Value] = {}
    for param in func.params:
        env[param] = _input_value(lw.p, param.checked_type, param.name_hint)
    outputs = _flatten(lw.evaluate(func.body, env))
    # The runtime writes outputs from nodes: inputs and constants returned as such get a copy.
    program = lw.p
    for k, t in enumerate(outputs):
        if t in program.inputs or program.is_constant(t):
            outputs[k] = lw.emit("reshape", [t], program.shapes[t])
            if t in program.dtypes:  # an int8 / int32 input returned keeps its data type
                program.dtypes[outputs[k]] = program.dtypes[t]
    program.outputs = outputs
    fold_int8(program)
    return program
