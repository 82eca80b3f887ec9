"""Dynamic quantization as dnnl composites: ``GroupDynamicQuantization``.

ONNX's ``DynamicQuantizeLinear`` (what onnxruntime's ``quantize_dynamic`` puts before
each ``MatMulInteger``) computes a tensor's scale and zero point at run time from its
range: ``scale = (max(x, 0) - min(x, 0)) / 255``, ``zp = round(-min(x, 0) / scale)``,
``q = saturate(round(x / scale) + zp)`` (halves to even). The importer writes it as
scalar arithmetic (``max``, ``min``, ``where``, a rounding built from ``floor``) and a
``qnn.quantize`` with the computed parameters; each ``MatMulInteger`` reading ``q``
becomes ``qnn.dense`` with that zero point, then ``cast`` to float32, a multiply by
``scale * weight_scale`` and the bias add. Scalars and computed parameters have no
oneDNN primitive one by one, so this pass groups them into two composites the dnnl
codegen lowers whole:

- ``dnnl.dynamic_quantize``: ``fn(x) -> (q, scale, zero_point)``, the chain as it
  was (one runtime step: the range, the parameters, the quantized tensor);
- ``dnnl.dynamic_dense``: ``fn(q, scale, zero_point) -> y``, from the ``qnn.dense``
  to the bias add (a oneDNN int8 matmul whose source scale and zero point are read
  at run time).

A quantization is grouped only when every reader of its scale and zero point is a
grouped dense (otherwise the graph is left as it is, and the scalars stay on the host).

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(4, 8))
>>> fn = relay.Function([x], relay.nn.relu(x))
>>> GroupDynamicQuantization()(IRModule.from_expr(fn))["main"].body.op.name
'nn.relu'
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from relaykit.backends.dnnl.compile.dynamic import DYNAMIC_DENSE, DYNAMIC_QUANTIZE
from relaykit.ir.expr import Call, Constant, Expr, Function, TupleGetItem, Var
from relaykit.ir.expr import Tuple as RTuple
from relaykit.ir.functor import post_order, rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, TupleType
from relaykit.transform.pass_infra import FunctionPass, PassContext

__all__ = [
    "GroupDynamicQuantization",
    "group_dynamic_quantization",
    "match_dynamic_quantize",
]


def _name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _call(e: Expr, name: str, nargs: int | None = None) -> Call | None:
    if _name(e) != name or (nargs is not None and len(e.args) != nargs):  # type: ignore[attr-defined]
        return None
    return e  # type: ignore[return-value]


def _is_value(e: Expr, value: float) -> bool:
    if not isinstance(e, Constant):
        return False
    v = np.asarray(e.data.numpy()).reshape(-1)
    return v.size == 1 and float(v[0]) == value


def _full_reduce(e: Expr, name: str, x: Expr) -> bool:
    c = _call(e, name, 1)
    if c is None or c.args[0] is not x:
        return False
    a = c.attrs
    return a.get("axis") in (None, [], ()) and not a.get("keepdims") and not a.get("exclude")


def _is_round_half_even(r: Expr, v: Expr) -> bool:
    """``r`` is the importer's rounding of ``v`` (halves to even, built from floor):
    ``where(floor(v + .5) - v == .5 and floor(v + .5) % 2 != 0, f - 1, f)``."""
    w = _call(r, "where", 3)
    if w is None:
        return False
    f = w.args[2]
    fl = _call(f, "floor", 1)
    add = _call(fl.args[0], "add", 2) if fl is not None else None
    if add is None or add.args[0] is not v or not _is_value(add.args[1], 0.5):
        return False
    minus = _call(w.args[1], "subtract", 2)
    if minus is None or minus.args[0] is not f or not _is_value(minus.args[1], 1.0):
        return False
    both = _call(w.args[0], "logical_and", 2)
    if both is None:
        return False
    tie, odd = _call(both.args[0], "equal", 2), _call(both.args[1], "not_equal", 2)
    if tie is None or odd is None or not _is_value(tie.args[1], 0.5):
        return False
    diff = _call(tie.args[0], "subtract", 2)
    if diff is None or diff.args[0] is not f or diff.args[1] is not v:
        return False
    mod = _call(odd.args[0], "floor_mod", 2)
    return (
        mod is not None and mod.args[0] is f and _is_value(mod.args[1], 2.0)
        and _is_value(odd.args[1], 0.0)
    )  # fmt: skip


@dataclass
class _Quantization:
    """One matched ``DynamicQuantizeLinear``: its input, its three results, and every
    expression of the chain between them (``inner``)."""

    x: Expr
    q: Call
    scale: Expr
    zero_point: Expr  # uint8
    inner: set[int] = field(default_factory=set)
    denses: list[_Dense] = field(default_factory=list)


@dataclass
class _Dense:
    """One ``MatMulInteger`` chain reading a matched quantization, up to ``root``."""

    root: Expr
    nodes: set[int]  # the chain's expressions (ids), the root included
    zp_nodes: set[int]  # those reading the zero point


def _quantize_parts(q: Expr) -> tuple[Call, Expr, Expr, Expr] | None:
    """``(call, x, scale, zero point)`` of a ``qnn.quantize`` of a static float32 tensor
    to uint8, rounding halves to even, with computed parameters."""
    call = _call(q, "qnn.quantize", 3)
    if call is None or isinstance(call.args[1], Constant):
        return None
    a = call.attrs
    x = call.args[0]
    ty = x.checked_type if x.has_checked_type else None
    ok = (
        str(a.out_dtype) == "uint8" and str(a.get("rounding", "")) == "TONEAREST_EVEN"
        and isinstance(ty, TensorType) and str(ty.dtype) == "float32" and ty.is_static
        and len(ty.shape) > 0
    )  # fmt: skip
    return (call, x, call.args[1], call.args[2]) if ok else None


def _scale_parts(safe: Expr, x: Expr) -> tuple[Expr, Expr] | None:
    """``(scale, lo)`` of ``where(scale == 0, 1, scale)`` with ``scale = (max(max(x), 0)
    - min(min(x), 0)) / 255`` and ``lo = min(min(x), 0)``."""
    where = _call(safe, "where", 3)
    if where is None or not _is_value(where.args[1], 1.0):
        return None
    scale = where.args[2]
    eq = _call(where.args[0], "equal", 2)
    div = _call(scale, "divide", 2)
    span = _call(div.args[0], "subtract", 2) if div is not None else None
    if eq is None or span is None or eq.args[0] is not scale:
        return None
    hi, lo = _call(span.args[0], "maximum", 2), _call(span.args[1], "minimum", 2)
    ok = (
        _is_value(eq.args[1], 0.0) and _is_value(div.args[1], 255.0)  # type: ignore[union-attr]
        and hi is not None and lo is not None
        and _is_value(hi.args[1], 0.0) and _is_value(lo.args[1], 0.0)
        and _full_reduce(hi.args[0], "max", x) and _full_reduce(lo.args[0], "min", x)
    )  # fmt: skip
    return (scale, lo) if ok else None  # type: ignore[return-value]


def _zero_point_of(zp32: Expr, lo: Expr, safe: Expr) -> Expr | None:
    """The uint8 zero point ``saturate(round(0 - lo / safe))`` that ``zp32`` (its int32
    cast) reads, else None."""
    to_i32 = _call(zp32, "cast", 1)
    if to_i32 is None or str(to_i32.attrs.dtype) != "int32":
        return None
    zp = to_i32.args[0]
    to_u8 = _call(zp, "cast", 1)
    clip = _call(to_u8.args[0], "clip", 1) if to_u8 is not None else None
    if clip is None or str(to_u8.attrs.dtype) != "uint8":  # type: ignore[union-attr]
        return None
    if float(clip.attrs.a_min) != 0.0 or float(clip.attrs.a_max) != 255.0:
        return None
    v = _call_round_input(clip.args[0])
    neg = _call(v, "subtract", 2) if v is not None else None
    ratio = _call(neg.args[1], "divide", 2) if neg is not None else None
    ok = (
        ratio is not None and _is_value(neg.args[0], 0.0)  # type: ignore[union-attr]
        and ratio.args[0] is lo and ratio.args[1] is safe
        and _is_round_half_even(clip.args[0], v)  # type: ignore[arg-type]
    )  # fmt: skip
    return zp if ok else None


def match_dynamic_quantize(q: Expr) -> _Quantization | None:
    """The importer's ``DynamicQuantizeLinear`` ending in ``q`` (a ``qnn.quantize`` to
    uint8 with computed parameters), else None."""
    parts = _quantize_parts(q)
    if parts is None:
        return None
    call, x, safe, zp32 = parts
    scale_lo = _scale_parts(safe, x)
    if scale_lo is None:
        return None
    scale, lo = scale_lo
    zp = _zero_point_of(zp32, lo, safe)
    if zp is None:
        return None
    match = _Quantization(x, call, scale, zp)
    stop = {id(x)}
    for node in post_order(RTuple([call, scale, zp]), skip=lambda n: id(n) in stop):
        if not isinstance(node, (Constant, RTuple)):
            match.inner.add(id(node))
    return match


def _call_round_input(r: Expr) -> Expr | None:
    """The ``v`` of the importer's rounding ``r`` (read from its ``floor(v + .5)``)."""
    w = _call(r, "where", 3)
    fl = _call(w.args[2], "floor", 1) if w is not None else None
    add = _call(fl.args[0], "add", 2) if fl is not None else None
    return add.args[0] if add is not None else None


