"""The type checker: the IR checks itself (as xDSL's ``verify`` does).

Types flow bottom-up: variables take their annotation (or, for the parameters
of a function literal that is called directly, the argument types), operator
calls take what the operator's ``"FTypeRelation"`` attribute returns,
functions take ``fn (params) -> body``. Global functions are checked callees
first; a recursive global needs its return type annotated. The walk is
iterative, so the depth of a graph does not matter.

Three entries:

- :func:`infer_type` types a whole expression (every node, again);
- :func:`infer_type_local` types only the nodes that have no type yet, trusting
  the types already present on sub-expressions (TVM's ``InferTypeLocal``): the
  entry for passes and frontends that build a few new nodes over typed ones;
- :func:`infer_module` / :func:`infer_function` check a module's globals.

>>> from relaykit.ir import Var, TensorType
>>> import relaykit.op  # registers the operators and their type relations
>>> x = Var("x", TensorType((2, 3)))
>>> y = x + x
>>> str(infer_type(y))
'Tensor[(2, 3), float32]'
>>> z = y * y
>>> str(infer_type_local(z)), z.args[0] is y
('Tensor[(2, 3), float32]', True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from relaykit.errors import RelayKitError, RelayTypeError

from .expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from .functor import children, post_order, rewrite_post_order
from .hooks import has_printer, printer_hook
from .op import Op
from .types import FuncType, IncompleteType, TensorType, TupleType, Type

if TYPE_CHECKING:
    from .module import IRModule

__all__ = [
    "TypeChecker",
    "infer_type",
    "infer_type_local",
    "infer_function",
    "infer_module",
    "function_signature",
    "global_types",
]

_BOOL = TensorType((), "bool")
# What a type relation raises when a call's attribute values are not of the kinds it
# reads (they come from user text or code): reported as a type error of that call.
_RELATION_CRASHES = (TypeError, ValueError, KeyError, IndexError, AttributeError, ArithmeticError)
_VISIT, _BIND, _FINISH = 0, 1, 2


class TypeChecker:
    """One run of type inference over ``root``.

    ``global_types`` gives the types of the globals ``root`` refers to. With
    ``trust_existing`` a node that already has a checked type is not visited
    again: its type (and its subtree's) is taken as it is.
    """

    def __init__(
        self,
        root: Expr,
        global_types: Mapping[str, FuncType] | None = None,
        trust_existing: bool = False,
    ) -> None:
        self.root = root
        self.global_types = dict(global_types or {})
        self.trust_existing = trust_existing
        # Types of unannotated variables bound in this run (let vars, call-site hints).
        self.var_env: dict[Var, Type] = {}
        self.done: dict[int, Type] = {}
        self.rules: dict[Op, tuple[Any, int | None]] = {}

    # -- error reporting -------------------------------------------------------
    def fail(self, node: Expr, message: str) -> RelayTypeError:
        where = f" at {node.span}" if node.span is not None else ""
        context = f"  {type(node).__name__} node"
        if has_printer():
            try:
                context = printer_hook().context_lines(self.root, node)
            except Exception:  # the printed context is optional for the message
                context = f"  {type(node).__name__} node"
        return RelayTypeError(f"{message}{where}\n  in:\n{context}")

    # -- the walk --------------------------------------------------------------
    def run(self) -> Type:
        """Type ``root`` and everything below it; return the type of ``root``."""
        stack: list[tuple[Expr, int]] = [(self.root, _VISIT)]
        while stack:
            node, stage = stack.pop()
            if stage == _VISIT:
                self.visit(node, stack)
            elif stage == _BIND:
                self.bind(node, stack)
            else:
                self.finish(node, self.compute(node))
        return self.done[id(self.root)]

    def visit(self, node: Expr, stack: list[tuple[Expr, int]]) -> None:
        """First sight of ``node``: type a leaf, or schedule its children."""
        done = self.done
        key = id(node)
        if key in done:
            return
        t = type(node)
        if self.trust_existing and node._checked_type is not None and t is not Op:
            done[key] = node._checked_type
        elif t is Var:
            self.finish(node, self.var_type(node))  # type: ignore[arg-type]
        elif t is Constant:
            self.finish(node, node._checked_type)  # type: ignore[arg-type]
        elif t is GlobalVar:
            self.finish(node, self.global_type(node))  # type: ignore[arg-type]
        elif t is Op:
            raise self.fail(
                node,
                f"operator {node.name} is used as a value; operators can only be "  # type: ignore[attr-defined]
                "called, e.g. wrap it in a function: fn (%x) { op(%x) }",
            )
        elif t is Let:
            var = node.var  # type: ignore[attr-defined]
            if var.type_annotation is not None:
                # Allows recursive closures bound by let.
                self.var_env[var] = var.type_annotation
            stack.append((node, _BIND))
            stack.append((node.value, _VISIT))  # type: ignore[attr-defined]
        elif t is Call and _calls_untyped_literal(node):  # type: ignore[arg-type]
            stack.append((node, _BIND))
            stack.extend((a, _VISIT) for a in reversed(node.args))  # type: ignore[attr-defined]
        else:
            stack.append((node, _FINISH))
            stack.extend((c, _VISIT) for c in reversed(self.children(node)) if id(c) not in done)

    def bind(self, node: Expr, stack: list[tuple[Expr, int]]) -> None:
        """Bind the variables of a let, or the parameters of a called function literal,
        to the types of their values; then schedule the body."""
        if type(node) is Let:
            self.bind_let(node)
            stack.append((node, _FINISH))
            stack.append((node.body, _VISIT))
        else:
            self.bind_call_site(node)  # type: ignore[arg-type]
            stack.append((node, _FINISH))
            stack.append((node.op, _VISIT))  # type: ignore[attr-defined]

    def bind_let(self, let: Let) -> None:
        vt = self.done[id(let.value)]
        ann = let.var.type_annotation
        if ann is not None and ann != vt:
            raise self.fail(let, f"let %{let.var.name_hint} is annotated {ann} but bound to {vt}")
        self.var_env[let.var] = vt
        self.finish(let.var, vt)

    def bind_call_site(self, call: Call) -> None:
        fn: Function = call.op  # type: ignore[assignment]
        if len(fn.params) != len(call.args):
            raise self.fail(
                call,
                f"function of {len(fn.params)} parameters called with {len(call.args)} arguments",
            )
        for p, a in zip(fn.params, call.args, strict=False):
            if p.type_annotation is None:
                prev = self.var_env.get(p)
                at = self.done[id(a)]
                if prev is not None and prev != at:
                    raise self.fail(
                        call, f"parameter %{p.name_hint} is used at types {prev} and {at}"
                    )
                self.var_env[p] = at

    @staticmethod
    def children(node: Expr) -> tuple[Expr, ...]:
        """The sub-expressions whose types ``node``'s type depends on."""
        if type(node) is Call and type(node.op) is Op:
            return node.args
        return children(node)

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

    # -- the rules -------------------------------------------------------------
    def compute(self, node: Any) -> Type:
        """The type of ``node`` from the types of its children."""
        t = type(node)
        if t is Call:
            return self.call_type(node)
        if t is Tuple:
            done = self.done
            return TupleType([done[id(f)] for f in node.fields])
        if t is TupleGetItem:
            return self.projection_type(node)
        if t is Function:
            return self.function_type(node)
        if t is Let:
            return self.done[id(node.body)]
        if t is If:
            return self.if_type(node)
        raise self.fail(node, f"cannot type a {t.__name__} node")

    def projection_type(self, node: TupleGetItem) -> Type:
        tt = self.done[id(node.tuple_value)]
        if not isinstance(tt, TupleType):
            raise self.fail(node, f"projection .{node.index} of a non-tuple of type {tt}")
        if not 0 <= node.index < len(tt.fields):
            raise self.fail(
                node, f"tuple index {node.index} out of range for {len(tt.fields)} fields ({tt})"
            )
        return tt.fields[node.index]

    def function_type(self, node: Function) -> Type:
        done = self.done
        body_t = done[id(node.body)]
        if node.ret_type is not None and node.ret_type != body_t:
            raise self.fail(
                node,
                f"function is annotated to return {node.ret_type} but its body has type {body_t}",
            )
        return FuncType([done[id(p)] for p in node.params], body_t)

    def if_type(self, node: If) -> Type:
        done = self.done
        ct = done[id(node.cond)]
        if ct != _BOOL:
            raise self.fail(node, f"if condition must be a scalar bool, got {ct}")
        tt, ft = done[id(node.true_branch)], done[id(node.false_branch)]
        if tt != ft:
            raise self.fail(node, f"if branches have different types: {tt} vs {ft}")
        return tt

    def call_type(self, call: Call) -> Type:
        done = self.done
        arg_types = [done[id(a)] for a in call.args]
        op = call.op
        if type(op) is Op:
            return self.op_call_type(call, op, arg_types)
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

    def op_rule(self, op: Op) -> tuple[Any, int | None]:
        """The type relation and arity of ``op``, looked up once per run."""
        rule = self.rules.get(op)
        if rule is None:
            rule = self.rules[op] = (op.get_attr("FTypeRelation"), op.num_inputs)
        return rule

    def op_call_type(self, call: Call, op: Op, arg_types: list[Type]) -> Type:
        rel, arity = self.op_rule(op)
        if rel is None:
            raise self.fail(call, f"operator {op.name} has no type relation")
        if arity is not None and arity >= 0 and arity != len(arg_types):
            raise self.fail(call, f"operator {op.name} takes {arity} inputs, got {len(arg_types)}")
        try:
            out = rel(arg_types, call.attrs)
        except RelayTypeError as err:
            args = ", ".join(str(a) for a in arg_types)
            raise self.fail(call, f"type error in {op.name}({args}): {err}") from None
        except RelayKitError:
            raise
        except _RELATION_CRASHES as err:
            # The relation could not use the attribute values (a string where it wants
            # numbers, an int where it wants a list...): the call is at fault, not the op.
            args = ", ".join(str(a) for a in arg_types)
            attrs = ", ".join(f"{k}={v!r}" for k, v in (call.attrs or {}).items()) or "none"
            raise self.fail(
                call,
                f"type error in {op.name}({args}): its attributes ({attrs}) are not of the "
                f"kinds {op.name} takes ({type(err).__name__}: {err}); check their values",
            ) from None
        if not isinstance(out, Type):
            raise self.fail(call, f"type relation of {op.name} returned {out!r}, not a Type")
        return out


def _calls_untyped_literal(call: Call) -> bool:
    op = call.op
    return type(op) is Function and any(p.type_annotation is None for p in op.params)


def function_signature(fn: Function) -> FuncType | None:
    """The declared type of a function, if all of it is annotated (else ``None``)."""
    if fn.ret_type is None or any(p.type_annotation is None for p in fn.params):
        return None
    return FuncType([p.type_annotation for p in fn.params], fn.ret_type)  # type: ignore[misc]


def global_types(mod: IRModule | None) -> dict[str, FuncType]:
    """The types of ``mod``'s globals that are known without checking them: checked
    ones, and fully annotated ones."""
    out: dict[str, FuncType] = {}
    if mod is None:
        return out
    for gv, fn in mod.items():
        t = fn._checked_type if fn._checked_type is not None else function_signature(fn)
        if isinstance(t, FuncType):
            out[gv.name_hint] = t
    return out


def infer_type(expr: Expr, mod: IRModule | None = None) -> Type:
    """Infer and fill the types of every node of ``expr`` (globals resolved in ``mod``,
    which is checked first); return the type of ``expr``."""
    gtypes: dict[str, FuncType] = {}
    if mod is not None:
        infer_module(mod)
        gtypes = {gv.name_hint: fn.checked_type for gv, fn in mod.items()}  # type: ignore[misc]
    return TypeChecker(expr, gtypes).run()


def infer_type_local(expr: Expr, mod: IRModule | None = None) -> Type:
    """Type the nodes of ``expr`` that have no type yet, re-using the types already on
    its sub-expressions (TVM's ``InferTypeLocal``); return the type of ``expr``.

    For passes and frontends that build new nodes over typed ones: only the new
    nodes are visited, so typing each new node costs what its type relation costs.
    """
    ty = expr._checked_type
    if ty is not None and type(expr) is not Op:
        return ty
    return TypeChecker(expr, global_types(mod), trust_existing=True).run()


def _annotated(node: Expr) -> bool:
    """False for a function without a return type or a variable without a type annotation."""
    kind = type(node)
    if kind is Function:
        return node.ret_type is not None  # type: ignore[attr-defined]
    return kind is not Var or node.type_annotation is not None  # type: ignore[attr-defined]


def _fill_ret_types(fn: Function) -> Function:
    """``fn`` with every function's missing return type and every variable's missing
    type annotation filled in from inference (as TVM's type inference does), sharing
    all unchanged nodes."""
    if all(_annotated(n) for n in post_order(fn)):
        return fn

    def post(new: Expr, old: Expr) -> Expr | None:
        if new is not old:
            new._set_checked_type(old._checked_type)
        if type(new) is Function and new.ret_type is None:
            ft = old._checked_type
            if not isinstance(ft, FuncType):  # pragma: no cover - the checker typed it
                raise RelayTypeError(f"function was not typed as a function: {ft}")
            filled = new.with_fields(ret_type=ft.ret_type)
            filled._set_checked_type(ft)
            return filled
        if type(new) is Var and new.type_annotation is None and old._checked_type is not None:
            var = Var(new.name_hint, old._checked_type, new.span)
            var._set_checked_type(old._checked_type)
            return var
        return None

    return rewrite_post_order(fn, post)  # type: ignore[return-value]


def infer_function(fn: Function, mod: IRModule | None = None) -> Function:
    """Type-check one function against the signatures of ``mod``'s globals; return it
    with return types filled in."""
    TypeChecker(fn, global_types(mod)).run()
    return _fill_ret_types(fn)


def infer_module(mod: IRModule) -> IRModule:
    """Check every global function of ``mod`` in place (callees before callers)."""
    names = [gv.name_hint for gv in mod.get_global_vars()]
    gtypes: dict[str, FuncType] = {}
    for name in names:
        sig = function_signature(mod[name])
        if sig is not None:
            gtypes[name] = sig
    state: dict[str, int] = {}  # 1 = in progress, 2 = done
    for start in names:
        if not state.get(start):
            _check_from(mod, start, gtypes, state)
    return mod


def _check_from(
    mod: IRModule, start: str, gtypes: dict[str, FuncType], state: dict[str, int]
) -> None:
    """Check ``start`` and every global it reaches, callees first."""
    stack: list[tuple[str, bool]] = [(start, False)]
    while stack:
        name, ready = stack.pop()
        if ready:
            fn = mod[name]
            ft = TypeChecker(fn, gtypes).run()
            if not isinstance(ft, FuncType):  # pragma: no cover - a Function types as one
                raise RelayTypeError(f"@{name} did not type as a function")
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
