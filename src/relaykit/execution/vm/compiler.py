"""The VM compiler: Relay functions to register-machine bytecode.

Each global function becomes a :class:`~relaykit.runtime.vm.VMFunction`; each
function literal is lambda-lifted into one more (its free variables become
leading parameters, captured by ``AllocClosure``). The compiler walks
expressions with an explicit work stack of nodes and continuations, so neither
deep graphs nor long ``let`` chains touch Python's recursion limit.

- operator calls become ``InvokePacked`` of an ``"op"`` primitive (a tuple
  literal argument is passed field by field), calls of backend functions
  (``Compiler=`` attribute) an ``"extern"`` primitive of the library the
  backends' codegens built;
- calls of globals ``InvokeFunc``, of other values ``InvokeClosure``;
- ``If`` is ``If``/``Goto`` with both branches moving into one result register;
  ``Match`` tests tags with ``GetTag``/``If`` and binds fields with ``GetField``;
- tuples and constructor applications are ``AllocADT``, constants ``LoadConst``.

After a function is emitted, its storage is planned: the output of an
operator call of static shape whose value is only ever read by other operator
calls of the same function gets a fixed buffer, allocated by the function's
prologue (``AllocStorage``/``AllocTensor``), and the call becomes
destination-passing (``planned``; when its inputs are constants and other
planned buffers, its kernel is bound once per frame). Such an output of dynamic shape, when the
operator has a data-independent shape function and a host kernel, is
``planned dynamic``: the frame keeps its array, sized by the shape function at
run time and reused while the shape stays the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.backends.host.kernels import host_kernel_names
from relaykit.errors import BuildError
from relaykit.execution.graph_plan import attrs_to_json
from relaykit.execution.vm.primitives import VIEW_OPS
from relaykit.ir.adt import (
    Clause,
    Constructor,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
)
from relaykit.ir.analysis import free_vars
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
    checked_type_or_none,
)
from relaykit.ir.functor import children, post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op, default_registry
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.runtime.vm import (
    ALLOC_ADT,
    ALLOC_CLOSURE,
    ALLOC_STORAGE,
    ALLOC_TENSOR,
    FATAL,
    GET_FIELD,
    GET_TAG,
    GOTO,
    IF,
    INVOKE_CLOSURE,
    INVOKE_FUNC,
    INVOKE_PACKED,
    LOAD_CONST,
    LOAD_CONSTI,
    MOVE,
    RESHAPE_TENSOR,
    RET,
    PrimitiveRecord,
    VMFunction,
)

__all__ = ["ProgramCompiler", "type_spec"]

_ALIGN = 64
#: Operators whose result is their input viewed with another (static) shape.
RESHAPE_OPS = VIEW_OPS


def type_spec(ty: Type | None) -> Any:
    """A checked type as the JSON type spec the machine checks values against
    (dimensions that are not integers are dynamic: ``None``)."""
    if isinstance(ty, TensorType):
        return {
            "t": "tensor",
            "shape": [d if isinstance(d, int) else None for d in ty.shape],
            "dtype": ty.dtype,
        }
    if isinstance(ty, TupleType):
        return {"t": "tuple", "fields": [type_spec(f) for f in ty.fields]}
    return {"t": "any"}


def _static(spec: Any) -> bool:
    return (
        isinstance(spec, dict)
        and spec.get("t") == "tensor"
        and all(isinstance(d, int) for d in spec["shape"])
    )


def _viewable(spec: Any) -> bool:
    """A result type a reshape view can have: a tensor with at most one dynamic
    dimension (the size of the input decides it)."""
    return (
        isinstance(spec, dict)
        and spec.get("t") == "tensor"
        and sum(d is None for d in spec["shape"]) <= 1
    )


def is_extern(fn: Function) -> bool:
    return bool(fn.attrs and fn.attrs.get("Compiler"))


class ProgramCompiler:
    """Compiles the functions of a typed module into VM functions and primitives."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.functions: list[VMFunction | None] = []
        self.func_index: dict[str, int] = {}
        self.primitives: list[PrimitiveRecord] = []
        self.prim_index: dict[Any, int] = {}
        self.constants: list[Any] = []
        self.const_index: dict[int, int] = {}
        self.pending: list[tuple[int, Function, list[Var], str]] = []
        self.constructor_wrappers: dict[int, int] = {}
        #: operators with a dedicated host kernel
        self.host_ops = frozenset(host_kernel_names())

    def compile(self) -> None:
        for gv, fn in self.mod.items():
            if is_extern(fn) or (fn.attrs and fn.attrs.get("Primitive")):
                continue
            self.func_index[gv.name_hint] = self.reserve()
        for gv, fn in self.mod.items():
            index = self.func_index.get(gv.name_hint)
            if index is not None:
                self.pending.append((index, fn, [], gv.name_hint))
        while self.pending:
            index, fn, captured, name = self.pending.pop()
            self.functions[index] = FunctionCompiler(self, fn, captured, name).run()

    def reserve(self) -> int:
        self.functions.append(None)
        return len(self.functions) - 1

    def lift(self, fn: Function, captured: list[Var], name: str) -> int:
        index = self.reserve()
        self.pending.append((index, fn, captured, name))
        return index

    def constant(self, node: Constant) -> int:
        key = id(node)
        i = self.const_index.get(key)
        if i is None:
            i = self.const_index[key] = len(self.constants)
            self.constants.append(node.data.numpy())
        return i

    def primitive(
        self, kind: str, name: str, attrs: Any, groups: list[int], out: Any, ins: list[Any]
    ) -> int:
        try:
            attrs_json = attrs_to_json(attrs) if attrs is not None else {}
        except Exception:  # stored only when the executable is saved
            attrs_json = None
        attrs_key = repr(attrs_json) if attrs_json is not None else id(attrs)
        key = (kind, name, attrs_key, tuple(groups), repr(out), repr(ins))
        i = self.prim_index.get(key)
        if i is None:
            i = self.prim_index[key] = len(self.primitives)
            record = PrimitiveRecord(kind, name, attrs_json, groups, out, ins, attrs)  # type: ignore[arg-type]
            self.primitives.append(record)
        return i

    def constructor_function(self, con: Constructor) -> int:
        """A VM function building ``con``'s value, for a constructor used as a value."""
        i = self.constructor_wrappers.get(id(con))
        if i is None:
            n = len(con.inputs)
            code = [(ALLOC_ADT, con.tag, list(range(n)), n), (RET, n)]
            params = [f"field{k}" for k in range(n)]
            self.functions.append(VMFunction(f"{con.name_hint}_ctor", params, n + 1, [], code))
            i = self.constructor_wrappers[id(con)] = len(self.functions) - 1
        return i


