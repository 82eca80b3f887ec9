"""Operator rules of target ``dnnl``: which calls oneDNN takes, and why it declines.

Each rule receives the typed ``Call`` (TVM 0.8+ signature) and returns
``True`` or :func:`relaykit.byoc.decline` with a reason that
``relaykit.byoc.explain`` shows. Common conditions: every tensor is float32
with a static shape of rank 1 to 6; weights and batch-norm statistics are
constants (``partition_for_dnnl(mod, params)`` binds them); 2-D operators use
the NCHW / OIHW layouts.

They are the ``rules`` of the backend's record (:mod:`.backend`, through
:func:`rule_for`); the operator table shows them as attribute ``target.dnnl``
without a copy, and a rule registered there explicitly wins.

>>> from relaykit import relay
>>> from relaykit.transform import InferType
>>> import relaykit as tvm
>>> x = relay.var("x", shape=(1, 8), dtype="float16")
>>> call = InferType()(tvm.IRModule.from_expr(relay.nn.relu(x)))["main"].body
>>> check_call(call)
decline('dtype float16: the dnnl backend runs float32 only (and bfloat16, computed in float32)')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from relaykit.backends.dnnl.compile.lower import BINARY_OPS, COMMUTATIVE, ELTWISE_OPS, op_name
from relaykit.byoc import Decline, decline
from relaykit.ir.expr import Call, Constant, Expr
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op.nn.conv_weights import MULTIPLIER_DECLINE, has_multiplier_weight
from relaykit.op.nn.geometry import pad4, pair

from .int8 import check_int8_call

__all__ = ["RULES", "check_call", "rule_for", "TARGET"]

TARGET = "dnnl"
_MAX_RANK = 6

Verdict = bool | Decline


def _tensor_types(ty: Type) -> list[TensorType]:
    if isinstance(ty, TensorType):
        return [ty]
    if isinstance(ty, TupleType):
        out: list[TensorType] = []
        for f in ty.fields:
            out.extend(_tensor_types(f))
        return out
    return []


def _check_tensors(call: Call) -> Decline | None:
    """Every input and output tensor is float32, of a static shape of rank 1..6
    (constant scalars too), without empty dims."""
    types: list[tuple[TensorType, bool]] = []
    for arg in call.args:
        scalar_ok = isinstance(arg, Constant)
        types.extend((t, scalar_ok) for t in _tensor_types(arg.checked_type))
    types.extend((t, False) for t in _tensor_types(call.checked_type))
    for t, scalar_ok in types:
        if t.dtype not in ("float32", "bfloat16"):  # bfloat16 computes in float32 inside
            return decline(
                f"dtype {t.dtype}: the dnnl backend runs float32 only (and bfloat16, "
                "computed in float32)"
            )
        if scalar_ok and not t.shape:
            continue
        if not t.is_static:
            return decline(
                f"dynamic shape {t}: oneDNN primitives are built for static shapes "
                "(the operator stays on the host, where the VM runs it)"
            )
        if not 1 <= len(t.shape) <= _MAX_RANK:
            return decline(f"a rank-{len(t.shape)} tensor: oneDNN takes ranks 1 to {_MAX_RANK}")
        if any(d == 0 for d in t.shape):
            return decline("an empty tensor")
    return None


def _shape(expr: Expr) -> tuple[int, ...]:
    return tuple(cast(TensorType, expr.checked_type).shape)


def _constant(expr: Expr, what: str) -> Decline | None:
    if not isinstance(expr, Constant):
        return decline(
            f"the {what} is not a constant: the dnnl runtime prepares weights once at load; "
            "bind the params (partition_for_dnnl(mod, params))"
        )
    return None


def _constant_or_true(expr: Expr, what: str) -> Verdict:
    reason = _constant(expr, what)
    return True if reason is None else reason


def _conv2d(call: Call) -> Verdict:
    a = call.attrs
    if has_multiplier_weight(call):
        return decline(MULTIPLIER_DECLINE)
    if (a.data_layout, a.kernel_layout) not in (("NCHW", "OIHW"), ("NHWC", "HWIO")):
        return decline(
            f"layout {a.data_layout}/{a.kernel_layout}: the dnnl backend takes NCHW/OIHW "
            "or NHWC/HWIO (oneDNN picks its own blocked layout inside the region)"
        )
    if a.out_layout not in ("", a.data_layout):
        return decline(f"out_layout {a.out_layout}: the dnnl backend writes {a.data_layout}")
    if a.out_dtype not in ("", "float32", "bfloat16"):
        return decline(f"out_dtype {a.out_dtype}: the dnnl backend runs float32 only")
    return _constant_or_true(call.args[1], "weight")


def _conv1d(call: Call) -> Verdict:
    a = call.attrs
    if a.data_layout != "NCW" or a.kernel_layout != "OIW" or a.out_layout not in ("", "NCW"):
        return decline(f"layout {a.data_layout}/{a.kernel_layout}: the dnnl backend takes NCW/OIW")
    if a.out_dtype not in ("", "float32", "bfloat16"):
        return decline(f"out_dtype {a.out_dtype}: the dnnl backend runs float32 only")
    return _constant_or_true(call.args[1], "weight")


def _conv_nd(call: Call) -> Verdict:
    """conv3d and the transposed convolutions, in channels-first layouts."""
    a = call.attrs
    rank = len(_shape(call))
    data = {4: "NCHW", 5: "NCDHW"}[rank] if rank in (4, 5) else ""
    kernel = ("IO" if "transpose" in op_name(call) else "OI") + data[2:]
    if "transpose" not in op_name(call) and has_multiplier_weight(call):
        return decline(MULTIPLIER_DECLINE)
    if a.data_layout != data or a.kernel_layout != kernel or a.out_layout not in ("", data):
        return decline(
            f"layout {a.data_layout}/{a.kernel_layout}: the dnnl backend takes {data}/{kernel}"
        )
    if a.out_dtype not in ("", "float32", "bfloat16"):
        return decline(f"out_dtype {a.out_dtype}: the dnnl backend runs float32 only")
    return _constant_or_true(call.args[1], "weight")


def _dense(call: Call) -> Verdict:
    if call.attrs.out_dtype not in ("", "float32", "bfloat16"):
        return decline(f"out_dtype {call.attrs.out_dtype}: the dnnl backend runs float32 only")
    if len(_shape(call.args[1])) != 2:
        return decline("a dense whose weight is not 2-D")
    return _constant_or_true(call.args[1], "weight")


def _batch_matmul(call: Call) -> Verdict:
    if call.attrs.out_dtype not in ("", "float32", "bfloat16"):
        return decline(f"out_dtype {call.attrs.out_dtype}: the dnnl backend runs float32 only")
    return True


def _layer_norm(call: Call) -> Verdict:
    a = call.attrs
    ndim = len(_shape(call))
    if int(a.axis) % ndim != ndim - 1:
        return decline(f"layer_norm over axis {a.axis}: oneDNN normalises the last axis")
    for arg, what in zip(call.args[1:], ("gamma", "beta"), strict=True):
        if (reason := _constant(arg, what)) is not None:
            return reason
    return True


def _batch_norm(call: Call) -> Verdict:
    for arg, what in zip(
        call.args[1:], ("gamma", "beta", "moving_mean", "moving_var"), strict=True
    ):
        if (reason := _constant(arg, what)) is not None:
            return reason
    return True


def _pool2d(call: Call) -> Verdict:
    a = call.attrs
    if a.layout != "NCHW" or a.out_layout not in ("", "NCHW"):
        return decline(f"layout {a.layout}: the dnnl backend pools NCHW tensors")
    if op_name(call) == "nn.avg_pool2d" and a.count_include_pad and a.ceil_mode:
        h, w = _shape(call.args[0])[2:]
        oh, ow = _shape(call)[2:]
        (kh, kw), (sh, sw), (dh, dw) = pair(a.pool_size), pair(a.strides), pair(a.dilation)
        pt, pl, pb, pr = pad4(a.padding)
        extra_h = (oh - 1) * sh + (kh - 1) * dh + 1 - (h + pt + pb)
        extra_w = (ow - 1) * sw + (kw - 1) * dw + 1 - (w + pl + pr)
        if (extra_h > 0 or extra_w > 0) and any((pt, pl, pb, pr)):
            return decline(
                "avg_pool2d with count_include_pad, padding and ceil_mode: oneDNN would also "
                "count ceil_mode's extra padding"
            )
    return True


def _pool3d(call: Call) -> Verdict:
    a = call.attrs
    if a.layout != "NCDHW" or a.out_layout not in ("", "NCDHW"):
        return decline(f"layout {a.layout}: the dnnl backend pools NCDHW tensors")
    if op_name(call) == "nn.avg_pool3d" and a.count_include_pad and a.ceil_mode and any(a.padding):
        return decline("avg_pool3d with count_include_pad, padding and ceil_mode")
    return True


def _global_pool2d(call: Call) -> Verdict:
    if call.attrs.layout != "NCHW":
        return decline(f"layout {call.attrs.layout}: the dnnl backend pools NCHW tensors")
    return True


def _adaptive_pool2d(call: Call) -> Verdict:
    if call.attrs.layout != "NCHW":
        return decline(f"layout {call.attrs.layout}: the dnnl backend pools NCHW tensors")
    h, w = _shape(call.args[0])[2:]
    oh, ow = _shape(call)[2:]
    if h % oh or w % ow:
        return decline(
            f"adaptive pooling {h}x{w} -> {oh}x{ow}: oneDNN pools with a fixed window, so the "
            "output size must divide the input size"
        )
    return True


def _reduced_axes(call: Call) -> frozenset[int]:
    """The axes a reduction (``mean``...) reduces, non-negative."""
    a = call.attrs
    ndim = len(_shape(call.args[0]))
    axes = range(ndim) if a.axis is None else [int(v) % ndim for v in a.axis]
    picked = frozenset(axes)
    return frozenset(range(ndim)) - picked if a.exclude else picked


def _spatial_mean(call: Call) -> Verdict:
    if len(_shape(call.args[0])) != 4 or _reduced_axes(call) != {2, 3}:
        return decline(
            "a mean over other than the two spatial axes of an NCHW tensor (the dnnl "
            "backend runs that one as global average pooling)"
        )
    return True


def _binary(call: Call) -> Verdict:
    name = op_name(call)
    out = _shape(call)
    lhs, rhs = _shape(call.args[0]), _shape(call.args[1])
    if not out:
        return decline("a scalar result")
    if lhs == out or (name in COMMUTATIVE and rhs == out):
        return True
    if name == "subtract" and isinstance(call.args[0], Constant) and int(np.prod(lhs)) == 1:
        return True
    return decline(
        f"{name} of {lhs} and {rhs}: oneDNN broadcasts the second operand only, and the first "
        "must have the result's shape"
    )


def _always(call: Call) -> Verdict:
    return True


def _lrn(call: Call) -> Verdict:
    a = call.attrs
    if len(_shape(call)) != 4 or int(a.axis) % 4 != 1:
        return decline("lrn across other than the channels of an NCHW tensor")
    if int(a.size) % 2 == 0:
        return decline(f"lrn of even size {a.size}: oneDNN centres the window differently")
    return True


_ELTWISE_RULES: dict[str, Callable[[Call], Verdict]] = {name: _always for name in ELTWISE_OPS}

#: Op name -> rule (beyond the float32 / rank conditions every op must meet).
RULES: dict[str, Callable[[Call], Verdict]] = {
    "nn.conv2d": _conv2d,
    "nn.conv1d": _conv1d,
    "nn.conv3d": _conv_nd,
    "nn.conv2d_transpose": _conv_nd,
    "nn.conv3d_transpose": _conv_nd,
    "nn.dense": _dense,
    "nn.batch_matmul": _batch_matmul,
    "nn.layer_norm": _layer_norm,
    "nn.bias_add": _always,
    "nn.batch_norm": _batch_norm,
    "nn.dropout": _always,
    "nn.max_pool2d": _pool2d,
    "nn.avg_pool2d": _pool2d,
    "nn.max_pool3d": _pool3d,
    "nn.avg_pool3d": _pool3d,
    "nn.global_avg_pool2d": _global_pool2d,
    "nn.global_max_pool2d": _global_pool2d,
    "nn.adaptive_avg_pool2d": _adaptive_pool2d,
    "nn.adaptive_max_pool2d": _adaptive_pool2d,
    "mean": _spatial_mean,
    "nn.softmax": _always,
    "nn.log_softmax": _always,
    "nn.lrn": _lrn,
    "concatenate": _always,
    "reshape": _always,
    "nn.batch_flatten": _always,
    "squeeze": _always,
    "expand_dims": _always,
    "transpose": _always,
    "copy": _always,
    "erf": _always,
    **_ELTWISE_RULES,
    **{name: _binary for name in BINARY_OPS},
}


def check_call(call: Call) -> Verdict:
    """What the dnnl backend says about one typed operator call."""
    rule = RULES.get(op_name(call))
    verdict = check_int8_call(call, rule)
    if verdict is not None:
        return verdict
    if rule is None:
        return decline(f"{op_name(call)} has no oneDNN primitive in this backend")
    reason = _check_tensors(call)
    if reason is not None:
        return reason
    return rule(call)


_INSTALLED: dict[str, Callable[[Call], Verdict]] = {}


def rule_for(op_name: str) -> Callable[[Call], Verdict]:
    """The ``target.dnnl`` rule of ``op_name`` (one function per operator, made once)."""
    rule = _INSTALLED.get(op_name)
    if rule is not None:
        return rule

    def checker(expr: Any) -> Verdict:
        return check_call(expr)

    checker.__name__ = f"dnnl_{op_name.replace('.', '_')}"
    checker.__qualname__ = checker.__name__
    _INSTALLED[op_name] = checker
    return checker
