"""The one evaluation machine of relaykit, with hooks for what a value is.

:class:`Evaluator` walks an expression with an explicit work stack, so
neither deep graphs nor deep recursion in the program touch Python's
recursion limit. It owns everything that does not depend on what a value
*is*: variable lookup in lexical :class:`Environment` chains, ``Let``,
tuples and projections, function literals as :class:`Closure` values, calls
of globals and closures (each evaluation of a function body is one
:class:`Activation`, with its own memo table, so a shared sub-expression is
evaluated once per activation).

A subclass says what values are by overriding the hooks, as torch.fx's
``Transformer`` subclasses its ``Interpreter``:

- :meth:`~Evaluator.eval_constant`, :meth:`~Evaluator.eval_global`,
  :meth:`~Evaluator.eval_function`: the value of a leaf;
- :meth:`~Evaluator.apply_op`: an operator call;
- :meth:`~Evaluator.is_extern` / :meth:`~Evaluator.apply_extern`: a call of
  a global function that is not entered (a function for an external compiler);
- :meth:`~Evaluator.call_global` / :meth:`~Evaluator.call_closure`: the
  activation of a function that is entered;
- :meth:`~Evaluator.enter_if` / :meth:`~Evaluator.choose_branch`: control flow.

The reference interpreter (:class:`relaykit.execution.interpreter.Interpreter`)
computes NumPy arrays; the graph lowering
(:class:`relaykit.execution.lower.PlanLowering`) computes plan entries.

>>> import numpy as np
>>> from relaykit.ir import Var, Function, IRModule, TensorType, const
>>> from relaykit.op import add
>>> class CountOps(Evaluator):
...     '''Evaluates to the number of operator calls a value took.'''
...     def eval_constant(self, node):
...         return 0
...     def apply_op(self, call, op, args):
...         return 1 + sum(args)
>>> x = Var("x", TensorType((2,)))
>>> y = add(x, const(1.0))
>>> CountOps(IRModule()).run(add(y, y), Activation(Environment({x: 0})))
3
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from relaykit.errors import ExecutionError, RelayKitError
from relaykit.ir.adt import (
    Constructor,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
)
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
from relaykit.ir.fields import CHILDREN_OF as children_of
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.ref import RefCreate, RefRead, RefWrite
from relaykit.runtime.container import ConstructorValue, RefValue
from relaykit.runtime.vm import ADT

__all__ = ["Activation", "Closure", "Environment", "Evaluator", "Task", "describe_call"]

#: A unit of work: ``(node, activation, step, *extra)``. ``step`` None means "evaluate
#: ``node``"; otherwise ``step(task, stack)`` continues the evaluation of ``node``.
Task = tuple[Any, ...]

_UNBOUND = object()


class Environment:
    """A lexical environment: this scope's bindings and the enclosing one."""

    __slots__ = ("parent", "vars")

    def __init__(self, bindings: dict[Var, Any] | None = None, parent: Environment | None = None):
        self.vars: dict[Var, Any] = bindings if bindings is not None else {}
        self.parent = parent

    def find(self, var: Var, default: Any = None) -> Any:
        """The value bound to ``var`` here or in an enclosing scope, else ``default``."""
        env: Environment | None = self
        while env is not None:
            v = env.vars.get(var, _UNBOUND)
            if v is not _UNBOUND:
                return v
            env = env.parent
        return default


class Closure:
    """A function value: a ``Function`` and the environment it was created in."""

    __slots__ = ("env", "func", "name")

    def __init__(self, func: Function, env: Environment | None, name: str = "") -> None:
        self.func = func
        self.env = env
        self.name = name

    def __repr__(self) -> str:
        return f"<closure {self.name or 'fn'} of {len(self.func.params)} params>"


class Activation:
    """One evaluation of a function body: its environment, its memo table (values by
    node id), the activation that called it and, for a global function, its name."""

    __slots__ = ("caller", "env", "memo", "name")

    def __init__(self, env: Environment, caller: Activation | None = None, name: str = "") -> None:
        self.env = env
        self.memo: dict[int, Any] = {}
        self.caller = caller
        self.name = name

    def is_evaluating(self, name: str) -> bool:
        """Whether the global function ``name`` is this activation or one of its callers."""
        act: Activation | None = self
        while act is not None:
            if act.name == name:
                return True
            act = act.caller
        return False


