"""``AnnotateTarget``: mark every operator with the target that will run it.

As Relay's pass does, every call gets a target (see
:mod:`relaykit.byoc.choose`), each of its arguments is wrapped in
``compiler_begin(arg, target)`` and each annotated producer in
``compiler_end(producer, its_target)``, so every operator starts as a region of
its own. With ``include_non_call_ops=True`` tuples and projections take the
target their inputs share (``"default"`` when they differ); with ``False`` they
stay unannotated. ``If``, ``Let`` and function literals stay on the host; the
values they consume are closed with ``compiler_end``.

As in TVM, a producer used by several consumers gets one ``compiler_end`` per
use. Differences from TVM, on purpose: a ``Let`` value is closed with
``compiler_end`` only (TVM also opened a region that no ``compiler_end`` ever
closed); an empty tuple is left alone like a constant; re-annotating keeps the
targets of already annotated operators and re-decides the rest.

>>> from relaykit import relay
>>> import relaykit as tvm
>>> x = relay.var("x", shape=(2,))
>>> mod = tvm.IRModule.from_expr(relay.nn.relu(x))
>>> print(AnnotateTarget("nowhere")(mod)["main"].body.op.name)
annotation.compiler_end
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from relaykit.ir.expr import (
    Call,
    Expr,
    Function,
    If,
    Let,
    Tuple,
    TupleGetItem,
    checked_type_or_none,
)
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.transform.pass_infra import Pass, PassContext, PassInfo

from ._common import (
    DEFAULT_TARGET,
    annotation_ops,
    copy_type,
    ensure_typed,
    is_composite,
    make_begin,
    make_end,
    new_call,
    new_tuple,
    new_tuple_get_item,
    no_gc,
)
from .choose import Decision, TargetChooser, normalize_targets
from .pins import as_pins
from .regions import find_regions, walk

__all__ = ["AnnotateTarget", "annotate_function", "strip_annotations"]


class _HasAnnotations(Exception):
    pass


def strip_annotations(func: Function) -> tuple[Function, dict[Expr, str]]:
    """``func`` without compiler annotations, and the non-default target each
    formerly annotated node had (keyed by the stripped nodes)."""
    begin_op, end_op = annotation_ops()
    rs = find_regions(func.body)
    old_target: dict[Expr, str] = {}
    for node, r in rs.region_of.items():
        t = rs.target(rs.find(r))
        if t != DEFAULT_TARGET and not (type(node) is Call and node.op in (begin_op, end_op)):
            old_target[node] = t
    kept: dict[Expr, str] = {}

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is Call and (new.op is begin_op or new.op is end_op):
            return new.args[0]
        copy_type(new, old)
        t = old_target.get(old)
        if t is not None:
            kept[new] = t
        return None

    body = rewrite_post_order(func.body, post)
    return copy_type(func.with_fields(body=body), func), kept  # type: ignore[return-value]


class _Annotator:
    """The state of one ``annotate_function`` run: the rewritten node of every visited
    node and the target of every annotated one."""

    def __init__(
        self,
        chooser: TargetChooser,
        include_non_call_ops: bool,
        record: dict[Call, Decision] | None,
        keep: dict[Expr, str] | None,
    ) -> None:
        self.chooser = chooser
        self.include_non_call_ops = include_non_call_ops
        self.record = record
        self.keep = keep
        self.new: dict[Expr, Expr] = {}
        self.target: dict[Expr, str] = {}

    def closed(self, a: Expr) -> Expr:
        """The value of ``a`` as seen by one consumer outside its region: a
        ``compiler_end`` of its own for every use, as TVM's pass makes them."""
        na = self.new[a]
        if a not in self.target or (type(a) is Call and not a.args):
            return na
        return make_end(na, self.target[a])

    def run(self, root: Expr) -> Expr:
        """Rewrites every node under ``root``, inputs first; returns the closed root.

        Operator calls, the bulk of any graph, are handled inline; the other kinds go
        to :meth:`visit_tuple`, :meth:`visit_projection` and :meth:`visit_host`."""
        begin_op, end_op = annotation_ops()
        new, target, closed = self.new, self.target, self.closed
        choose, decide = self.chooser.choose, self.chooser.decide
        record, keep = self.record, self.keep
        others: dict[type, Callable[[Any], None]] = {
            Tuple: self.visit_tuple,
            TupleGetItem: self.visit_projection,
        }
        host = self.visit_host
        node: Any
        for node in walk(root):
            if type(node) is not Call:
                others.get(type(node), host)(node)
                continue
            op = node.op
            if op is begin_op or op is end_op:
                raise _HasAnnotations()
            args = node.args
            if not self.include_non_call_ops and type(op) is not Op and not is_composite(op):
                self.visit_host_call(node)
                continue
            producer = target.get(args[0]) if args else None
            fixed = keep.get(node) if keep else None
            if fixed is not None:
                tgt = fixed
            elif record is not None:
                decision = record[node] = decide(node, producer)
                tgt = decision.target
            else:
                tgt = choose(node, producer)
            new_op = op if (type(op) is Op or is_composite(op)) else new[op]
            new_args = [make_begin(closed(a), tgt) for a in args]
            new[node] = new_call(
                new_op, new_args, node.attrs, node.type_args, node.span, checked_type_or_none(node)
            )
            target[node] = tgt
        return closed(root)

    def shared_target(self, fields: Sequence[Expr]) -> str | None:
        """The target the annotated ``fields`` share (``"default"`` when they differ,
        None when none is annotated); inputs (variables, constants) do not vote,
        unlike TVM, where one input field sent the tuple home."""
        ref = None
        for f in fields:
            ft = self.target.get(f)
            if ft is None:
                continue
            ref = ft if ref is None or ref == ft else DEFAULT_TARGET
        return ref

    def visit_tuple(self, node: Tuple) -> None:
        """A tuple joins the target its fields share, or closes them (host tuple)."""
        fields: Sequence[Expr] = node.fields
        ty = checked_type_or_none(node)
        if not fields:
            self.new[node] = node
            return
        if not self.include_non_call_ops:
            fields = [self.closed(f) for f in fields]
        else:
            tgt = self.shared_target(fields)
            if tgt is None:  # a tuple of inputs is an input itself
                self.new[node] = new_tuple([self.new[f] for f in fields], node.span, ty)
                return
            fields = [make_begin(self.closed(f), tgt) for f in fields]
            self.target[node] = tgt
        self.new[node] = new_tuple(fields, node.span, ty)

    def visit_projection(self, node: TupleGetItem) -> None:
        """A projection follows the target of its tuple, or closes it (host projection)."""
        tv = node.tuple_value
        ty = checked_type_or_none(node)
        if not self.include_non_call_ops:
            value = self.closed(tv)
        else:
            tgt = self.target.get(tv)
            if tgt is None:  # a projection of an input is an input itself
                self.new[node] = new_tuple_get_item(self.new[tv], node.index, node.span, ty)
                return
            value = make_begin(self.closed(tv), tgt)
            self.target[node] = tgt
        self.new[node] = new_tuple_get_item(value, node.index, node.span, ty)

    def visit_host_call(self, node: Call) -> None:
        """A call of a function value (a local or global function, not an operator or a
        composite) without ``include_non_call_ops``: it stays on the host unannotated, as in
        TVM, and closes the values it consumes."""
        op = node.op
        new_op = self.new.get(op, op)
        self.new[node] = new_call(
            new_op,
            [self.closed(a) for a in node.args],
            node.attrs,
            node.type_args,
            node.span,
            checked_type_or_none(node),
        )

    def visit_host(self, node: Expr) -> None:
        """``If``, ``Let`` and function literals stay on the host and close the values
        they consume; leaves (variables, constants, operators) stay as they are."""
        closed = self.closed
        out: Expr
        if type(node) is Let:
            out = Let(node.var, closed(node.value), closed(node.body), node.span)
        elif type(node) is If:
            out = If(
                closed(node.cond), closed(node.true_branch), closed(node.false_branch), node.span
            )
        elif type(node) is Function and "Composite" not in node.attrs:
            out = node.with_fields(body=closed(node.body))
        else:
            self.new[node] = node
            return
        self.new[node] = copy_type(out, node)


