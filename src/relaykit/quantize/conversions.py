"""``partition_conversions``: split a quantized ``main`` into ``quantize_inputs`` (the
float-to-integer conversion of each input), ``quantized_main`` (the integer core) and
``dequantize_outputs`` (back to float), with a ``main`` calling the three in turn.

Conversion operators are ``add``, ``multiply``, ``right_shift``, ``clip``, ``round``
and ``cast``. The prefix is every input's chain of conversion operators up to the
first other operator; the suffix is everything after the last value of a quantized
dtype. With ``ensure_fully_integral`` the core must hold only quantized dtypes and the
prefix and suffix only conversions, else :class:`~relaykit.errors.NotFullyIntegralError`.

>>> from relaykit import relay
>>> import relaykit as tvm
>>> x = relay.var("x", shape=(2,))
>>> q = relay.cast(relay.round(relay.multiply(x, relay.const(4.0))), "int8")
>>> body = relay.cast(relay.nn.relu(q), "float32")
>>> mod = partition_conversions(tvm.IRModule.from_expr(relay.Function([x], body)), {"int8"})
>>> sorted(g.name_hint for g in mod.get_global_vars())
['dequantize_outputs', 'main', 'quantize_inputs', 'quantized_main']
"""

from __future__ import annotations

from collections.abc import Iterable

from relaykit.errors import ArgumentError, NotFullyIntegralError
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    Tuple,
    TupleGetItem,
    Var,
    checked_type_or_none,
)
from relaykit.ir.functor import children, post_order, rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.transform.infer_type import InferType

__all__ = ["ALLOWED_CONVERSION_OPS", "partition_conversions"]

ALLOWED_CONVERSION_OPS = ("add", "multiply", "right_shift", "clip", "round", "cast")


def _is_conversion(node: Expr) -> bool:
    return type(node) is Call and type(node.op) is Op and node.op.name in ALLOWED_CONVERSION_OPS


def _dtypes(ty: Type | None) -> set[str]:
    if isinstance(ty, TensorType):
        return {ty.dtype}
    if isinstance(ty, TupleType):
        return set().union(*(_dtypes(f) for f in ty.fields)) if ty.fields else set()
    return set()


def _conversion_subtrees(body: Expr, params: set[Var]) -> dict[Expr, bool]:
    """Whether each node is made of conversions over constants and at least one input."""
    out: dict[Expr, bool] = {}
    has_param: dict[Expr, bool] = {}
    for node in post_order(body):
        if type(node) is Var:
            out[node] = node in params
            has_param[node] = node in params
        elif type(node) is Constant:
            out[node], has_param[node] = True, False
        elif _is_conversion(node):
            args = node.args  # type: ignore[attr-defined]
            out[node] = all(out.get(a, False) for a in args)
            has_param[node] = any(has_param.get(a, False) for a in args)
        else:
            out[node], has_param[node] = False, False
    return {n: ok and has_param[n] for n, ok in out.items()}


def _cut_prefix(func: Function) -> tuple[Function, Function]:
    body = func.body
    prefix_ok = _conversion_subtrees(body, set(func.params))
    cuts: dict[Expr, Var] = {}
    for node in post_order(body):
        if prefix_ok.get(node, False):
            continue
        for child in children(node) if type(node) is not Function else ():
            if prefix_ok.get(child, False) and type(child) is not Var and child not in cuts:
                ty = checked_type_or_none(child)
                cuts[child] = Var(_param_name(child), ty)
    if prefix_ok.get(body, False) and type(body) is not Var and body not in cuts:
        cuts[body] = Var(_param_name(body), checked_type_or_none(body))
    mid_body = rewrite_post_order(body, lambda new, old: None, dict(cuts))
    mid_params = free_vars(mid_body)
    pre_fields: list[Expr] = []
    for p in mid_params:
        src = next((e for e, v in cuts.items() if v is p), None)
        pre_fields.append(p if src is None else src)
    pre = Function(list(func.params), Tuple(pre_fields))
    return pre, Function(mid_params, mid_body)


def _param_name(expr: Expr) -> str:
    names = [v.name_hint for v in free_vars(expr)]
    return names[0] if len(names) == 1 else "input"


