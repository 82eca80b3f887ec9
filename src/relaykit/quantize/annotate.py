"""Quantization's second pass: put a ``relay.op.annotation.simulated_quantize`` where a
value enters integer arithmetic.

Each rule (op attribute ``"FQAnnotateRewrite"``, :func:`register_annotate_function`)
sees its arguments as plain expressions or :class:`QAnnotateExpr` (a value already of
kind INPUT, WEIGHT or ACTIVATION) and returns the call with simulated quantizes on
its operands: ``nn.conv2d``/``nn.dense`` quantize data to INPUT and weight to WEIGHT
and give ACTIVATION; ``add``/``multiply``/``concatenate``/pools follow TVM's rules.
A value read by several consumers is quantized to INPUT once. The scales and clip
bounds are new free variables, made parameters of the function for ``calibrate`` to
bind.

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 2, 4, 4))
>>> w = relay.const(np.ones((2, 2, 1, 1), "float32"))
>>> f = relay.Function([x], relay.nn.conv2d(x, w, kernel_size=(1, 1)))
>>> from .config import qconfig
>>> with qconfig(skip_conv_layers=None), quantize_context():
...     out = annotate_function(f)
>>> [p.name_hint for p in out.params]
['x', 'dom_scale', 'clip_min', 'clip_max', 'dom_scale', 'clip_min', 'clip_max']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Call, Constant, Expr, Function, Tuple, Var
from relaykit.ir.module import IRModule
from relaykit.ir.op import get_op, register_op_attr
from relaykit.ir.types import TensorType
from relaykit.op.relay.quantize import OP_NAME, simulated_quantize
from relaykit.transform.pass_infra import FunctionPass, Pass, PassContext

from .config import QAnnotateKind, current_qconfig
from .context import quantize_context
from .rewrite import TempExpr, TempTuple, forward_op, forward_rewrite

__all__ = [
    "QAnnotateExpr",
    "annotate",
    "annotate_function",
    "attach_simulated_quantize",
    "register_annotate_function",
]

RULE_KEY = "FQAnnotateRewrite"
INPUT, WEIGHT, ACTIVATION = QAnnotateKind.INPUT, QAnnotateKind.WEIGHT, QAnnotateKind.ACTIVATION


class QAnnotateExpr(TempExpr):
    """A value of a known annotation kind; realized as the value itself."""

    def __init__(self, expr: Expr, kind: int) -> None:
        self.expr = expr
        self.kind = kind

    def realize(self) -> Expr:
        return self.expr


def _expr_kind(value: Any) -> tuple[Any, int | None]:
    if isinstance(value, QAnnotateExpr):
        return value.expr, value.kind
    return value, None


def attach_simulated_quantize(
    data: Expr, kind: int, sign: bool = True, rounding: str = "round"
) -> Expr:
    """``data`` through a simulated quantize of ``kind`` (one per value and kind)."""
    if (
        type(data) is Call
        and data.op is get_op(OP_NAME)
        and (data.attrs.kind, data.attrs.sign, data.attrs.rounding) == (kind, sign, rounding)
    ):
        return data
    qmap = quantize_context().qnode_map
    key = (data, kind, sign, rounding)
    node = qmap.get(key)
    if node is None:
        scalar = TensorType((), "float32")
        node = simulated_quantize(
            data,
            Var("dom_scale", scalar),
            Var("clip_min", scalar),
            Var("clip_max", scalar),
            kind,
            sign,
            rounding,
        )
        qmap[key] = node
    return node


#: Partition's section markers: annotated whatever ``debug_enabled_ops`` says, since
#: realize casts at a ``cast_hint`` and must find the value requantized there (TVM skipped
#: them too and cast int32 activations to int8 unscaled).
_SECTION_MARKERS = frozenset({"annotation.cast_hint", "annotation.stop_fusion"})


def register_annotate_function(
    op_name: str, frewrite: Callable[..., Any] | None = None, level: int = 10
) -> Any:
    """Register the annotation rule ``frewrite(ref_call, new_args, ctx)`` of ``op_name``;
    outside ``debug_enabled_ops`` the call is kept with its arguments unwrapped (except
    partition's markers ``cast_hint`` and ``stop_fusion``, always annotated)."""

    def register(func: Callable[..., Any]) -> Any:
        def guarded(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
            if op_name not in _SECTION_MARKERS and not current_qconfig().guard(ref_call):
                return forward_op(ref_call, [_realize_arg(a) for a in new_args])
            return func(ref_call, new_args, ctx)

        register_op_attr(op_name, RULE_KEY, guarded, level)
        return func

    return register(frewrite) if frewrite is not None else register


def _realize_arg(value: Any) -> Expr:
    if isinstance(value, TempTuple):
        return Tuple([_expr_kind(f)[0] for f in value])
    return _expr_kind(value)[0]


def _weight_or_input(expr: Expr) -> Expr:
    kind = WEIGHT if type(expr) is Constant else INPUT
    return attach_simulated_quantize(expr, kind)


def _matmul_like(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    lhs, lhs_kind = _expr_kind(new_args[0])
    rhs, rhs_kind = _expr_kind(new_args[1])
    if lhs_kind is None or lhs_kind == ACTIVATION:
        lhs = attach_simulated_quantize(lhs, INPUT)
    if rhs_kind is not None:
        raise IRError(
            f"quantize annotate: the weight of {ref_call.op} is a computed value; "
            "only constant or parameter weights can be quantized"
        )
    rhs = attach_simulated_quantize(rhs, WEIGHT)
    return QAnnotateExpr(forward_op(ref_call, [lhs, rhs]), ACTIVATION)


@register_annotate_function("nn.conv2d")
def _conv2d(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    if quantize_context().check_to_skip(ref_call):
        return None
    return _matmul_like(ref_call, new_args, ctx)


@register_annotate_function("nn.conv1d")
def _conv1d(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    if quantize_context().check_to_skip(ref_call):
        return None
    return _matmul_like(ref_call, new_args, ctx)


@register_annotate_function("nn.dense")
def _dense(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    if current_qconfig().skip_dense_layer or quantize_context().check_to_skip(ref_call):
        return None
    return _matmul_like(ref_call, new_args, ctx)


@register_annotate_function("multiply")
def _multiply(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    if quantize_context().check_to_skip(ref_call):
        return None
    lhs, lhs_kind = _expr_kind(new_args[0])
    rhs, rhs_kind = _expr_kind(new_args[1])
    if lhs_kind is None and rhs_kind is None:
        return None
    if lhs_kind in (ACTIVATION, INPUT) and rhs_kind is None:
        if lhs_kind == ACTIVATION:
            lhs = attach_simulated_quantize(lhs, INPUT)
        rhs = _weight_or_input(rhs)
        return QAnnotateExpr(forward_op(ref_call, [lhs, rhs]), ACTIVATION)
    if rhs_kind in (ACTIVATION, INPUT) and lhs_kind is None:
        if rhs_kind == ACTIVATION:
            rhs = attach_simulated_quantize(rhs, INPUT)
        lhs = _weight_or_input(lhs)
        return QAnnotateExpr(forward_op(ref_call, [lhs, rhs]), ACTIVATION)
    raise IRError(
        f"quantize annotate: cannot quantize multiply of two quantized values "
        f"(kinds {lhs_kind} and {rhs_kind})"
    )


@register_annotate_function("add")
def _add(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    if quantize_context().check_to_skip(ref_call):
        return None
    lhs, lhs_kind = _expr_kind(new_args[0])
    rhs, rhs_kind = _expr_kind(new_args[1])
    if lhs_kind is None and rhs_kind is None:
        return None
    if lhs_kind is None:
        lhs = attach_simulated_quantize(lhs, INPUT)
    elif rhs_kind is None:
        rhs = _weight_or_input(rhs)
    elif lhs_kind == ACTIVATION and rhs_kind == ACTIVATION:
        rhs = attach_simulated_quantize(rhs, INPUT)
    elif WEIGHT in (lhs_kind, rhs_kind):
        raise IRError(f"quantize annotate: add of kinds {lhs_kind} and {rhs_kind}")
    return QAnnotateExpr(forward_op(ref_call, [lhs, rhs]), ACTIVATION)


def _identity(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    if quantize_context().check_to_skip(ref_call):
        return None
    x, kind = _expr_kind(new_args[0])
    if kind is None:
        return None
    return QAnnotateExpr(forward_op(ref_call, [x]), kind)


for _name in (
    "reshape",
    "clip",
    "nn.relu",
    "strided_slice",
    "nn.avg_pool2d",
    "nn.batch_flatten",
    "transpose",
    "annotation.stop_fusion",
):
    register_annotate_function(_name, _identity)


def _pool(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    if quantize_context().check_to_skip(ref_call):
        return None
    x, kind = _expr_kind(new_args[0])
    if kind is None:
        return None
    if kind == ACTIVATION:
        x = attach_simulated_quantize(x, INPUT)
    return QAnnotateExpr(forward_op(ref_call, [x]), INPUT)


register_annotate_function("nn.max_pool2d", _pool)
register_annotate_function("nn.max_pool1d", _pool)


@register_annotate_function("annotation.cast_hint")
def _cast_hint(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    x, kind = _expr_kind(new_args[0])
    if quantize_context().check_to_skip(ref_call):
        return x
    if kind is None:
        return new_args[0]
    if kind == ACTIVATION:
        x = attach_simulated_quantize(x, INPUT)
    return QAnnotateExpr(forward_op(ref_call, [x]), INPUT)


@register_annotate_function("concatenate")
def _concatenate(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    if quantize_context().check_to_skip(ref_call):
        return None
    if not isinstance(new_args[0], TempTuple):
        return None
    pairs = [_expr_kind(f) for f in new_args[0]]
    if all(k is None for _, k in pairs):
        return None
    fields = [e if k is not None else attach_simulated_quantize(e, ACTIVATION) for e, k in pairs]
    return QAnnotateExpr(forward_op(ref_call, [Tuple(fields)]), ACTIVATION)


@register_annotate_function("nn.global_avg_pool2d")
def _global_avg_pool2d(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    if quantize_context().check_to_skip(ref_call):
        return None
    if _expr_kind(new_args[0])[1] is None:
        return None
    out = forward_op(ref_call, [new_args[0].realize()])
    quantize_context().stop_quantize()  # everything after the pool stays in float
    return out


@register_annotate_function("nn.batch_matmul")
def _batch_matmul(ref_call: Call, new_args: list[Any], ctx: Any) -> Any:
    if quantize_context().check_to_skip(ref_call):
        return None
    out = []
    for value in new_args[:2]:
        e, kind = _expr_kind(value)
        if kind is None or kind == ACTIVATION:
            e = _weight_or_input(e)
        out.append(e)
    return QAnnotateExpr(forward_op(ref_call, out), ACTIVATION)


def _multi_ref(value: Any) -> Any:
    if isinstance(value, QAnnotateExpr):
        return QAnnotateExpr(attach_simulated_quantize(value.expr, INPUT), INPUT)
    return value


def annotate_function(func: Function) -> Function:
    """``func`` with simulated quantizes inserted; their parameters become parameters."""
    out = forward_rewrite(func, RULE_KEY, _multi_ref)
    known = set(out.params)
    extra = [v for v in free_vars(out) if v not in known]
    if not extra:
        return out
    return out.with_fields(params=(*out.params, *extra))


def annotate() -> Pass:
    """TVM's ``relay.quantize.annotate()``: the pass ``QuantizeAnnotate``."""

    def run(func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return annotate_function(func)

    return FunctionPass(run, 1, "QuantizeAnnotate")
