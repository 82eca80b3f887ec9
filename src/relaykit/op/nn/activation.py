"""Activations: ``nn.relu``, ``nn.leaky_relu``, ``nn.prelu``, ``nn.gelu``, ``nn.softmax`` and
``nn.log_softmax``: each one's schema, type relation, reference kernel and constructor.

``nn.gelu`` is the Gaussian error linear unit ``0.5 x (1 + erf(x / sqrt 2))`` as one
operator. TVM's Relay has no GELU: its frontends write the chain (divide, erf, add,
multiply, multiply); Relax and onnxruntime have it as one operator, and so do relaykit's
frontends, which emit ``nn.gelu`` (the ONNX importer also for the chain torch exports
below opset 20). For modules built by hand, ``relay.build`` forms it from the chain
(:mod:`relaykit.transform.gelu`, with the shared recogniser of
:mod:`relaykit.transform.idioms`); the host runs it in one pass
(:mod:`relaykit.backends.host.nn`) instead of five.

>>> from relaykit import relay
>>> gelu(relay.var("x", shape=(2, 3))).op.name
'nn.gelu'
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op import _numeric as num
from relaykit.op._numeric import as_out
from relaykit.op._relations import FLOAT_DTYPES, identity_rel, normalize_axis, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, default_registry, define_op, make_call

from .operands import channel_vectors_solve, check_vector

__all__ = [
    "relu",
    "leaky_relu",
    "prelu",
    "gelu",
    "softmax",
    "fast_softmax",
    "log_softmax",
    "cross_entropy",
    "cross_entropy_with_logits",
]


# -- nn.relu, nn.leaky_relu -----------------------------------------------------------------------


define_op(
    "nn.relu",
    num_inputs=1,
    type_rel=identity_rel,
    compute=lambda ins, attrs: as_out(np.maximum(ins[0], 0), ins[0].dtype),
    pattern=OpPattern.ELEMWISE,
    doc="max(data, 0).",
)


def relu(data: Expr) -> Call:
    """``max(data, 0)``."""
    return make_call("nn.relu", [data])


def float_unary_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    t = tensor_arg(arg_types, 0, "data")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"data must be a floating-point tensor, got {t}")
    return t


define_op(
    "nn.leaky_relu",
    num_inputs=1,
    attrs={"alpha": 0.25},
    attrs_type_key="relay.attrs.LeakyReluAttrs",
    type_rel=float_unary_rel,
    compute=lambda ins, attrs: as_out(
        np.where(ins[0] > 0, ins[0], ins[0] * attrs.alpha), ins[0].dtype
    ),
    pattern=OpPattern.ELEMWISE,
    doc="data if data > 0 else alpha * data.",
)


def leaky_relu(data: Expr, alpha: float = 0.01) -> Call:
    """``data`` where positive, else ``alpha * data``."""
    return make_call("nn.leaky_relu", [data], alpha=float(alpha))


# -- nn.prelu -------------------------------------------------------------------------------------


def prelu_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    alpha = tensor_arg(arg_types, 1, "alpha")
    axis = normalize_axis(attrs.axis, data.ndim, "prelu axis")
    check_vector(alpha, data.shape[axis], data.dtype, f"alpha (for axis {axis} of {data})")
    return data


def prelu_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, alpha = inputs
    shape = [1] * data.ndim
    shape[attrs.axis % data.ndim] = alpha.shape[0]
    return as_out(np.where(data > 0, data, data * alpha.reshape(shape)), data.dtype)


define_op(
    "nn.prelu",
    num_inputs=2,
    attrs={"axis": 1},
    attrs_type_key="relay.attrs.PReluAttrs",
    type_rel=prelu_rel,
    compute=prelu_kernel,
    pattern=OpPattern.BROADCAST,
    doc="Leaky ReLU with a learned slope per channel.",
)

default_registry.set_attr("nn.prelu", "FTypeSolveInputs", channel_vectors_solve)


def prelu(data: Expr, alpha: Expr, axis: int = 1) -> Call:
    """Leaky ReLU with a slope per channel: ``alpha`` has shape (data.shape[axis],)."""
    return make_call("nn.prelu", [data, alpha], axis=int(axis))


# -- nn.gelu --------------------------------------------------------------------------------------


def _gelu_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    x64 = x.astype(np.float64, copy=False)
    out = 0.5 * x64 * (1.0 + num.erf(x64 / math.sqrt(2.0)))
    return num.as_out(out, x.dtype)


define_op(
    "nn.gelu",
    num_inputs=1,
    type_rel=identity_rel,
    compute=_gelu_kernel,
    pattern=OpPattern.ELEMWISE,
    doc="GELU, 0.5 x (1 + erf(x / sqrt 2)) (the exact form).",
)


def gelu(data: Expr) -> Call:
    """``0.5 * data * (1 + erf(data / sqrt(2)))``."""
    return make_call("nn.gelu", [data])


# -- nn.softmax, nn.log_softmax ------------------------------------------------------------------


def softmax_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = float_unary_rel(arg_types, attrs)
    assert isinstance(data, TensorType)  # float_unary_rel returns a tensor type or raises
    normalize_axis(attrs.axis, data.ndim, "softmax axis")
    return data


def softmax_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    with np.errstate(all="ignore"):
        e = np.exp(x - x.max(axis=attrs.axis, keepdims=True))
        return as_out(e / e.sum(axis=attrs.axis, keepdims=True), x.dtype)


def log_softmax_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = inputs[0]
    with np.errstate(all="ignore"):
        shifted = x - x.max(axis=attrs.axis, keepdims=True)
        lse = np.log(np.exp(shifted).sum(axis=attrs.axis, keepdims=True))
        return as_out(shifted - lse, x.dtype)


for _name, _kernel in (
    ("nn.softmax", softmax_kernel),
    ("nn.fast_softmax", softmax_kernel),  # FastMath's form (TVM approximates its exp)
    ("nn.log_softmax", log_softmax_kernel),
):
    define_op(
        _name,
        num_inputs=1,
        attrs={"axis": -1},
        attrs_type_key="relay.attrs.SoftmaxAttrs",
        type_rel=softmax_rel,
        compute=_kernel,
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,  # as TVM: elementwise consumers fuse in
        doc=f"{_name[3:]} along an axis.",
    )

del _name, _kernel


def softmax(data: Expr, axis: int = -1) -> Call:
    """``exp(x) / sum(exp(x))`` along ``axis``."""
    return make_call("nn.softmax", [data], axis=int(axis))


def fast_softmax(data: Expr, axis: int = -1) -> Call:
    """``softmax`` as FastMath writes it (TVM's with an approximate ``exp``; relaykit
    computes it exactly)."""
    return make_call("nn.fast_softmax", [data], axis=int(axis))


def log_softmax(data: Expr, axis: int = -1) -> Call:
    """``log(softmax(x))`` along ``axis``, computed stably."""
    return make_call("nn.log_softmax", [data], axis=int(axis))


# -- nn.cross_entropy, nn.cross_entropy_with_logits -----------------------------------------------


def _cross_entropy_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    x = tensor_arg(arg_types, 0, "predictions")
    y = tensor_arg(arg_types, 1, "targets")
    if x.ndim != 2:
        raise TypeRelError(f"cross_entropy predictions must be (batch, classes), got {x}")
    if tuple(x.shape) != tuple(y.shape) or x.dtype != y.dtype:
        raise TypeRelError(f"cross_entropy predictions and targets must match, got {x} and {y}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"cross_entropy needs floating-point tensors, got {x}")
    return TensorType((), x.dtype)


def _cross_entropy(logits: bool):
    def kernel(ins: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        x, y = ins
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = (x if logits else np.log(x)) * y
        return as_out(-np.sum(terms) / x.shape[0], x.dtype)

    return kernel


define_op(
    "nn.cross_entropy",
    num_inputs=2,
    type_rel=_cross_entropy_rel,
    compute=_cross_entropy(False),
    pattern=OpPattern.OPAQUE,
    doc="-sum(log(predictions) * targets) / batch size.",
)
define_op(
    "nn.cross_entropy_with_logits",
    num_inputs=2,
    type_rel=_cross_entropy_rel,
    compute=_cross_entropy(True),
    pattern=OpPattern.OPAQUE,
    doc="-sum(predictions * targets) / batch size (predictions are log-probabilities).",
)


def cross_entropy(predictions: Expr, targets: Expr) -> Call:
    """The mean over the batch of ``-sum(log(predictions) * targets)``."""
    return make_call("nn.cross_entropy", [predictions, targets])


def cross_entropy_with_logits(predictions: Expr, targets: Expr) -> Call:
    """The mean over the batch of ``-sum(predictions * targets)``."""
    return make_call("nn.cross_entropy_with_logits", [predictions, targets])