def match_pattern(pattern: Pattern, value: Any, bindings: dict[Var, Any]) -> bool:
    """Whether ``value`` matches ``pattern``; the variables it binds go to ``bindings``."""
    work = [(pattern, value)]
    while work:
        pat, v = work.pop()
        if isinstance(pat, PatternVar):
            bindings[pat.var] = v
        elif isinstance(pat, PatternConstructor):
            if not isinstance(v, ADT) or v.tag != pat.constructor.tag:
                return False
            work.extend(zip(pat.patterns, v.fields, strict=False))
        elif isinstance(pat, PatternTuple):
            fields = v.fields if isinstance(v, ADT) else v
            work.extend(zip(pat.patterns, fields, strict=False))
    return True


def describe_call(node: Expr) -> str:
    """``callee(argument types, attrs) at span``, for error messages."""
    if not isinstance(node, Call):
        return type(node).__name__
    if isinstance(node.op, Op):
        callee = node.op.name
    elif isinstance(node.op, GlobalVar):
        callee = "@" + node.op.name_hint
    else:
        callee = "a closure"
    shapes = []
    for a in node.args:
        t = checked_type_or_none(a)
        shapes.append(str(t) if t is not None else type(a).__name__)
    attrs = ", ".join(f"{k}={v!r}" for k, v in node.attrs.items())
    where = f" at {node.span}" if node.span is not None else ""
    return f"{callee}({', '.join(shapes)}{', ' + attrs if attrs else ''}){where}"


Handler = Callable[[Any, Activation, list[Task]], None]