Task = Any


class FunctionCompiler:
    """Emits the bytecode of one function."""

    def __init__(self, prog: ProgramCompiler, fn: Function, captured: list[Var], name: str):
        self.prog = prog
        self.fn = fn
        self.name = name
        self.code: list[list[Any]] = []
        self.num_regs = 0
        self.env: dict[Var, int] = {}
        self.scopes: list[dict[int, int]] = [{}]
        self.captured = captured
        #: register -> static output spec (None: dynamic shape), for operator calls that
        #: may be planned
        self.plannable: dict[int, Any] = {}
        self.uses: dict[int, int] | None = None
        #: registers of operator calls of static shape that have a host kernel
        self.host_static: set[int] = set()
        self.consts: list[tuple[Any, ...]] = []

    # -- registers and scopes ---------------------------------------------------------------
    def new_reg(self) -> int:
        self.num_regs += 1
        return self.num_regs - 1

    def emit(self, *ins: Any) -> int:
        self.code.append(list(ins))
        return len(self.code) - 1

    def lookup(self, node: Expr) -> int | None:
        key = id(node)
        for scope in reversed(self.scopes):
            r = scope.get(key)
            if r is not None:
                return r
        return None

    def done(self, node: Expr, reg: int) -> None:
        self.scopes[-1][id(node)] = reg

    # -- the walk --------------------------------------------------------------------------------
    def run(self) -> VMFunction:
        fn = self.fn
        params = [*self.captured, *fn.params]
        for p in params:
            self.env[p] = self.new_reg()
        stack: list[Task] = [self.finish_function, fn.body]
        while stack:
            task = stack.pop()
            if isinstance(task, Expr):
                if self.lookup(task) is None:
                    self.visit(task, stack)
            else:
                task(stack)
        names = [p.name_hint for p in params]
        param_types = [type_spec(checked_type_or_none(p) or p.type_annotation) for p in params]
        prologue = self.consts + self.plan_storage()
        return VMFunction(
            self.name,
            names,
            self.num_regs,
            prologue,
            [tuple(i) for i in self.code],
            param_types,
        )

    def finish_function(self, stack: list[Task]) -> None:
        self.emit(RET, self.reg(self.fn.body))

    def reg(self, node: Expr) -> int:
        r = self.lookup(node)
        if r is None:  # pragma: no cover - the walk compiles children first
            raise BuildError(f"VM compiler: a {type(node).__name__} was not compiled")
        return r

    def visit(self, node: Expr, stack: list[Task]) -> None:
        t = type(node)
        if t is Var:
            r = self.env.get(node)  # type: ignore[call-overload]
            if r is None:
                raise BuildError(
                    f"VM compiler: variable %{node.name_hint} is not bound in @{self.name}"  # type: ignore[attr-defined]
                )
            self.done(node, r)
        elif t is Constant:
            r = self.new_reg()
            # Constants are immutable: loaded once per frame, by the prologue.
            self.consts.append((LOAD_CONST, self.prog.constant(node), r))  # type: ignore[arg-type]
            self.done(node, r)
        elif t is GlobalVar:
            self.global_value(node)  # type: ignore[arg-type]
        elif t is Constructor:
            r = self.new_reg()
            self.emit(ALLOC_CLOSURE, self.prog.constructor_function(node), [], r, -1)  # type: ignore[arg-type]
            self.done(node, r)
        elif t is Function:
            self.closure(node, None)  # type: ignore[arg-type]
        elif t is Tuple:
            stack.append(lambda s, n=node: self.finish_tuple(n))
            stack.extend(reversed(node.fields))  # type: ignore[attr-defined]
        elif t is TupleGetItem:
            stack.append(lambda s, n=node: self.finish_get_item(n))
            stack.append(node.tuple_value)  # type: ignore[attr-defined]
        elif t is Let:
            stack.append(lambda s, n=node: self.bind_let(n, s))
            if type(node.value) is Function:  # type: ignore[attr-defined]
                return  # bound by bind_let (it may refer to itself)
            stack.append(node.value)  # type: ignore[attr-defined]
        elif t is If:
            stack.append(lambda s, n=node: self.start_if(n, s))
            stack.append(node.cond)  # type: ignore[attr-defined]
        elif t is Call:
            self.visit_call(node, stack)  # type: ignore[arg-type]
        elif t is Match:
            stack.append(lambda s, n=node: self.start_match(n, s))
            stack.append(node.data)  # type: ignore[attr-defined]
        else:
            raise BuildError(f"the VM cannot compile a {t.__name__} node")

    # -- values ------------------------------------------------------------------------------------
    def global_value(self, gv: GlobalVar) -> None:
        index = self.prog.func_index.get(gv.name_hint)
        if index is None:
            raise BuildError(
                f"@{gv.name_hint} is used as a value in @{self.name}, but it is not a function "
                "the VM compiles (a backend function can only be called)"
            )
        r = self.new_reg()
        self.emit(ALLOC_CLOSURE, index, [], r, -1)
        self.done(gv, r)

    def closure(self, fn: Function, self_var: Var | None) -> int:
        fvs = free_vars(fn)
        captured_regs = []
        self_slot = -1
        for i, v in enumerate(fvs):
            if v is self_var:
                self_slot = i
                captured_regs.append(0)  # replaced by the closure itself
                continue
            r = self.env.get(v)
            if r is None:
                raise BuildError(
                    f"VM compiler: variable %{v.name_hint} captured by a closure in @{self.name} "
                    "is not bound"
                )
            captured_regs.append(r)
        index = self.prog.lift(fn, fvs, f"{self.name}_lifted{len(self.prog.functions)}")
        r = self.new_reg()
        self.emit(ALLOC_CLOSURE, index, captured_regs, r, self_slot)
        self.done(fn, r)
        return r

    def finish_tuple(self, node: Tuple) -> None:
        r = self.new_reg()
        self.emit(ALLOC_ADT, 0, [self.reg(f) for f in node.fields], r)
        self.done(node, r)

    def finish_get_item(self, node: TupleGetItem) -> None:
        r = self.new_reg()
        self.emit(GET_FIELD, self.reg(node.tuple_value), node.index, r)
        self.done(node, r)

    def bind_let(self, node: Let, stack: list[Task]) -> None:
        value = node.value
        if type(value) is Function:
            r = self.lookup(value)
            if r is None:
                r = self.closure(value, node.var)
        else:
            r = self.reg(value)
        self.env[node.var] = r
        self.done(node.var, r)
        stack.append(lambda s, n=node: self.done(n, self.reg(n.body)))
        stack.append(node.body)

    # -- control flow ----------------------------------------------------------------------------
    def start_if(self, node: If, stack: list[Task]) -> None:
        one = self.new_reg()
        self.emit(LOAD_CONSTI, 1, one)
        branch = self.emit(IF, self.reg(node.cond), one, -1)
        result = self.new_reg()
        self.scopes.append({})

        def true_done(s: list[Task]) -> None:
            self.emit(MOVE, self.reg(node.true_branch), result)
            goto = self.emit(GOTO, -1)
            self.scopes.pop()
            self.code[branch][3] = len(self.code)
            self.scopes.append({})

            def false_done(s2: list[Task]) -> None:
                self.emit(MOVE, self.reg(node.false_branch), result)
                self.scopes.pop()
                self.code[goto][1] = len(self.code)
                self.done(node, result)

            s.append(false_done)
            s.append(node.false_branch)

        stack.append(true_done)
        stack.append(node.true_branch)

    def start_match(self, node: Match, stack: list[Task]) -> None:
        data = self.reg(node.data)
        result = self.new_reg()
        exits: list[int] = []
        clauses = list(node.clauses)

        def clause_at(i: int, s: list[Task]) -> None:
            if i == len(clauses):
                self.emit(FATAL, f"match in @{self.name} failed: no clause matches the value")
                for g in exits:
                    self.code[g][1] = len(self.code)
                self.done(node, result)
                return
            clause: Clause = clauses[i]
            self.scopes.append({})
            fails = self.test_pattern(clause.lhs, data)

            def clause_done(s2: list[Task]) -> None:
                self.emit(MOVE, self.reg(clause.rhs), result)
                exits.append(self.emit(GOTO, -1))
                self.scopes.pop()
                for f in fails:
                    self.code[f][3] = len(self.code)
                clause_at(i + 1, s2)

            s.append(clause_done)
            s.append(clause.rhs)

        clause_at(0, stack)

    def test_pattern(self, pattern: Pattern, reg: int) -> list[int]:
        """Emit the tests of ``pattern`` on the value in ``reg``, binding its variables;
        the ``If`` instructions to patch with the next clause's address."""
        fails: list[int] = []
        work = [(pattern, reg)]
        while work:
            pat, r = work.pop()
            if isinstance(pat, PatternVar):
                self.env[pat.var] = r
            elif isinstance(pat, PatternConstructor):
                tag = self.new_reg()
                want = self.new_reg()
                self.emit(GET_TAG, r, tag)
                self.emit(LOAD_CONSTI, pat.constructor.tag, want)
                fails.append(self.emit(IF, tag, want, -1))
                work.extend(self.fields(pat.patterns, r))
            elif isinstance(pat, PatternTuple):
                work.extend(self.fields(pat.patterns, r))
        return fails

    def fields(self, patterns: tuple[Pattern, ...], r: int) -> list[tuple[Pattern, int]]:
        out = []
        for i, sub in enumerate(patterns):
            if isinstance(sub, (PatternVar, PatternConstructor, PatternTuple)):
                f = self.new_reg()
                self.emit(GET_FIELD, r, i, f)
                out.append((sub, f))
        return list(reversed(out))

    # -- calls -------------------------------------------------------------------------------------
    def use_counts(self) -> dict[int, int]:
        """How many parents each node of the function body has."""
        if self.uses is None:
            uses: dict[int, int] = {}
            for n in post_order(self.fn.body):
                for c in children(n):
                    uses[id(c)] = uses.get(id(c), 0) + 1
            self.uses = uses
        return self.uses

    def reshape_source(self, node: Call) -> Expr | None:
        """For a reshape whose result has at most one dynamic dimension: the tensor a
        chain of single-use reshapes ending in ``node`` starts from (one
        ``reshape_tensor`` does them all)."""
        if type(node.op) is not Op or node.op.name not in RESHAPE_OPS:
            return None
        if not _viewable(type_spec(checked_type_or_none(node))) or len(node.args) != 1:
            return None
        src = node.args[0]
        uses = self.use_counts()
        while (
            type(src) is Call
            and type(src.op) is Op
            and src.op.name in RESHAPE_OPS
            and len(src.args) == 1
            and uses.get(id(src), 0) == 1
            and self.lookup(src) is None
        ):
            src = src.args[0]
        return src if isinstance(checked_type_or_none(src), TensorType) else None

    def visit_call(self, node: Call, stack: list[Task]) -> None:
        op = node.op
        src = self.reshape_source(node)
        if src is not None:
            stack.append(lambda s, n=node, a=src: self.finish_reshape(n, a))
            stack.append(src)
            return
        if type(op) is Op and op.name == "dyn.reshape" and len(node.args) == 2:
            stack.append(lambda s, n=node: self.finish_dyn_reshape(n))
            stack.extend(reversed(node.args))
            return
        stack.append(lambda s, n=node: self.finish_call(n))
        stack.extend(reversed(node.args))
        if type(op) not in (Op, GlobalVar, Constructor):
            stack.append(op)

    def finish_reshape(self, node: Call, src: Expr) -> None:
        r = self.new_reg()
        shape = type_spec(checked_type_or_none(node))["shape"]
        # One dynamic dimension: NumPy infers it from the size (-1).
        self.emit(RESHAPE_TENSOR, self.reg(src), [-1 if d is None else d for d in shape], r)
        self.done(node, r)

    def finish_dyn_reshape(self, node: Call) -> None:
        """``dyn.reshape(data, newshape)``: its shape function computes the shape into a
        register, then ``reshape_tensor`` views ``data`` with it (as TVM's VM does)."""
        data, newshape = (self.reg(a) for a in node.args)
        out = type_spec(checked_type_or_none(node))
        rank = len(out["shape"]) if out.get("t") == "tensor" else 0
        specs = [type_spec(checked_type_or_none(a)) for a in node.args]
        shape_spec = {"t": "tensor", "shape": [rank], "dtype": "int64"}
        p = self.prog.primitive("shape_func", "dyn.reshape", node.attrs, [], shape_spec, specs)
        shape = self.new_reg()
        self.emit(INVOKE_PACKED, p, [data, newshape], shape, 0)
        r = self.new_reg()
        self.emit(RESHAPE_TENSOR, data, shape, r)
        self.done(node, r)

    def finish_call(self, node: Call) -> None:
        op = node.op
        t = type(op)
        r = self.new_reg()
        if t is Op:
            self.emit_op_call(node, op, r)  # type: ignore[arg-type]
        elif t is Constructor:
            self.emit(ALLOC_ADT, op.tag, [self.reg(a) for a in node.args], r)  # type: ignore[attr-defined]
        elif t is GlobalVar:
            fn = self.prog.mod[op.name_hint]  # type: ignore[attr-defined]
            if is_extern(fn):
                self.emit_extern_call(node, op, fn, r)  # type: ignore[arg-type]
            else:
                index = self.prog.func_index.get(op.name_hint)  # type: ignore[attr-defined]
                if index is None:
                    raise BuildError(f"@{op.name_hint} cannot be called by the VM")  # type: ignore[attr-defined]
                self.emit(INVOKE_FUNC, index, [self.reg(a) for a in node.args], r)
        else:
            self.emit(INVOKE_CLOSURE, self.reg(op), [self.reg(a) for a in node.args], r)
        self.done(node, r)

    def flat_args(self, node: Call) -> tuple[list[int], list[int], list[Any]]:
        regs: list[int] = []
        groups: list[int] = []
        specs: list[Any] = []
        for a in node.args:
            if type(a) is Tuple:
                regs.extend(self.reg(f) for f in a.fields)
                groups.append(len(a.fields))
                specs.extend(type_spec(checked_type_or_none(f)) for f in a.fields)
            elif isinstance(checked_type_or_none(a), TupleType):
                regs.append(self.reg(a))
                groups.append(-2)
                specs.append(type_spec(checked_type_or_none(a)))
            else:
                regs.append(self.reg(a))
                groups.append(-1)
                specs.append(type_spec(checked_type_or_none(a)))
        return regs, groups, specs

    def emit_op_call(self, node: Call, op: Op, r: int) -> None:
        regs, groups, specs = self.flat_args(node)
        out = type_spec(checked_type_or_none(node))
        if all(g == -1 for g in groups):
            groups = []
        p = self.prog.primitive("op", op.name, node.attrs, groups, out, specs)
        self.emit(INVOKE_PACKED, p, regs, r, 0)
        if _static(out):
            self.plannable[r] = out
            if op.name in self.prog.host_ops:
                self.host_static.add(r)
        elif _dynamic_plannable(op, out, self.prog.host_ops):
            self.plannable[r] = None

    def emit_extern_call(self, node: Call, gv: GlobalVar, fn: Function, r: int) -> None:
        regs, groups, specs = self.flat_args(node)
        symbol = str(fn.attrs.get("global_symbol") or gv.name_hint)
        out = type_spec(checked_type_or_none(node) or _ret_type(fn))
        if all(g == -1 for g in groups):
            groups = []
        p = self.prog.primitive("extern", symbol, None, groups, out, specs)
        self.emit(INVOKE_PACKED, p, regs, r, 0)
        if _static(out):
            self.plannable[r] = out

    # -- storage planning --------------------------------------------------------------------------
    def escapes_and_defs(self) -> tuple[set[int], dict[int, int]]:
        """Registers whose value leaves operator calls (moved, returned, stored, passed to
        a function, or viewed by one that does), and how often an ``InvokePacked``
        writes each register."""
        escapes: set[int] = set()
        defs: dict[int, int] = {}
        views: list[tuple[int, int]] = []
        for ins in self.code:
            op = ins[0]
            if op == RESHAPE_TENSOR:
                views.append((ins[1], ins[3]))
            elif op == INVOKE_PACKED:
                defs[ins[3]] = defs.get(ins[3], 0) + 1
            elif op in (MOVE, RET, GET_TAG, GET_FIELD):
                escapes.add(ins[1])
            elif op in (INVOKE_FUNC, ALLOC_ADT, ALLOC_CLOSURE):
                escapes.update(ins[2])
            elif op == INVOKE_CLOSURE:
                escapes.add(ins[1])
                escapes.update(ins[2])
        for src, dst in reversed(views):  # a view of a buffer escapes with the buffer
            if dst in escapes:
                escapes.add(src)
        return escapes, defs

    def mark_dynamic(self, dynamic: set[int], planned: set[int]) -> None:
        """Mark the calls of frame-owned outputs of dynamic shape: mode 4 when every
        input is a constant, a planned buffer, such an output or a view of one (the
        frame notices when one of those becomes another array), else mode 2 (the
        inputs' identity is checked on every run). Such calls whose output leaves the
        function are mode 6: a new array each run, the host kernel bound to it."""
        owned = planned | {c[2] for c in self.consts}
        prims = self.prog.primitives
        for ins in self.code:
            if ins[0] == RESHAPE_TENSOR and ins[1] in owned and type(ins[2]) is list:
                owned.add(ins[3])
            elif ins[0] == INVOKE_PACKED and ins[3] in dynamic:
                ins[4] = 4 if all(r in owned for r in ins[2]) else 2
                owned.add(ins[3])
            elif (
                ins[0] == INVOKE_PACKED
                and self.plannable.get(ins[3], 0) is None
                and prims[ins[1]].name not in VIEW_OPS
            ):
                # Leaves the function: a new array each run, sized by the shape function.
                ins[4] = 6

    def allocate_fresh(self, planned: set[int]) -> None:
        """Operator calls of static shape with a host kernel whose output is not planned
        (it leaves the function) allocate it in the body (``alloc_storage`` and
        ``alloc_tensor`` before the call, as TVM's VM does) and run the host kernel
        into it (``planned`` mode 5: bound on each run)."""
        fresh = self.host_static - planned
        if not fresh:
            return
        code: list[list[Any]] = []
        where: list[int] = []  # old pc -> new pc
        for ins in self.code:
            where.append(len(code))
            if ins[0] == INVOKE_PACKED and ins[3] in fresh and ins[4] == 0:
                spec = self.plannable[ins[3]]
                storage = self.new_reg()
                code.append([ALLOC_STORAGE, max(_nbytes(spec), 1), _ALIGN, "uint8", storage])
                code.append([ALLOC_TENSOR, storage, 0, list(spec["shape"]), spec["dtype"], ins[3]])
                ins[4] = 5
            code.append(ins)
        where.append(len(code))
        for ins in code:
            if ins[0] == IF:
                ins[3] = where[ins[3]]
            elif ins[0] == GOTO:
                ins[1] = where[ins[1]]
        self.code = code

    def plan_storage(self) -> list[tuple[Any, ...]]:
        """Give fixed buffers to operator outputs read only by operator calls here."""
        if not self.plannable:
            return []
        escapes, defs = self.escapes_and_defs()
        kept = [r for r in self.plannable if r not in escapes and defs.get(r) == 1]
        # Dynamic shapes: the frame keeps the output array, sized by the shape function
        # at run time and reused while the shape stays the same.
        dynamic = {r for r in kept if self.plannable[r] is None}
        planned = [r for r in kept if r not in dynamic]
        self.mark_dynamic(dynamic, set(planned))
        self.allocate_fresh(set(planned))
        if not planned:
            return []
        offsets: dict[int, int] = {}
        total = 0
        for r in planned:
            spec = self.plannable[r]
            n = _nbytes(spec)
            offsets[r] = total
            total += -(-max(n, 1) // _ALIGN) * _ALIGN
        storage = self.new_reg()
        prologue: list[tuple[Any, ...]] = [(ALLOC_STORAGE, total, _ALIGN, "uint8", storage)]
        for r in planned:
            spec = self.plannable[r]
            prologue.append(
                (ALLOC_TENSOR, storage, offsets[r], list(spec["shape"]), spec["dtype"], r)
            )
        chosen = set(planned)
        # Registers that hold the same array for the life of a frame: constants, planned
        # buffers and views of them. A planned call reading only those binds its kernel
        # once per frame (``planned`` mode 3: no check of its inputs' identity).
        fixed = chosen | {c[2] for c in self.consts}
        for ins in self.code:
            if ins[0] == RESHAPE_TENSOR and ins[1] in fixed and type(ins[2]) is list:
                fixed.add(ins[3])
        for ins in self.code:
            if ins[0] == INVOKE_PACKED and ins[3] in chosen:
                ins[4] = 3 if all(r in fixed for r in ins[2]) else 1
        return prologue


def _dynamic_plannable(op: Op, out: Any, host_ops: frozenset[str]) -> bool:
    """Whether an operator call of dynamic output type ``out`` can run into an array the
    frame keeps: one tensor, a data-independent shape function, a host kernel (or a
    reshape: a view of its input)."""
    return (
        isinstance(out, dict)
        and out.get("t") == "tensor"
        and default_registry.get_attr(op.name, "FShapeFunc") is not None
        and not default_registry.get_attr(op.name, "TShapeDataDependent")
        and (op.name in host_ops or op.name in VIEW_OPS)
    )


def _nbytes(spec: Any) -> int:
    n = 1
    for d in spec["shape"]:
        n *= d
    return n * np.dtype(spec["dtype"]).itemsize


def _ret_type(fn: Function) -> Type | None:
    t = checked_type_or_none(fn)
    return getattr(t, "ret_type", None) or fn.ret_type