def _users(root: Expr) -> dict[int, list[Expr]]:
    users: dict[int, list[Expr]] = {}
    for node in post_order(root, skip=lambda n: type(n) is Function):
        kids: tuple[Expr, ...] = ()
        if type(node) is Call:
            kids = node.args
        elif isinstance(node, RTuple):
            kids = node.fields
        elif isinstance(node, TupleGetItem):
            kids = (node.tuple_value,)
        for k in kids:
            users.setdefault(id(k), []).append(node)
    return users


def _vector(v: np.ndarray, units: int) -> bool:
    """One value, or one per output feature (broadcast along the last axis)."""
    return str(v.dtype) == "float32" and v.ndim <= 1 and v.size in (1, units)


def _only_user(e: Expr, users: dict[int, list[Expr]]) -> Expr | None:
    u = users.get(id(e), [])
    return u[0] if len(u) == 1 else None


def _dense_head(d: Expr, m: _Quantization) -> tuple[Call, set[int]] | None:
    """A ``qnn.dense`` of ``m``'s result (or a reshape of it) by constant symmetric int8
    weights, reading ``m``'s zero point (through a reshape and an int32 cast), unit
    scales: the call and the expressions reading the zero point."""
    dense = _call(d, "qnn.dense", 6)
    if dense is None:
        return None
    data, w, zp, wzp, s_in, s_w = dense.args
    wv = w.data.numpy() if isinstance(w, Constant) else None
    ok = (
        (data is m.q or (_name(data) == "reshape" and data.args[0] is m.q))  # type: ignore[attr-defined]
        and wv is not None and str(wv.dtype) == "int8" and wv.ndim == 2
        and _is_value(wzp, 0.0) and _is_value(s_in, 1.0) and _is_value(s_w, 1.0)
        and str(dense.attrs.get("out_dtype", "int32")) in ("", "int32")
    )  # fmt: skip
    cast = _call(zp, "cast", 1)
    if not ok or cast is None or str(cast.attrs.dtype) != "int32":
        return None
    zp_nodes = {id(cast)}
    inner = cast.args[0]
    if _name(inner) == "reshape":
        zp_nodes.add(id(inner))
        inner = inner.args[0]  # type: ignore[attr-defined]
    return (dense, zp_nodes) if inner is m.zero_point else None