def annotate_function(
    func: Function,
    chooser: TargetChooser,
    include_non_call_ops: bool = True,
    record: dict[Call, Decision] | None = None,
    keep: dict[Expr, str] | None = None,
) -> Function:
    """``func`` with ``compiler_begin``/``compiler_end`` around every operator.

    ``record``, when given, receives the :class:`Decision` of every call;
    ``keep`` fixes the targets of some calls (used when re-annotating).
    """
    body = _Annotator(chooser, include_non_call_ops, record, keep).run(func.body)
    return copy_type(func.with_fields(body=body), func)  # type: ignore[return-value]


def _annotate(
    func: Function,
    chooser: TargetChooser,
    include_non_call_ops: bool,
    record: dict[Call, Decision] | None,
) -> Function:
    try:
        return annotate_function(func, chooser, include_non_call_ops, record)
    except _HasAnnotations:
        stripped, keep = strip_annotations(func)
        return annotate_function(stripped, chooser, include_non_call_ops, record, keep)


class AnnotateTarget(Pass):
    """``relay.transform.AnnotateTarget(targets, include_non_call_ops=True)``.

    ``targets`` is one name or a list in priority order. ``pin`` takes pins
    (see :func:`relaykit.byoc.pin`), operator names or predicates (those pin to
    the host).
    """

    def __init__(
        self, targets: str | Sequence[str], include_non_call_ops: bool = True, *, pin: Any = None
    ) -> None:
        self.targets = normalize_targets(targets)
        self.include_non_call_ops = bool(include_non_call_ops)
        self.pins = as_pins(pin, self.targets)
        self.info = PassInfo(0, "AnnotateTarget", ("InferType",))

    def chooser(self) -> TargetChooser:
        return TargetChooser(self.targets, self.pins)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        chooser = self.chooser()
        out = mod.copy()
        for gv, fn in mod.items():
            if "Compiler" in fn.attrs or "Composite" in fn.attrs:
                continue
            fn = ensure_typed(fn, mod)
            with no_gc():
                out.update_func(gv, _annotate(fn, chooser, self.include_non_call_ops, None))
        return out
