"""Type inference: fill ``checked_type`` on every expression, iteratively.

Types flow bottom-up: variables take their annotation (or, for the parameters
of a function literal that is called directly, the argument types), operator
calls take what the operator's type relation returns, functions take
``fn (params) -> body``. Global functions are inferred callees first; a
recursive global needs its return type annotated.

>>> from relaykit.ir import Var, TensorType
>>> from relaykit.op import add
>>> x = Var("x", TensorType((2, 3)))
>>> str(infer_type(add(x, x)))
'Tensor[(2, 3), float32]'
"""

from __future__ import annotations

from relaykit.errors import RelayTypeError
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
)
from relaykit.ir.functor import post_order, rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import FuncType, IncompleteType, TensorType, TupleType, Type

from .pass_infra import ModulePass, PassContext

__all__ = ["InferType", "infer_type", "infer_module", "infer_function"]

_BOOL = TensorType((), "bool")


class _Inferencer:
    def __init__(self, root: Expr, global_types: dict[str, FuncType]) -> None:
        self.root = root
        self.global_types = global_types
        # Types of unannotated variables bound in this run (let vars, call-site hints).
        self.var_env: dict[Var, Type] = {}
        self.done: dict[int, Type] = {}

    # -- error reporting -------------------------------------------------------
    def fail(self, node: Expr, message: str) -> RelayTypeError:
        where = ""
        if node.span is not None:
            where = f" at {node.span}"
        try:
            from relaykit.text.printer import context_lines

            context = context_lines(self.root, node)
        except Exception:  # the printer is optional for the message
            context = f"  {type(node).__name__} node"
        return RelayTypeError(f"{message}{where}\n  in:\n{context}")

    # -- the walk --------------------------------------------------------------
    def run(self) -> Type:
        done = self.done
        stack: list[tuple[Expr, int]] = [(self.root, 0)]
        while stack:
            node, stage = stack.pop()
            key = id(node)
            if stage == 0:
                if key in done:
                    continue
                t = type(node)
                if t is Var:
                    self.finish(node, self.var_type(node))
                elif t is Constant:
                    self.finish(node, node._checked_type)
                elif t is GlobalVar:
                    self.finish(node, self.global_type(node))
                elif t is Op:
                    raise self.fail(
                        node,
                        f"operator {node.name} is used as a value; operators can only be "
                        "called, e.g. wrap it in a function: fn (%x) { op(%x) }",
                    )
                elif t is Let:
                    if node.var.type_annotation is not None:
                        # Allows recursive closures bound by let.
                        self.var_env[node.var] = node.var.type_annotation
                    stack.append((node, 1))
                    stack.append((node.value, 0))
                elif (
                    t is Call
                    and type(node.op) is Function
                    and any(p.type_annotation is None for p in node.op.params)
                ):
                    stack.append((node, 1))
                    for a in reversed(node.args):
                        stack.append((a, 0))
                else:
                    stack.append((node, 2))
                    for c in reversed(self.children(node)):
                        if id(c) not in done:
                            stack.append((c, 0))
            elif stage == 1:
                if type(node) is Let:
                    vt = done[id(node.value)]
                    ann = node.var.type_annotation
                    if ann is not None and ann != vt:
                        raise self.fail(
                            node, f"let %{node.var.name_hint} is annotated {ann} but bound to {vt}"
                        )
                    self.var_env[node.var] = vt
                    self.finish(node.var, vt)
                    stack.append((node, 2))
                    stack.append((node.body, 0))
                else:  # call of a function literal with unannotated params
                    fn = node.op
                    if len(fn.params) != len(node.args):
                        raise self.fail(
                            node,
                            f"function of {len(fn.params)} parameters called with "
                            f"{len(node.args)} arguments",
                        )
                    for p, a in zip(fn.params, node.args, strict=False):
                        if p.type_annotation is None:
                            prev = self.var_env.get(p)
                            at = done[id(a)]
                            if prev is not None and prev != at:
                                raise self.fail(
                                    node,
                                    f"parameter %{p.name_hint} is used at types {prev} and {at}",
                                )
                            self.var_env[p] = at
                    stack.append((node, 2))
                    stack.append((fn, 0))
            else:
                self.finish(node, self.compute(node))
        return done[id(self.root)]

    @staticmethod
    def children(node: Expr) -> tuple[Expr, ...]:
        t = type(node)
        if t is Call:
            return node.args if type(node.op) is Op else (node.op, *node.args)
        if t is Tuple:
            return node.fields
        if t is TupleGetItem:
            return (node.tuple_value,)
        if t is Function:
            return (*node.params, node.body)
        if t is If:
            return (node.cond, node.true_branch, node.false_branch)
        return ()

    def finish(self, node: Expr, ty: Type) -> None:
        self.done[id(node)] = ty
        node._set_checked_type(ty)

    def var_type(self, var: Var) -> Type:
        if var.type_annotation is not None:
            return var.type_annotation
        t = self.var_env.get(var)
        if t is None:
            raise self.fail(
                var,
                f"cannot infer the type of %{var.name_hint}: it has no type annotation; "
                f'give it one, e.g. relay.var({var.name_hint!r}, shape=(...), dtype="float32")',
            )
        return t

    def global_type(self, gv: GlobalVar) -> Type:
        t = self.global_types.get(gv.name_hint)
        if t is None:
            raise self.fail(
                gv,
                f"the type of @{gv.name_hint} is not known: it is not defined in the module "
                "or is a recursive function without a return type annotation",
            )
        return t

    def compute(self, node: Expr) -> Type:
        done = self.done
        t = type(node)
        if t is Call:
            return self.call_type(node)
        if t is Tuple:
            return TupleType([done[id(f)] for f in node.fields])
        if t is TupleGetItem:
            tt = done[id(node.tuple_value)]
            if not isinstance(tt, TupleType):
                raise self.fail(node, f"projection .{node.index} of a non-tuple of type {tt}")
            if not 0 <= node.index < len(tt.fields):
                raise self.fail(
                    node,
                    f"tuple index {node.index} out of range for {len(tt.fields)} fields ({tt})",
                )
            return tt.fields[node.index]
        if t is Function:
            body_t = done[id(node.body)]
            if node.ret_type is not None and node.ret_type != body_t:
                raise self.fail(
                    node,
                    f"function is annotated to return {node.ret_type} but its body has "
                    f"type {body_t}",
                )
            return FuncType([done[id(p)] for p in node.params], body_t)
        if t is Let:
            return done[id(node.body)]
        if t is If:
            ct = done[id(node.cond)]
            if ct != _BOOL:
                raise self.fail(node, f"if condition must be a scalar bool, got {ct}")
            tt, ft = done[id(node.true_branch)], done[id(node.false_branch)]
            if tt != ft:
                raise self.fail(node, f"if branches have different types: {tt} vs {ft}")
            return tt
        raise self.fail(node, f"cannot type a {t.__name__} node")

    def call_type(self, call: Call) -> Type:
        done = self.done
        arg_types = [done[id(a)] for a in call.args]
        op = call.op
        if type(op) is Op:
            rel = op.get_attr("FTypeRelation")
            if rel is None:
                raise self.fail(call, f"operator {op.name} has no type relation")
            arity = op.num_inputs
            if arity is not None and arity >= 0 and arity != len(arg_types):
                raise self.fail(
                    call, f"operator {op.name} takes {arity} inputs, got {len(arg_types)}"
                )
            try:
                out = rel(arg_types, call.attrs)
            except RelayTypeError as err:
                args = ", ".join(str(a) for a in arg_types)
                raise self.fail(call, f"type error in {op.name}({args}): {err}") from None
            if not isinstance(out, Type):
                raise self.fail(call, f"type relation of {op.name} returned {out!r}, not a Type")
            return out
        ft = done[id(op)]
        if not isinstance(ft, FuncType):
            raise self.fail(call, f"calling a value of non-function type {ft}")
        if len(ft.arg_types) != len(arg_types):
            raise self.fail(call, f"function of type {ft} called with {len(arg_types)} arguments")
        for i, (want, got) in enumerate(zip(ft.arg_types, arg_types, strict=False)):
            if not isinstance(want, IncompleteType) and want != got:
                raise self.fail(
                    call, f"argument {i} has type {got} but the function expects {want} ({ft})"
                )
        return ft.ret_type