def _dense_tail(
    dense: Call, m: _Quantization, users: dict[int, list[Expr]], units: int
) -> tuple[Expr, set[int]] | None:
    """From ``dense``: [reshape keeping the last axis], cast to float32, times
    ``m.scale * weight_scale``, [+ bias]: the last expression and the chain's."""
    nodes: set[int] = set()
    nxt = _only_user(dense, users)
    if nxt is not None and _name(nxt) == "reshape":
        ty = nxt.checked_type
        if not isinstance(ty, TensorType) or int(ty.shape[-1]) != units:
            return None
        nodes.add(id(nxt))
        nxt = _only_user(nxt, users)
    to_f = _call(nxt, "cast", 1) if nxt is not None else None
    mul = _only_user(to_f, users) if to_f is not None else None
    if mul is None or _name(mul) != "multiply" or str(to_f.attrs.dtype) != "float32":  # type: ignore[union-attr]
        return None
    factor = mul.args[1] if mul.args[0] is to_f else mul.args[0]  # type: ignore[attr-defined]
    fm = _call(factor, "multiply", 2)
    if fm is None or _only_user(fm, users) is not mul:
        return None
    ws = fm.args[1] if fm.args[0] is m.scale else fm.args[0] if fm.args[1] is m.scale else None
    if not isinstance(ws, Constant) or not _vector(ws.data.numpy(), units):
        return None
    nodes |= {id(to_f), id(mul), id(fm)}
    add = _only_user(mul, users)
    if add is not None and _name(add) == "add":
        bias = add.args[0] if add.args[1] is mul else add.args[1]  # type: ignore[attr-defined]
        if isinstance(bias, Constant) and _vector(bias.data.numpy(), units):
            return add, nodes | {id(add)}
    return mul, nodes