def _cut_suffix(func: Function, quantized: set[str]) -> tuple[Function, Function]:
    """(core, suffix): the suffix starts at the last values of a quantized dtype."""
    outputs: list[Expr] = []
    seen: set[Expr] = set()
    stack = [func.body]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        dts = _dtypes(checked_type_or_none(node))
        if type(node) is not Tuple and dts and dts <= quantized:
            outputs.append(node)
            continue
        if type(node) is Var:
            outputs.append(node)  # an input read by the suffix directly
            continue
        if type(node) is not Function:
            stack.extend(children(node))
    outputs = [o for o in outputs if type(o) is not Constant]
    if not outputs:
        identity = Var("input", checked_type_or_none(func.body))
        return func, Function([identity], identity)
    if len(outputs) == 1:
        (only,) = outputs
        var = Var("input", checked_type_or_none(only))
        post_body = rewrite_post_order(func.body, lambda new, old: None, {only: var})
        return Function(list(func.params), only), Function([var], post_body)
    tup = Var("input", None)
    memo: dict[Expr, Expr] = {o: TupleGetItem(tup, i) for i, o in enumerate(outputs)}
    post_body = rewrite_post_order(func.body, lambda new, old: None, memo)
    return Function(list(func.params), Tuple(outputs)), Function([tup], post_body)


def _only_conversions(func: Function) -> list[str]:
    return sorted(
        {
            str(getattr(n.op, "name", n.op))
            for n in post_order(func.body)
            if type(n) is Call and not _is_conversion(n)
        }
    )


def partition_conversions(
    mod: IRModule, quantized_dtypes: Iterable[str], ensure_fully_integral: bool = False
) -> IRModule:
    """``mod`` split into conversions and the quantized core (see the module docstring)."""
    if len(mod.functions) != 1:
        raise ArgumentError(
            "partition_conversions takes a module with only 'main', got functions "
            f"{sorted(g.name_hint for g in mod.get_global_vars())}"
        )
    quantized = {str(d) for d in quantized_dtypes}
    mod = InferType()(mod)
    pre, mid = _cut_prefix(mod["main"])
    mid = InferType()(IRModule.from_expr(mid))["main"]
    mid, post = _cut_suffix(mid, quantized)
    if ensure_fully_integral:
        _check_integral(pre, mid, post, quantized)
    return _fuse(pre, mid, post)


def _check_integral(pre: Function, mid: Function, post: Function, quantized: set[str]) -> None:
    for name, fn in (("quantize_inputs", pre), ("dequantize_outputs", post)):
        bad = _only_conversions(fn)
        if bad:
            raise NotFullyIntegralError(
                f"partition_conversions='fully_integral': {name} holds {bad}, not only "
                f"conversions {list(ALLOWED_CONVERSION_OPS)}; quantize those operators or use "
                "partition_conversions='enabled'"
            )
    mid = InferType()(IRModule.from_expr(mid))["main"]
    floats = sorted(
        {
            str(getattr(n.op, "name", n.op))
            for n in post_order(mid.body)
            if type(n) is Call and not _dtypes(checked_type_or_none(n)) <= quantized
        }
    )
    if floats or not _dtypes(checked_type_or_none(mid.body)) <= quantized:
        raise NotFullyIntegralError(
            "partition_conversions='fully_integral': the quantized core computes in float in "
            f"{floats or ['its output']}; these operators are not quantized (use "
            "partition_conversions='enabled' to allow them)"
        )


def _fuse(pre: Function, mid: Function, post: Function) -> IRModule:
    out = IRModule()
    g_pre, g_mid, g_post = (
        GlobalVar("quantize_inputs"),
        GlobalVar("quantized_main"),
        GlobalVar("dequantize_outputs"),
    )
    out[g_pre] = pre
    out[g_mid] = mid
    out[g_post] = post
    params = [Var(p.name_hint, p.type_annotation) for p in pre.params]
    inputs = Call(g_pre, params)
    n = len(pre.body.fields) if type(pre.body) is Tuple else 1
    core = Call(g_mid, [TupleGetItem(inputs, i) for i in range(n)])
    out["main"] = Function(params, Call(g_post, [core]))
    return InferType()(out)