def _signature(fn: Function) -> FuncType | None:
    """The declared type of a global function, if all of it is annotated."""
    if fn.ret_type is None or any(p.type_annotation is None for p in fn.params):
        return None
    return FuncType([p.type_annotation for p in fn.params], fn.ret_type)


def infer_type(expr: Expr, mod: IRModule | None = None) -> Type:
    """Infer and fill the types of ``expr`` (globals resolved in ``mod``); return its type."""
    gtypes: dict[str, FuncType] = {}
    if mod is not None:
        infer_module(mod)
        gtypes = {gv.name_hint: fn.checked_type for gv, fn in mod.items()}  # type: ignore[misc]
    return _Inferencer(expr, gtypes).run()


def _fill_ret_types(fn: Function) -> Function:
    """``fn`` with every function's missing return type filled in from inference (as
    TVM's type inference does), sharing all unchanged nodes."""
    if all(n.ret_type is not None for n in post_order(fn) if type(n) is Function):
        return fn

    def post(new: Expr, old: Expr) -> Expr | None:
        if new is not old:
            new._set_checked_type(old._checked_type)  # type: ignore[arg-type]
        if type(new) is Function and new.ret_type is None:
            ft = old._checked_type
            assert isinstance(ft, FuncType)
            filled = new.with_fields(ret_type=ft.ret_type)
            filled._set_checked_type(ft)
            return filled
        return None

    return rewrite_post_order(fn, post)  # type: ignore[return-value]