def _match_dense(d: Expr, m: _Quantization, users: dict[int, list[Expr]]) -> _Dense | None:
    """A ``MatMulInteger`` chain reading ``m`` from ``d`` (see the two parts above)."""
    head = _dense_head(d, m)
    if head is None:
        return None
    dense, zp_nodes = head
    units = int(dense.args[1].data.numpy().shape[0])  # type: ignore[attr-defined]
    tail = _dense_tail(dense, m, users, units)
    if tail is None:
        return None
    root, nodes = tail
    return _Dense(root, nodes | zp_nodes | {id(dense)}, zp_nodes)


def _closed(m: _Quantization, users: dict[int, list[Expr]]) -> bool:
    """Whether the chain's scalars are read by the chain and its grouped denses only."""
    chains: set[int] = set()
    for d in m.denses:
        chains |= d.nodes
    inside = m.inner | chains
    roots = {id(d.root) for d in m.denses}
    for key in (m.inner - {id(m.q)}) | (chains - roots):
        if any(id(u) not in inside for u in users.get(key, [])):
            # a reshape of q read elsewhere reads q only (still available): allowed
            return False
    return True


def _composite(params: list[Var], body: Expr, name: str) -> Function:
    return Function(params, body, attrs={"Composite": name, "PartitionedFromPattern": name})


def _substituted(root: Expr, sub: dict[Expr, Expr]) -> Expr:
    memo: dict[Expr, Expr] = dict(sub)
    return rewrite_post_order(root, lambda new, old: None, memo)


def group_dynamic_quantization(fn: Function) -> Function:
    """``fn`` with each grouped dynamic quantization and its denses as composites (see
    the module docs)."""
    matches: list[_Quantization] = []
    for node in post_order(fn.body, skip=lambda n: type(n) is Function):
        m = match_dynamic_quantize(node)
        if m is not None:
            matches.append(m)
    if not matches:
        return fn
    users = _users(fn.body)
    by_q: dict[int, _Quantization] = {}
    by_root: dict[int, tuple[_Quantization, _Dense]] = {}
    for m in matches:
        readers = list(users.get(id(m.q), []))
        for r in list(readers):
            if _name(r) == "reshape":
                readers += users.get(id(r), [])
        m.denses = [d for d in (_match_dense(r, m, users) for r in readers) if d is not None]
        if not m.denses or not _closed(m, users):
            continue
        by_q[id(m.q)] = m
        for d in m.denses:
            by_root[id(d.root)] = (m, d)
    if not by_q:
        return fn
    calls: dict[int, tuple[Expr, Expr, Expr]] = {}

    def quantization(m: _Quantization, x: Expr) -> tuple[Expr, Expr, Expr]:
        got = calls.get(id(m))
        if got is None:
            xp = Var("x", m.x.checked_type)
            body = _substituted(RTuple([m.q, m.scale, m.zero_point]), {m.x: xp})
            ret = TupleType([m.q.checked_type, m.scale.checked_type, m.zero_point.checked_type])
            f = _composite([xp], body, DYNAMIC_QUANTIZE).with_fields(ret_type=ret)
            call = Call(f, [x])
            got = calls[id(m)] = (
                TupleGetItem(call, 0),
                TupleGetItem(call, 1),
                TupleGetItem(call, 2),
            )
        return got

    def post(new: Expr, old: Expr) -> Expr | None:
        m = by_q.get(id(old))
        if m is not None:
            return quantization(m, new.args[0])[0]  # type: ignore[attr-defined]
        hit = by_root.get(id(old))
        if hit is None:
            return None
        m, d = hit
        q, s, z = calls[id(m)]  # q is read before the dense chain: already made
        params = [
            Var("q", m.q.checked_type), Var("scale", m.scale.checked_type),
            Var("zero_point", m.zero_point.checked_type),
        ]  # fmt: skip
        body = _substituted(d.root, dict(zip((m.q, m.scale, m.zero_point), params, strict=True)))
        f = _composite(params, body, DYNAMIC_DENSE).with_fields(ret_type=d.root.checked_type)
        return Call(f, [q, s, z])

    out = rewrite_post_order(fn, post)
    return out if isinstance(out, Function) else fn


class GroupDynamicQuantization(FunctionPass):
    """:func:`group_dynamic_quantization` on every function (run before partitioning)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="GroupDynamicQuantization")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        return group_dynamic_quantization(fn)
