"""FakeQuantizationToInteger: regions ``qnn.dequantize -> float ops -> qnn.quantize``
become integer (QNN) operators.

Each ``qnn.quantize`` whose input is computed, through operators, tuples and constants
only, from ``qnn.dequantize`` calls closes one region. When every operator of the region
has a rule (:mod:`.registry`), the region is rewritten input to output, each rule seeing
its inputs already rewritten and their affine types. A region that cannot be rewritten
(an operator without a rule, a rule refusing, a result that does not type-check) is left
as it was, or, with ``hard_fail=True``, raises
:class:`~relaykit.errors.FakeQuantizationError` naming the operator.

With ``use_qat=True`` a second walk rewrites, operator by operator, the calls whose inputs
all come from ``qnn.dequantize`` (TVM's list :data:`~.registry.QAT_OPS`), ending each
with a ``qnn.dequantize`` of the integer result: partly quantized graphs are rewritten as
far as they go.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(4,), dtype="int8")
>>> y = relay.nn.relu(relay.qnn.op.dequantize(x, relay.const(0.5), relay.const(0)))
>>> q = relay.qnn.op.quantize(y, relay.const(0.5), relay.const(0))
>>> mod = FakeQuantizationToInteger()(tvm.IRModule.from_expr(q))
>>> mod["main"].body.op.name
'maximum'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from relaykit.errors import FakeQuantizationError, RelayKitError
from relaykit.ir.affine_type import TensorAffineType, TupleAffineType
from relaykit.ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem
from relaykit.ir.functor import post_order, rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.type_check import infer_module, infer_type_local
from relaykit.ir.types import TensorType
from relaykit.op.qnn import dequantize
from relaykit.transform.pass_infra import ModulePass, PassContext

from .registry import QAT_OPS, rule_of

__all__ = [
    "FakeQuantizationToInteger",
    "fake_quantization_to_integer",
    "fake_quantized_regions",
]

_Q = "qnn.quantize"
_DQ = "qnn.dequantize"


def _op_name(expr: Expr) -> str | None:
    if type(expr) is Call and type(expr.op) is Op:
        return str(expr.op.name)
    return None


def _region(top_arg: Expr) -> list[Expr] | None:
    """The nodes between a quantize's input and the dequantize calls feeding it,
    inputs first, or None when a value that is not an operator call, tuple or constant
    (a variable, a function call, control flow) is in the way."""
    order: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(top_arg, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Call):
            if not isinstance(node.op, Op):
                return None
            stack.append((node, True))
            if node.op.name != _DQ:
                stack.extend((a, False) for a in reversed(node.args))
        elif isinstance(node, Tuple):
            stack.append((node, True))
            stack.extend((f, False) for f in reversed(node.fields))
        elif isinstance(node, TupleGetItem):
            stack.append((node, True))
            stack.append((node.tuple_value, False))
        elif isinstance(node, Constant):
            stack.append((node, True))
        else:
            return None
    return order


def fake_quantized_regions(expr: Expr) -> Iterator[tuple[Call, list[Expr]]]:
    """Each ``qnn.quantize`` of ``expr`` that closes a fake-quantized region, with the
    region's nodes (operators, tuples, constants and the ``qnn.dequantize`` calls)."""
    for node in post_order(expr):
        if _op_name(node) == _Q:
            region = _region(node.args[0])  # type: ignore[attr-defined]
            if region is not None and any(type(n) is Call for n in region):
                yield node, region  # type: ignore[misc]


def _dtype(expr: Expr) -> str:
    ty = infer_type_local(expr)
    if not isinstance(ty, TensorType):
        raise FakeQuantizationError(f"a dequantized value must be a tensor, got {ty}")
    return str(ty.dtype)


class _Failed(RelayKitError):
    """A region cannot be rewritten (internal: caught by the pass)."""

    def __init__(self, message: str, op_name: str) -> None:
        super().__init__(message)
        self.op_name = op_name


def _apply(rule: Any, expr: Expr, type_map: dict[Expr, Any], name: str) -> tuple[Expr, Any]:
    try:
        vals = rule(expr, type_map)
        out, t = vals
    except Exception as err:  # a rule may raise anything: it refuses the region
        raise _Failed(f"the rule of {name} failed: {type(err).__name__}: {err}", name) from err
    if not isinstance(out, Expr) or not isinstance(t, TensorAffineType | TupleAffineType):
        raise _Failed(f"the rule of {name} must return [expr, affine type], got {vals!r}", name)
    type_map[out] = t
    return out, t