def infer_function(fn: Function, mod: IRModule | None = None) -> Function:
    """Type-check one function against the signatures of ``mod``'s globals; return it
    with return types filled in."""
    gtypes: dict[str, FuncType] = {}
    if mod is not None:
        for gv, other in mod.items():
            t = other._checked_type if other.has_checked_type else _signature(other)
            if isinstance(t, FuncType):
                gtypes[gv.name_hint] = t
    _Inferencer(fn, gtypes).run()
    return _fill_ret_types(fn)


def infer_module(mod: IRModule) -> IRModule:
    """Infer every global function of ``mod`` in place (callees before callers)."""
    names = [gv.name_hint for gv in mod.get_global_vars()]
    gtypes: dict[str, FuncType] = {}
    for name in names:
        sig = _signature(mod[name])
        if sig is not None:
            gtypes[name] = sig
    state: dict[str, int] = {}  # 1 = in progress, 2 = done
    for start in names:
        if state.get(start):
            continue
        stack: list[tuple[str, bool]] = [(start, False)]
        while stack:
            name, ready = stack.pop()
            if ready:
                fn = mod[name]
                ft = _Inferencer(fn, gtypes).run()
                assert isinstance(ft, FuncType)
                gtypes[name] = ft
                filled = _fill_ret_types(fn)
                if filled is not fn:
                    mod._set_checked(name, filled)
                state[name] = 2
                continue
            if state.get(name):
                continue
            state[name] = 1
            stack.append((name, True))
            for gv in mod.global_refs(name):
                callee = gv.name_hint
                if callee not in mod:
                    raise RelayTypeError(f"@{name} refers to @{callee}, which is not in the module")
                if state.get(callee) == 1 and callee not in gtypes:
                    raise RelayTypeError(
                        f"@{callee} is recursive (through @{name}); annotate its parameter and "
                        "return types so its type is known before its body is checked"
                    )
                if not state.get(callee):
                    stack.append((callee, False))
    return mod


class InferType(ModulePass):
    """``relay.transform.InferType()``: fill ``checked_type`` everywhere in a module."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="InferType")

    @staticmethod
    def _transform(mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod.copy()
        infer_module(out)
        return out