class Evaluator:
    """An explicit-stack evaluator of Relay expressions over the functions of ``mod``.

    Subclasses define :meth:`eval_constant` and :meth:`apply_op` (and
    :meth:`apply_extern` when :meth:`is_extern` can be true); the other hooks
    have the reference semantics. Errors are of the class ``error``.
    """

    #: The class of the errors the machine raises (unbound variables, bad calls...).
    error: ClassVar[type[RelayKitError]] = ExecutionError

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.globals: dict[str, Closure] = {}
        # Dispatch by node type: how evaluating a node of each type starts.
        self.enter_table: dict[type, Handler] = {
            Var: self.enter_var,
            Constant: self.enter_constant,
            GlobalVar: self.enter_global,
            Op: self.enter_op,
            Function: self.enter_function,
            Call: self.enter_call,
            Tuple: self.enter_tuple,
            TupleGetItem: self.enter_tuple_get_item,
            Let: self.enter_let,
            If: self.enter_if,
            Constructor: self.enter_constructor,
            Match: self.enter_match,
            RefCreate: self.enter_ref,
            RefRead: self.enter_ref,
            RefWrite: self.enter_ref,
        }

    # -- the machine -------------------------------------------------------------

    def run(self, root: Expr, act: Activation) -> Any:
        """The value of ``root`` evaluated in ``act``."""
        stack: list[Task] = [(root, act, None)]
        pop = stack.pop
        enter = self.enter_table
        while stack:
            task = pop()
            step = task[2]
            if step is not None:
                step(task, stack)
                continue
            node = task[0]
            if id(node) in task[1].memo:
                continue
            handler = enter.get(type(node))
            if handler is None:
                raise self.unsupported(node)
            handler(node, task[1], stack)
        return act.memo[id(root)]

    # -- leaves --------------------------------------------------------------------

    def enter_var(self, node: Var, act: Activation, stack: list[Task]) -> None:
        value = act.env.find(node, _UNBOUND)
        if value is _UNBOUND:
            raise self.error(f"variable %{node.name_hint} is not bound (ill-formed program)")
        act.memo[id(node)] = value

    def enter_constant(self, node: Constant, act: Activation, stack: list[Task]) -> None:
        act.memo[id(node)] = self.eval_constant(node)

    def enter_global(self, node: GlobalVar, act: Activation, stack: list[Task]) -> None:
        act.memo[id(node)] = self.eval_global(node)

    def enter_op(self, node: Op, act: Activation, stack: list[Task]) -> None:
        act.memo[id(node)] = node

    def enter_function(self, node: Function, act: Activation, stack: list[Task]) -> None:
        act.memo[id(node)] = self.eval_function(node, act.env)

    # -- compound nodes: push the step that finishes them, then their operands ----

    def enter_call(self, node: Call, act: Activation, stack: list[Task]) -> None:
        memo = act.memo
        stack.append((node, act, self.apply_call))
        for k in reversed(node.args):
            if id(k) not in memo:
                stack.append((k, act, None))
        op = node.op
        if type(op) is not Op and type(op) is not GlobalVar and id(op) not in memo:
            stack.append((op, act, None))

    def enter_tuple(self, node: Tuple, act: Activation, stack: list[Task]) -> None:
        memo = act.memo
        stack.append((node, act, self.apply_tuple))
        for k in reversed(node.fields):
            if id(k) not in memo:
                stack.append((k, act, None))

    def enter_tuple_get_item(self, node: TupleGetItem, act: Activation, stack: list[Task]) -> None:
        stack.append((node, act, self.apply_tuple_get_item))
        stack.append((node.tuple_value, act, None))

    def enter_let(self, node: Let, act: Activation, stack: list[Task]) -> None:
        stack.append((node, act, self.bind_let))
        stack.append((node.value, act, None))

    def enter_if(self, node: If, act: Activation, stack: list[Task]) -> None:
        """Evaluate the condition, then the branch :meth:`choose_branch` picks."""
        stack.append((node, act, self.take_branch))
        stack.append((node.cond, act, None))

    def enter_constructor(self, node: Constructor, act: Activation, stack: list[Task]) -> None:
        act.memo[id(node)] = node  # applied by apply_call

    def enter_match(self, node: Match, act: Activation, stack: list[Task]) -> None:
        """Evaluate the matched value, then the first clause whose pattern matches."""
        stack.append((node, act, self.take_clause))
        stack.append((node.data, act, None))

    def enter_ref(self, node: Any, act: Activation, stack: list[Task]) -> None:
        """Evaluate a reference node's operands (left to right), then apply it."""
        memo = act.memo
        stack.append((node, act, self.apply_ref))
        for k in reversed(children_of[type(node)](node)):
            if id(k) not in memo:
                stack.append((k, act, None))

    def apply_ref(self, task: Task, stack: list[Task]) -> None:
        node, memo = task[0], task[1].memo
        t = type(node)
        if t is RefCreate:
            memo[id(node)] = RefValue(memo[id(node.value)])
            return
        cell = memo[id(node.ref)]
        if not isinstance(cell, RefValue):
            raise self.error(f"{t.__name__} of a {type(cell).__name__} value, not a reference")
        if t is RefRead:
            memo[id(node)] = cell.value
        else:
            cell.value = memo[id(node.value)]
            memo[id(node)] = ()

    def take_clause(self, task: Task, stack: list[Task]) -> None:
        node, act = task[0], task[1]
        value = act.memo[id(node.data)]
        for clause in node.clauses:
            bindings: dict[Var, Any] = {}
            if match_pattern(clause.lhs, value, bindings):
                act.env.vars.update(bindings)
                stack.append((node, act, self.copy_value, clause.rhs))
                stack.append((clause.rhs, act, None))
                return
        raise self.error("match failed: no clause matches the value (an incomplete match)")

    # -- steps ---------------------------------------------------------------------

    def apply_tuple(self, task: Task, stack: list[Task]) -> None:
        node, memo = task[0], task[1].memo
        memo[id(node)] = tuple([memo[id(f)] for f in node.fields])

    def apply_tuple_get_item(self, task: Task, stack: list[Task]) -> None:
        node, memo = task[0], task[1].memo
        value = memo[id(node.tuple_value)]
        if not isinstance(value, tuple):
            raise self.error(f"projection .{node.index} of a non-tuple value")
        memo[id(node)] = value[node.index]

    def bind_let(self, task: Task, stack: list[Task]) -> None:
        node, act = task[0], task[1]
        act.env.vars[node.var] = act.memo[id(node.value)]
        stack.append((node, act, self.copy_value, node.body))
        stack.append((node.body, act, None))

    def take_branch(self, task: Task, stack: list[Task]) -> None:
        node, act = task[0], task[1]
        cond = act.memo[id(node.cond)]
        branch = node.true_branch if self.choose_branch(node, cond) else node.false_branch
        stack.append((node, act, self.copy_value, branch))
        stack.append((branch, act, None))

    def copy_value(self, task: Task, stack: list[Task]) -> None:
        """A ``Let`` or ``If`` takes the value of its body or branch (``task[3]``)."""
        memo = task[1].memo
        memo[id(task[0])] = memo[id(task[3])]

    def return_value(self, task: Task, stack: list[Task]) -> None:
        """A call takes the value of the body (``task[4]``) of its activation (``task[3]``)."""
        task[1].memo[id(task[0])] = task[3].memo[id(task[4])]

    def apply_call(self, task: Task, stack: list[Task]) -> None:
        """Apply an operator, a backend function, a global or a closure."""
        node, act = task[0], task[1]
        memo = act.memo
        args = [memo[id(a)] for a in node.args]
        op = node.op
        if type(op) is Op:
            memo[id(node)] = self.apply_op(node, op, args)
            return
        if type(op) is GlobalVar:
            fn = self.mod[op.name_hint]
            if self.is_extern(op, fn):
                memo[id(node)] = self.apply_extern(node, op, fn, args)
                return
            callee = self.call_global(node, op, fn, args, act)
        else:
            value = memo[id(op)]
            if type(value) is Op:
                memo[id(node)] = self.apply_op(node, value, args)
                return
            if type(value) is Constructor:
                memo[id(node)] = ConstructorValue(value.tag, args, value)
                return
            if type(value) is not Closure:
                raise self.not_callable(node, value)
            fn = value.func
            callee = self.call_closure(node, value, args, act)
        stack.append((node, act, self.return_value, callee, fn.body))
        stack.append((fn.body, callee, None))

    # -- hooks -----------------------------------------------------------------------

    def eval_constant(self, node: Constant) -> Any:
        """The value of a constant."""
        raise NotImplementedError(f"{type(self).__name__} does not evaluate constants")

    def eval_global(self, gv: GlobalVar) -> Any:
        """The value of a global function used as a value: a closure, one per name."""
        c = self.globals.get(gv.name_hint)
        if c is None:
            c = Closure(self.mod[gv.name_hint], None, gv.name_hint)
            self.globals[gv.name_hint] = c
        return c

    def eval_function(self, func: Function, env: Environment) -> Any:
        """The value of a function literal: a closure over ``env``."""
        return Closure(func, env)

    def apply_op(self, call: Call, op: Op, args: list[Any]) -> Any:
        """The value of a call of the operator ``op`` on ``args``."""
        raise NotImplementedError(f"{type(self).__name__} does not apply operators")

    def is_extern(self, gv: GlobalVar, fn: Function) -> bool:
        """Whether calls of ``gv`` go to :meth:`apply_extern` instead of entering ``fn``.
        By default no function is external: the meaning of a backend function is its
        body."""
        return False

    def apply_extern(self, call: Call, gv: GlobalVar, fn: Function, args: list[Any]) -> Any:
        """The value of a call of an external function (see :meth:`is_extern`)."""
        raise NotImplementedError(f"{type(self).__name__} does not apply external functions")

    def call_global(
        self, call: Call, gv: GlobalVar, fn: Function, args: list[Any], act: Activation
    ) -> Activation:
        """The activation in which a call of the global ``gv`` evaluates ``fn``'s body."""
        return self.activate(call, fn, None, args, act, gv.name_hint)

    def call_closure(
        self, call: Call, closure: Closure, args: list[Any], act: Activation
    ) -> Activation:
        """The activation in which a call of ``closure`` evaluates its body."""
        params = closure.func.params
        if len(params) != len(args):
            raise self.arity_error(call, closure.func, args)
        return Activation(
            Environment(dict(zip(params, args, strict=False)), closure.env), act, closure.name
        )

    def activate(
        self,
        call: Call,
        fn: Function,
        env: Environment | None,
        args: list[Any],
        caller: Activation,
        name: str = "",
    ) -> Activation:
        """A new activation of ``fn`` with its parameters bound to ``args``."""
        params = fn.params
        if len(params) != len(args):
            raise self.arity_error(call, fn, args)
        return Activation(Environment(dict(zip(params, args, strict=False)), env), caller, name)

    def choose_branch(self, node: If, cond: Any) -> bool:
        """Whether the value ``cond`` selects the true branch."""
        return bool(cond)

    # -- error messages ----------------------------------------------------------------

    def unsupported(self, node: Any) -> RelayKitError:
        return self.error(f"cannot evaluate a {type(node).__name__} node")

    def not_callable(self, call: Call, value: Any) -> RelayKitError:
        return self.error(
            f"while evaluating {describe_call(call)}: cannot call a {type(value).__name__} value"
        )

    def arity_error(self, call: Call, fn: Function, args: list[Any]) -> RelayKitError:
        return self.error(
            f"while evaluating {describe_call(call)}: function takes "
            f"{len(fn.params)} arguments, got {len(args)}"
        )