def _dequantize_leaf(post: Call, type_map: dict[Expr, Any], optional: frozenset[str]) -> Expr:
    t = TensorAffineType(post.args[1], post.args[2], _dtype(post.args[0]), int(post.attrs.axis))
    type_map[post] = t
    rule = rule_of(_DQ, optional)
    if rule is None:
        raise _Failed(f"found no rewrite rule for {_DQ}", _DQ)
    return _apply(rule, post, type_map, _DQ)[0]


def _mutate(
    order: list[Expr],
    post_of: dict[Expr, Expr],
    out_type: TensorAffineType | None,
    optional: frozenset[str],
    type_map: dict[Expr, Any],
) -> dict[Expr, Expr]:
    """Rewrite the region's nodes (``order``, inputs first) to integer expressions."""
    new_of: dict[Expr, Expr] = {}
    for node in order:
        if isinstance(node, Constant):
            new_of[node] = node
        elif isinstance(node, Call) and _op_name(node) == _DQ:
            post = post_of[node]
            if not isinstance(post, Call):
                raise _Failed("a dequantize input was rewritten to a non-call", _DQ)
            new_of[node] = _dequantize_leaf(post, type_map, optional)
        elif isinstance(node, Tuple):
            fields = [new_of[f] for f in node.fields]
            new_tuple = Tuple(fields, node.span)
            if not all(isinstance(type_map.get(f), TensorAffineType) for f in fields):
                raise _Failed("a tuple in the region holds a value that is not quantized", "Tuple")
            type_map[new_tuple] = TupleAffineType([type_map[f] for f in fields])
            new_of[node] = new_tuple
        elif isinstance(node, TupleGetItem):
            tup = new_of[node.tuple_value]
            item = TupleGetItem(tup, node.index, node.span)
            tt = type_map.get(tup)
            if not isinstance(tt, TupleAffineType):
                raise _Failed("a tuple field of a value that is not quantized", "TupleGetItem")
            type_map[item] = tt.types[node.index]
            new_of[node] = item
        elif isinstance(node, Call):
            name = _op_name(node) or ""
            rule = rule_of(name, optional)
            if rule is None:
                raise _Failed(f"found no rewrite rule for {name}", name)
            args = [new_of[a] for a in node.args]
            expr = Call(node.op, args, node.attrs, node.type_args, node.span)
            if out_type is not None:
                type_map[expr] = out_type
            new_of[node] = _apply(rule, expr, type_map, name)[0]
    return new_of


def _check_rules(order: Iterable[Expr], optional: frozenset[str]) -> None:
    for node in order:
        name = _op_name(node)
        if name is not None and rule_of(name, optional) is None:
            raise _Failed(f"found no rewrite rule for {name}", name)


def _typed(out: Expr, name: str) -> None:
    try:
        infer_type_local(out)
    except Exception as err:  # the rewritten region does not type-check: keep the original
        raise _Failed(f"the rewritten region does not type-check: {err}", name) from err


def _fail(err: _Failed, where: Expr, hard_fail: bool) -> None:
    if not hard_fail:
        return
    if str(err).startswith("found no rewrite rule"):
        hint = (
            f"register a rule for {err.op_name} with register_fake_quantization_to_integer, "
            "or run with hard_fail=False to leave such regions in floating point"
        )
    else:
        hint = "run with hard_fail=False to leave such regions in floating point"
    last = str(where).strip().splitlines()[-1][:120]
    raise FakeQuantizationError(
        f"FakeQuantizationToInteger(hard_fail=True) cannot rewrite the region ending in "
        f"{last}: {err}; {hint}",
        op_name=err.op_name,
    ) from err


