"""The type checker: the IR checks itself (as xDSL's ``verify`` does).

Types flow bottom-up: variables take their annotation (or, for the parameters
of a function literal that is called directly, the argument types), operator
calls take what the operator's ``"FTypeRelation"`` attribute returns,
functions take ``fn (params) -> body``. Global functions are checked callees
first; a global that calls itself may leave its return type out, mutually
recursive ones need theirs annotated. The walk is iterative, so the depth of a
graph does not matter.

Unknown types are solved by unification, as Relay's type solver does: a
variable without annotation gets a fresh unknown, fixed by its uses -- an
operator's ``"FTypeSolveInputs"`` deduces the types of inputs it can (the weight
of ``nn.conv2d`` from the data, ``channels`` and ``kernel_size``, TVM's
weight-shape deduction), a called variable becomes ``fn (args) -> ?``, return
annotations and ``if`` branches unify, polymorphic functions are instantiated at
each use. An operator call whose inputs are still unknown waits and is retried
until nothing changes; an unknown nothing determines is an error at the node that
needed it. A fully annotated program never touches this machinery.

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

import typing
from collections.abc import Mapping
from typing import Any, Protocol

from relaykit.errors import RelayKitError, RelayTypeError

from .adt import (
    Clause,
    Constructor,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    TypeCall,
    constructor_type,
)
from .expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from .functor import children, post_order, rewrite_post_order
from .hooks import has_printer, printer_hook
from .op import Op
from .ref import RefCreate, RefRead, RefWrite
from .types import (
    AnyDim,
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
)
from .unknowns import Unknown, has_unknown, incomplete_unknowns, substitute, unknowns

__all__ = [
    "GlobalScope",
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


class GlobalScope(Protocol):
    """What the checker reads and writes of a module's global functions
    (:class:`~relaykit.ir.module.IRModule` has it; a module checks each function added to
    it, so it is built on the checker, not below it)."""

    def __contains__(self, key: Any) -> bool: ...

    def __getitem__(self, key: Any) -> Function: ...

    def items(self) -> list[tuple[GlobalVar, Function]]: ...

    def get_global_vars(self) -> list[GlobalVar]: ...

    def global_refs(self, name: str) -> list[GlobalVar]: ...

    def _set_checked(self, name: str, fn: Function) -> None: ...


ScopeT = typing.TypeVar("ScopeT", bound=GlobalScope)


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
        self_name: str | None = None,
    ) -> None:
        self.root = root
        # The global ``root`` is bound to, when it may call itself without annotations.
        self.self_name = self_name
        self.self_type: FuncType | None = None
        # The module ``root`` is being added to: names the global when it calls itself.
        self.module: GlobalScope | None = None
        self.global_types = dict(global_types or {})
        self.trust_existing = trust_existing
        # Types of unannotated variables bound in this run (let vars, call-site hints).
        self.var_env: dict[Var, Type] = {}
        self.done: dict[int, Type] = {}
        self.rules: dict[Op, tuple[Any, int | None]] = {}
        # Unification state, used only once some type is unknown (an unannotated
        # parameter, a called variable): the fully annotated walk never touches it.
        self.holes = False
        self.subst: dict[Unknown, Type] = {}
        self.pending: list[Expr] = []  # nodes typed while some of their type was unknown
        self.deferred: list[tuple[Call, Op, Unknown]] = []  # op calls waiting for inputs
        self.solved: set[Var] = set()  # unannotated variables whose type was solved
        self.call_type_args: list[tuple[Call, list[Type]]] = []  # see write_type_args

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
        try:
            self.walk()
            if self.self_type is not None:
                self.unify_self()
            if self.holes:
                self.settle()
            self.write_type_args()
        except RelayTypeError:
            # No node keeps a type with unknowns in it (a later local inference would
            # trust it).
            for node in self.pending:
                if has_unknown(node._checked_type):  # type: ignore[arg-type]
                    node._set_checked_type(None)
            raise
        return self.done[id(self.root)]

    def write_type_args(self) -> None:
        """Set ``type_args`` of the calls typed in this run (TVM's ``Call.type_args``): an
        operator call's input types, a polymorphic callee's type parameters' instances."""
        for call, types in self.call_type_args:
            resolved = [self.resolve(t) for t in types] if self.holes else types
            if not any(map(has_unknown, resolved)):
                call._set_type_args(resolved)

    def unify_self(self) -> None:
        """Unify the type a recursive global was called at with the type of its body."""
        ft = self.done[id(self.root)]
        if self.unify(self.self_type, ft) is None:  # type: ignore[arg-type]
            raise self.fail(
                self.root,
                f"@{self.self_name} calls itself at type {self.resolve(self.self_type)} "  # type: ignore[arg-type]
                f"but has type {self.resolve(ft)}",
            )

    def walk(self) -> None:
        stack: list[tuple[Expr, int]] = [(self.root, _VISIT)]
        while stack:
            node, stage = stack.pop()
            if stage == _VISIT:
                self.visit(node, stack)
            elif stage == _BIND:
                self.bind(node, stack)
            else:
                self.finish(node, self.compute(node))

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
        elif t is Constructor:
            self.finish(node, constructor_type(node))  # type: ignore[arg-type]
        elif t is Match:
            stack.append((node, _BIND))
            stack.append((node.data, _VISIT))  # type: ignore[attr-defined]
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
        elif type(node) is Match:
            self.bind_match(node, stack)
        else:
            self.bind_call_site(node)  # type: ignore[arg-type]
            stack.append((node, _FINISH))
            stack.append((node.op, _VISIT))  # type: ignore[attr-defined]

    def bind_let(self, let: Let) -> None:
        vt = self.done[id(let.value)]
        ann = let.var.type_annotation
        if ann is not None and ann != vt:
            if self.unify(ann, vt) is not None:
                vt = self.resolve(vt)
            else:
                raise self.fail(
                    let, f"let %{let.var.name_hint} is annotated {ann} but bound to {vt}"
                )
        prev = self.var_env.get(let.var)
        if prev is not None and prev is not vt:
            # the value used the variable (a recursive function): the same type
            if self.unify(prev, vt) is None:
                raise self.fail(
                    let, f"let %{let.var.name_hint} is used as {prev} but bound to {vt}"
                )
            vt = self.resolve(vt)
            self.solved.discard(let.var)
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
                if prev is not None and prev != at and self.unify(prev, at) is None:
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
        if self.holes and has_unknown(ty):
            self.pending.append(node)

    def var_type(self, var: Var) -> Type:
        ann = var.type_annotation
        if ann is not None and type(ann) is not IncompleteType:
            return ann
        t = self.var_env.get(var)
        if t is None:
            # Solved later from how the variable is used (TVM's weight-shape deduction).
            t = self.var_env[var] = self.fresh(var)
            self.solved.add(var)
        return t

    def global_type(self, gv: GlobalVar) -> Type:
        t = self.global_types.get(gv.name_hint)
        mod = self.module
        if t is None and mod is not None and gv in mod and mod[gv] is self.root:
            self.self_name = gv.name_hint
        if t is None and gv.name_hint == self.self_name and type(self.root) is Function:
            # A recursive call inside the global being checked: its parameters' types
            # and an unknown result, unified with the function's type at the end.
            params = self.root.params
            ret = self.root.ret_type or self.fresh(gv)
            t = self.self_type = FuncType([self.var_type(p) for p in params], ret)
            self.global_types[gv.name_hint] = t
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
        if t is Clause:
            return self.done[id(node.rhs)]
        if t is Match:
            return self.match_type(node)
        if t is RefCreate or t is RefRead or t is RefWrite:
            return self.ref_rule(node)
        raise self.fail(node, f"cannot type a {t.__name__} node")

    def ref_rule(self, node: Any) -> Type:
        """``ref(v): ref(T)``, ``ref_read(r: ref(T)): T``, ``ref_write(r: ref(T), v: T): ()``."""
        if type(node) is RefCreate:
            return RefType(self.done[id(node.value)])
        held = self.ref_value_type(node, node.ref)
        if type(node) is RefRead:
            return held
        vt = self.done[id(node.value)]
        if held != vt and self.unify(held, vt) is None:
            raise self.fail(node, f"ref_write stores a {vt} in a reference to {self.resolve(held)}")
        return TupleType([])

    def ref_value_type(self, node: Expr, ref: Expr) -> Type:
        """The type of the value the reference ``ref`` holds."""
        rt = self.done[id(ref)]
        if type(rt) is RefType:
            return rt.value
        hole = self.fresh(node)
        if self.unify(rt, RefType(hole)) is None:
            raise self.fail(node, f"{type(node).__name__} needs a reference, got a {rt}")
        return self.resolve(hole)

    def projection_type(self, node: TupleGetItem) -> Type:
        tt = self.done[id(node.tuple_value)]
        if self.holes:
            tt = self.resolve(tt)
            if type(tt) is Unknown:
                raise self.fail(node, self.unsolved(tt, f"projection .{node.index} needs it"))
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
        ret = node.ret_type
        if ret is not None and ret != body_t:
            if self.unify(ret, body_t) is None:
                raise self.fail(
                    node, f"function is annotated to return {ret} but its body has type {body_t}"
                )
            body_t = self.resolve(ret)
        return FuncType([done[id(p)] for p in node.params], body_t, node.type_params)

    def if_type(self, node: If) -> Type:
        done = self.done
        ct = done[id(node.cond)]
        if ct != _BOOL and self.unify(ct, _BOOL) is None:
            raise self.fail(node, f"if condition must be a scalar bool, got {ct}")
        tt, ft = done[id(node.true_branch)], done[id(node.false_branch)]
        if tt != ft:
            both = self.unify(tt, ft)
            if both is None:
                raise self.fail(node, f"if branches have different types: {tt} vs {ft}")
            tt = both
        return tt

    def call_type(self, call: Call) -> Type:
        done = self.done
        arg_types = [done[id(a)] for a in call.args]
        op = call.op
        if type(op) is Op:
            return self.op_call_type(call, op, arg_types)
        ft = done[id(op)]
        if self.holes or (type(ft) is FuncType and ft.type_params):
            return self.unify_call(call, ft, arg_types)
        if not isinstance(ft, FuncType):
            raise self.fail(call, f"calling a value of non-function type {ft}")
        if len(ft.arg_types) != len(arg_types):
            raise self.fail(call, f"function of type {ft} called with {len(arg_types)} arguments")
        for i, (want, got) in enumerate(zip(ft.arg_types, arg_types, strict=False)):
            if want != got and self.unify(want, got) is None:
                raise self.fail(
                    call, f"argument {i} has type {got} but the function expects {want} ({ft})"
                )
        return ft.ret_type

    def unify_call(self, call: Call, ft: Type, arg_types: list[Type]) -> Type:
        """The type of a call of a function value while some types are unknown: the
        callee's type is unified with the argument types (an unknown callee becomes
        ``fn (args) -> ?``)."""
        ft = self.resolve(ft)
        if type(ft) is FuncType and ft.type_params:
            ft = self.instantiate(ft, call)
        if type(ft) is Unknown:
            ret = self.fresh(call)
            self.unify(ft, FuncType(arg_types, ret))
            return ret
        if not isinstance(ft, FuncType):
            raise self.fail(call, f"calling a value of non-function type {ft}")
        if len(ft.arg_types) != len(arg_types):
            raise self.fail(call, f"function of type {ft} called with {len(arg_types)} arguments")
        for i, (want, got) in enumerate(zip(ft.arg_types, arg_types, strict=False)):
            if self.unify(want, got) is None:
                raise self.fail(
                    call,
                    f"argument {i} has type {self.resolve(got)} but the function expects "
                    f"{self.resolve(want)} ({self.resolve(ft)})",
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
        self.call_type_args.append((call, arg_types))
        if self.holes:
            known = self.solve_inputs(call, op, arg_types)
            if known is None and op.get_attr("TTypeIdentity") and len(arg_types) == 1:
                return arg_types[0]  # an identity's type is its input's, known or not yet
            if known is None:
                # Wait until something else determines the unknown inputs.
                out = self.fresh(call)
                self.deferred.append((call, op, out))
                return out
            arg_types = known
        return self.apply_relation(call, op, rel, arg_types)

    def apply_relation(self, call: Call, op: Op, rel: Any, arg_types: list[Type]) -> Any:
        """``rel(arg_types, call.attrs)``, its errors reported at ``call``."""
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
        if rel is self.rules[op][0] and not isinstance(out, Type):
            raise self.fail(call, f"type relation of {op.name} returned {out!r}, not a Type")
        return out

    # -- algebraic data types ---------------------------------------------------
    def bind_match(self, node: Match, stack: list[tuple[Expr, int]]) -> None:
        """Type each clause's pattern against the matched value's type (binding the
        pattern's variables), then schedule the clause bodies."""
        dt = self.done[id(node.data)]
        for clause in node.clauses:
            self.bind_pattern(node, clause.lhs, dt)
        stack.append((node, _FINISH))
        for clause in reversed(node.clauses):
            stack.append((clause, _FINISH))
            stack.append((clause.rhs, _VISIT))

    def bind_pattern(self, node: Match, pattern: Pattern, expected: Type) -> None:
        """Unify ``pattern``'s type with ``expected``; bind its variables."""
        work: list[tuple[Pattern, Type]] = [(pattern, expected)]
        while work:
            pat, ty = work.pop()
            if isinstance(pat, PatternVar):
                var = pat.var
                ann = var.type_annotation
                if ann is not None and type(ann) is not IncompleteType:
                    if self.unify(ann, ty) is None:
                        raise self.fail(
                            node, f"pattern variable %{var.name_hint} is {ann} but matches {ty}"
                        )
                else:
                    self.var_env[var] = ty
            elif isinstance(pat, PatternConstructor):
                con = pat.constructor
                ft = self.instantiate(constructor_type(con))
                if self.unify(ft.ret_type, ty) is None:
                    raise self.fail(
                        node,
                        f"pattern {con.name_hint}(...) builds {self.resolve(ft.ret_type)} but "
                        f"the matched value has type {self.resolve(ty)}",
                    )
                if len(pat.patterns) != len(ft.arg_types):
                    raise self.fail(
                        node,
                        f"constructor {con.name_hint} has {len(ft.arg_types)} fields, the "
                        f"pattern gives {len(pat.patterns)}",
                    )
                work.extend(zip(pat.patterns, ft.arg_types, strict=True))
            elif isinstance(pat, PatternTuple):
                fields: list[Type] = [self.fresh(None) for _ in pat.patterns]
                if self.unify(TupleType(fields), ty) is None:
                    got = self.resolve(ty)
                    raise self.fail(node, f"a tuple pattern of {len(fields)} fields matches {got}")
                work.extend(zip(pat.patterns, fields, strict=True))

    def match_type(self, node: Match) -> Type:
        """All clause bodies have one type, the type of the match."""
        done = self.done
        types = [done[id(c)] for c in node.clauses]
        if not types:
            raise self.fail(node, "a match needs at least one clause")
        out = types[0]
        for t in types[1:]:
            if t != out:
                both = self.unify(out, t)
                if both is None:
                    raise self.fail(
                        node, f"match clauses have different types: {self.resolve(out)} vs {t}"
                    )
                out = both
        return out

    def unify_type_call(self, a: Any, b: Any) -> Type | None:
        """Unify two type calls (``List[a]``) or two reference types, part by part."""
        if type(a) is RefType:
            inner = self.unify(a.value, b.value)
            return None if inner is None else RefType(inner)
        if a.func != b.func or len(a.args) != len(b.args):
            return None
        parts = [self.unify(x, y) for x, y in zip(a.args, b.args, strict=True)]
        return None if None in parts else self.resolve(a)

    # -- unknown types ---------------------------------------------------------
    def instantiate(self, ft: FuncType, call: Call | None = None) -> FuncType:
        """``ft`` with its type parameters replaced by fresh unknowns (``call``'s type args)."""
        if not ft.type_params:
            return ft
        fresh: dict[Type, Type] = {tv: self.fresh(None) for tv in ft.type_params}
        if call is not None:
            self.call_type_args.append((call, list(fresh.values())))
        args = [substitute(a, fresh) for a in ft.arg_types]
        return FuncType(args, substitute(ft.ret_type, fresh))

    def fresh(self, origin: Expr | None) -> Unknown:
        """A new unknown type, standing for the type of ``origin``."""
        self.holes = True
        return Unknown(origin)

    def resolve(self, t: Type) -> Type:
        """``t`` with every solved unknown replaced by its solution."""
        tt = type(t)
        if isinstance(t, Unknown):
            s = self.subst.get(t)
            if s is None:
                return t
            r = self.resolve(s)
            self.subst[t] = r
            return r
        if tt is TupleType:
            fields = [self.resolve(f) for f in t.fields]  # type: ignore[attr-defined]
            same = all(a is b for a, b in zip(fields, t.fields, strict=True))  # type: ignore[attr-defined]
            return t if same else TupleType(fields)
        if tt is FuncType:
            args = [self.resolve(a) for a in t.arg_types]  # type: ignore[attr-defined]
            ret = self.resolve(t.ret_type)  # type: ignore[attr-defined]
            same = ret is t.ret_type and all(  # type: ignore[attr-defined]
                a is b
                for a, b in zip(args, t.arg_types, strict=True)  # type: ignore[attr-defined]
            )
            return t if same else FuncType(args, ret, t.type_params)  # type: ignore[attr-defined]
        if tt is TypeCall:
            targs = [self.resolve(a) for a in t.args]  # type: ignore[attr-defined]
            return TypeCall(t.func, targs)  # type: ignore[attr-defined]
        if tt is RefType:
            inner = self.resolve(t.value)  # type: ignore[attr-defined]
            return t if inner is t.value else RefType(inner)  # type: ignore[attr-defined]
        return t

    def unify(self, a: Type, b: Type) -> Type | None:
        """Make ``a`` and ``b`` the same type by solving unknowns in them; return the
        unified type, or ``None`` if they cannot be the same."""
        a, b = self.resolve(a), self.resolve(b)
        if a is b:
            return a
        if type(a) is Unknown or type(b) is Unknown:
            hole, other = (a, b) if type(a) is Unknown else (b, a)
            if hole in unknowns(other):
                return None  # a type cannot contain itself
            self.subst[hole] = other  # type: ignore[index]
            return other
        if isinstance(a, IncompleteType):  # an annotation that says "any type"
            return b
        if isinstance(b, IncompleteType):
            return a
        return self.unify_parts(a, b)

    def unify_parts(self, a: Type, b: Type) -> Type | None:
        """Unify two types that are not unknowns, part by part; a polymorphic function
        type is instantiated (its type parameters become fresh unknowns)."""
        if a == b:
            return a
        ta = type(a)
        if ta is not type(b):
            return None
        if ta is TupleType:
            if len(a.fields) != len(b.fields):  # type: ignore[attr-defined]
                return None
            fields = [self.unify(x, y) for x, y in zip(a.fields, b.fields, strict=True)]  # type: ignore[attr-defined]
            return None if None in fields else self.resolve(a)
        if ta is FuncType:
            if a.type_params or b.type_params:  # type: ignore[attr-defined]
                return self.unify(self.instantiate(a), self.instantiate(b))  # type: ignore[arg-type]
            if len(a.arg_types) != len(b.arg_types):  # type: ignore[attr-defined]
                return None
            pairs = [*zip(a.arg_types, b.arg_types, strict=True), (a.ret_type, b.ret_type)]  # type: ignore[attr-defined]
            parts = [self.unify(x, y) for x, y in pairs]
            return None if None in parts else self.resolve(a)
        if ta is TensorType:
            return unify_tensor_types(a, b)  # type: ignore[arg-type]
        if ta is TypeCall or ta is RefType:
            return self.unify_type_call(a, b)
        return a if a == b else None

    def solve_inputs(self, call: Call, op: Op, arg_types: list[Type]) -> list[Type] | None:
        """The argument types of an operator call with unknowns solved by the op's
        ``"FTypeSolveInputs"`` (TVM's weight-shape deduction); ``None`` while some
        stay unknown."""
        arg_types = [self.resolve(t) for t in arg_types]
        if not any(unknowns(t) for t in arg_types):
            return arg_types
        solver = op.get_attr("FTypeSolveInputs")
        if solver is None:
            return None
        solved = self.apply_relation(call, op, solver, arg_types)
        for i, (t, s) in enumerate(zip(arg_types, solved, strict=False)):
            if s is not None and self.unify(t, s) is None:
                raise self.fail(
                    call,
                    f"argument {i} of {op.name} has type {self.resolve(t)} but {op.name} "
                    f"needs {s} there",
                )
        arg_types = [self.resolve(t) for t in arg_types]
        return None if any(unknowns(t) for t in arg_types) else arg_types

    def settle(self) -> None:
        """Finish a run that met unknown types: retry the operator calls that waited
        for their inputs until nothing changes, then write the solved types on every
        node; fail at the first type nothing determined."""
        progress = True
        while self.deferred and progress:
            progress = False
            for item in list(self.deferred):
                call, op, out = item
                known = self.solve_inputs(call, op, [self.done[id(a)] for a in call.args])
                if known is None:
                    continue
                self.deferred.remove(item)
                progress = True
                t = self.apply_relation(call, op, self.op_rule(op)[0], known)
                if self.unify(out, t) is None:  # pragma: no cover - out is a fresh unknown
                    raise self.fail(call, f"{op.name} has type {t} but is used as {out}")
        if self.deferred:
            call, op, _ = self.deferred[0]
            args = [self.resolve(self.done[id(a)]) for a in call.args]
            hole = next(u for t in args for u in unknowns(t))
            raise self.fail(call, self.unsolved(hole, f"{op.name} cannot deduce it"))
        done = self.done
        for node in self.pending:
            t = self.resolve(done[id(node)])
            left = unknowns(t)
            if left and all(u.origin is None for u in left):
                # a type parameter of a polymorphic callee nothing constrains (``Nil()``
                # of a list never looked into): it stays incomplete, as TVM leaves it
                t = incomplete_unknowns(t)
            elif left:
                where = next(u for u in left if u.origin is not None).origin or node
                hole = next(u for u in left if u.origin is not None)
                raise self.fail(where, self.unsolved(hole, "nothing determines it"))
            done[id(node)] = t
            node._set_checked_type(t)

    @staticmethod
    def unsolved(hole: Unknown, why: str) -> str:
        origin = hole.origin
        if type(origin) is Var:
            name = origin.name_hint
            return (
                f"cannot infer the type of %{name}: it has no type annotation and {why}; "
                f'give it one, e.g. relay.var({name!r}, shape=(...), dtype="float32")'
            )
        if origin is None:
            return f"cannot infer a type parameter of a polymorphic function: {why}"
        return f"cannot infer the type of this {type(origin).__name__}: {why}"


def unify_dims(a: Any, b: Any) -> Any:
    """The unification of two dimensions: equal ones (by structure) unify to themselves,
    ``?`` (``relay.Any()``) unifies with anything to ``?``, as in TVM's type solver;
    ``None`` when they cannot be the same (e.g. ``3`` and ``4``, or ``n`` and ``3``)."""
    if a == b:
        return a
    if isinstance(a, AnyDim) or isinstance(b, AnyDim):
        return AnyDim()
    return None


def unify_tensor_types(a: TensorType, b: TensorType) -> TensorType | None:
    """Two tensor types of the same dtype and rank whose dimensions unify."""
    if a.dtype != b.dtype or len(a.shape) != len(b.shape):
        return None
    dims = [unify_dims(x, y) for x, y in zip(a.shape, b.shape, strict=True)]
    if any(d is None for d in dims):
        return None
    return TensorType(dims, a.dtype)


def _calls_untyped_literal(call: Call) -> bool:
    op = call.op
    return type(op) is Function and any(p.type_annotation is None for p in op.params)


def function_signature(fn: Function) -> FuncType | None:
    """The declared type of a function, if all of it is annotated (else ``None``)."""
    if fn.ret_type is None or any(p.type_annotation is None for p in fn.params):
        return None
    return FuncType([p.type_annotation for p in fn.params], fn.ret_type, fn.type_params)  # type: ignore[misc]


def global_types(mod: GlobalScope | None) -> dict[str, FuncType]:
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


def infer_type(expr: Expr, mod: GlobalScope | None = None) -> Type:
    """Infer and fill the types of every node of ``expr`` (globals resolved in ``mod``,
    which is checked first); return the type of ``expr``."""
    gtypes: dict[str, FuncType] = {}
    if mod is not None:
        infer_module(mod)
        gtypes = {gv.name_hint: fn.checked_type for gv, fn in mod.items()}  # type: ignore[misc]
    return TypeChecker(expr, gtypes).run()


def infer_type_local(expr: Expr, mod: GlobalScope | None = None) -> Type:
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


def _fill_types(fn: Function, solved: set[Var] | frozenset[Var] = frozenset()) -> Function:
    """``fn`` with every function's missing return type and every variable's missing
    type annotation filled in from inference, and the variables in ``solved`` (whose
    type inference solved by unification) replaced by variables annotated with that
    type, as TVM's ``InferType`` does; all unchanged nodes are shared."""
    if not solved and all(_annotated(n) for n in post_order(fn)):
        return fn
    renamed: dict[Var, Var] = {}  # variables replaced by annotated ones

    def annotate(var: Var) -> Var:
        done = renamed.get(var)
        if done is None:
            ty = var._checked_type
            if ty is None or (var.type_annotation is not None and var not in solved):
                return var
            done = renamed[var] = Var(
                var.name_hint, ty, var.span, virtual_device=var.virtual_device_
            )
            done._set_checked_type(ty)
        return done

    def post(new: Expr, old: Expr) -> Expr | None:
        if new is not old:
            new._set_checked_type(old._checked_type)
        if type(new) is Var and (new in solved or new.type_annotation is None):
            return annotate(new)
        if type(new) is Clause:
            lhs = _rename_pattern(new.lhs, annotate)
            if lhs is not new.lhs:
                clause = Clause(lhs, new.rhs, new.span)
                clause._set_checked_type(old._checked_type)
                return clause
        if type(new) is Function and new.ret_type is None:
            ft = old._checked_type
            if not isinstance(ft, FuncType):  # pragma: no cover - the checker typed it
                raise RelayTypeError(f"function was not typed as a function: {ft}")
            filled = new.with_fields(ret_type=ft.ret_type)
            filled._set_checked_type(ft)
            return filled
        return None

    return rewrite_post_order(fn, post)  # type: ignore[return-value]


def _rename_pattern(pattern: Pattern, rename: Any) -> Pattern:
    """``pattern`` with each variable ``v`` replaced by ``rename(v)`` (itself if unchanged)."""
    if isinstance(pattern, PatternVar):
        var = rename(pattern.var)
        return pattern if var is pattern.var else PatternVar(var)
    if isinstance(pattern, PatternConstructor):
        subs = [_rename_pattern(p, rename) for p in pattern.patterns]
        if all(a is b for a, b in zip(subs, pattern.patterns, strict=True)):
            return pattern
        return PatternConstructor(pattern.constructor, subs)
    if isinstance(pattern, PatternTuple):
        subs = [_rename_pattern(p, rename) for p in pattern.patterns]
        if all(a is b for a, b in zip(subs, pattern.patterns, strict=True)):
            return pattern
        return PatternTuple(subs)
    return pattern


def infer_function(fn: Function, mod: GlobalScope | None = None) -> Function:
    """Type-check one function against the signatures of ``mod``'s globals; return it
    with return types filled in."""
    checker = TypeChecker(fn, global_types(mod))
    checker.module = mod
    checker.run()
    return _fill_types(fn, checker.solved)


def infer_module(mod: ScopeT) -> ScopeT:
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
    mod: GlobalScope, start: str, gtypes: dict[str, FuncType], state: dict[str, int]
) -> None:
    """Check ``start`` and every global it reaches, callees first."""
    stack: list[tuple[str, bool]] = [(start, False)]
    while stack:
        name, ready = stack.pop()
        if ready:
            fn = mod[name]
            checker = TypeChecker(fn, gtypes, self_name=name)
            ft = checker.run()
            if not isinstance(ft, FuncType):  # pragma: no cover - a Function types as one
                raise RelayTypeError(f"@{name} did not type as a function")
            gtypes[name] = ft
            filled = _fill_types(fn, checker.solved)
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
            if state.get(callee) == 1 and callee not in gtypes and callee != name:
                raise RelayTypeError(
                    f"@{callee} is mutually recursive (through @{name}); annotate its "
                    "parameter and return types so its type is known before its body is checked"
                )
            if not state.get(callee):
                stack.append((callee, False))