def _rewrite_regions(body: Expr, hard_fail: bool, optional: frozenset[str]) -> Expr:
    memo: dict[Expr, Expr] = {}

    def post(new: Expr, old: Expr) -> Expr | None:
        if _op_name(new) != _Q:
            return None
        order = _region(old.args[0])  # type: ignore[attr-defined]
        if order is None or not any(type(n) is Call for n in order):
            return None
        try:
            _check_rules(order, optional)
            q: Call = new  # type: ignore[assignment]
            out_type = TensorAffineType(
                q.args[1], q.args[2], str(q.attrs.out_dtype), int(q.attrs.axis)
            )
            type_map: dict[Expr, Any] = {}
            new_of = _mutate(order, memo, out_type, optional, type_map)
            top = Call(q.op, [new_of[old.args[0]], q.args[1], q.args[2]], q.attrs)  # type: ignore[attr-defined]
            type_map[top] = out_type
            rule = rule_of(_Q, optional)
            if rule is None:
                raise _Failed(f"found no rewrite rule for {_Q}", _Q)
            out = _apply(rule, top, type_map, _Q)[0]
            _typed(out, _Q)
        except _Failed as err:
            _fail(err, new, hard_fail)
            return None
        return out

    return rewrite_post_order(body, post, memo)


def _qat_inputs(call: Call) -> list[Expr] | None:
    """The nodes under a QAT candidate down to its dequantize inputs (inputs first)."""
    order: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(a, False) for a in reversed(call.args)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if (isinstance(node, Call) and _op_name(node) == _DQ) or isinstance(node, Constant):
            order.append(node)
        elif isinstance(node, Tuple):
            stack.append((node, True))
            stack.extend((f, False) for f in reversed(node.fields))
        elif isinstance(node, TupleGetItem):
            stack.append((node, True))
            stack.append((node.tuple_value, False))
        else:
            return None
    return order


def _rewrite_qat(body: Expr, hard_fail: bool, optional: frozenset[str]) -> Expr:
    def post(new: Expr, old: Expr) -> Expr | None:
        name = _op_name(new)
        if name is None or name not in QAT_OPS or rule_of(name, optional) is None:
            return None
        call: Call = new  # type: ignore[assignment]
        order = _qat_inputs(call)
        if order is None or not any(_op_name(n) == _DQ for n in order):
            return None
        try:
            type_map: dict[Expr, Any] = {}
            new_of = _mutate(order, {n: n for n in order}, None, optional, type_map)
            expr = Call(call.op, [new_of.get(a, a) for a in call.args], call.attrs, call.type_args)
            out, t = _apply(rule_of(name, optional), expr, type_map, name)
            if not isinstance(t, TensorAffineType):
                raise _Failed(f"{name} gives a tuple of quantized values", name)
            result = dequantize(out, t.scale, t.zero_point, axis=t.axis)
            _typed(result, name)
        except _Failed as err:
            _fail(err, new, hard_fail)
            return None
        return result

    return rewrite_post_order(body, post)


def fake_quantization_to_integer(
    mod: IRModule,
    hard_fail: bool = False,
    use_qat: bool = False,
    optional_qnn_ops: Iterable[str] = (),
) -> IRModule:
    """``mod`` with its fake-quantized regions rewritten to QNN operators (see the
    module's docstring); returns a new, typed module."""
    optional = frozenset(str(o) for o in optional_qnn_ops)
    out = mod.copy()
    infer_module(out)
    walks = [_rewrite_regions] + ([_rewrite_qat] if use_qat else [])
    for walk in walks:
        for gv, fn in list(out.items()):
            if not isinstance(fn, Function) or "Compiler" in fn.attrs:
                continue
            body = walk(fn.body, hard_fail, optional)
            if body is not fn.body:
                out[gv] = Function(fn.params, body, None, fn.type_params, fn.attrs, fn.span)
        infer_module(out)
    return out


class FakeQuantizationToInteger(ModulePass):
    """``relay.transform.FakeQuantizationToInteger(hard_fail=False, use_qat=False,
    optional_qnn_ops=[])`` (opt_level 0)."""

    def __init__(
        self,
        hard_fail: bool = False,
        use_qat: bool = False,
        optional_qnn_ops: Iterable[str] = (),
    ) -> None:
        self.hard_fail = bool(hard_fail)
        self.use_qat = bool(use_qat)
        self.optional_qnn_ops = tuple(str(o) for o in optional_qnn_ops)
        super().__init__(self._run, opt_level=0, name="FakeQuantizationToInteger")

    def _run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return fake_quantization_to_integer(
            mod, self.hard_fail, self.use_qat, self.optional_qnn_ops
        )
