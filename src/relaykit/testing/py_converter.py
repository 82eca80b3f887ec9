"""Relay programs as Python source (TVM's ``relay.testing.py_converter``).

:func:`to_python` turns an expression (with the globals of its module) into a
Python program: each global function becomes a ``def``, each Relay function a
nested ``def`` (a closure), ``let`` an assignment, ``if`` and ``match`` Python
``if`` chains, references :class:`RefValue` cells, constructor values
:class:`ConstructorValue`, tuples :class:`ADT`, and operator calls go to the
operators' reference kernels through ``_op``. The program leaves the value of the
expression in ``OUTPUT_VAR_NAME``; :func:`run_as_python` runs it and returns that
value (tensors as NDArrays, closures as Python functions).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> f = relay.Function([x], relay.add(x, relay.const(1.0)))
>>> out = run_as_python(f(relay.const([1.0, 2.0])))
>>> out.numpy().tolist()
[2.0, 3.0]
"""

from __future__ import annotations

import keyword
import re
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError, ExecutionError
from relaykit.ir.adt import (
    Clause,
    Constructor,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
)
from relaykit.ir.attrs import Attrs
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
    TupleWrapper,
    Var,
)
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op, get_op
from relaykit.ir.ref import RefCreate, RefRead, RefWrite
from relaykit.runtime.container import ADT, ConstructorValue
from relaykit.runtime.ndarray import NDArray

__all__ = ["OUTPUT_VAR_NAME", "PROLOGUE", "PythonConverter", "to_python", "run_as_python"]

OUTPUT_VAR_NAME = "_py_out"

#: the names every converted program uses (the namespace :func:`run_as_python` gives it)
PROLOGUE = [
    "import numpy",
    "from relaykit.ir.attrs import Attrs",
    "from relaykit.runtime.container import ADT, ConstructorValue, RefValue",
    "from relaykit.runtime.ndarray import NDArray",
    "from relaykit.testing.py_converter import _op, _truth, _match",
]


def _op(name: str, args: list[Any], attrs: Attrs) -> Any:
    """Run operator ``name``'s reference kernel on runtime values."""
    kernel = get_op(name).get_attr("FCompute")
    if kernel is None:
        raise ExecutionError(f"operator {name} has no reference kernel")
    return _to_runtime(kernel([_to_numpy(a) for a in args], attrs))


def _to_numpy(value: Any) -> Any:
    if isinstance(value, NDArray):
        return value.numpy()
    if isinstance(value, ADT) and not isinstance(value, ConstructorValue):
        return tuple(_to_numpy(v) for v in value.fields)
    return value


def _to_runtime(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):
        return NDArray(np.asarray(value))
    if isinstance(value, ADT):
        return type(value)(value.tag, [_to_runtime(v) for v in value])  # keeps a constructor's tag
    if isinstance(value, (tuple, list)):
        return ADT(0, [_to_runtime(v) for v in value])
    return value


def _truth(value: Any) -> bool:
    return bool(_to_numpy(value))


def _match(pattern: Any, value: Any, bound: dict[str, Any]) -> bool:
    """Whether ``value`` matches ``pattern`` (``("_",)``, ``("var", name)``, ``("con", tag,
    subs)`` or ``("tuple", subs)``); the variables it binds go to ``bound``."""
    work = [(pattern, value)]
    while work:
        pat, v = work.pop()
        kind = pat[0]
        if kind == "var":
            bound[pat[1]] = v
        elif kind == "con":
            if not isinstance(v, ConstructorValue) or v.tag != pat[1]:
                return False
            work.extend(zip(pat[2], v.fields, strict=True))
        elif kind == "tuple":
            work.extend(zip(pat[1], v.fields, strict=True))
    return True


class PythonConverter:
    """Generates the Python program of one expression and the globals it uses."""

    def __init__(self, mod: IRModule | None = None) -> None:
        self.mod = mod if mod is not None else IRModule()
        self.names: dict[Any, str] = {}
        self.used: set[str] = set()
        self.counter = 0

    # -- names -------------------------------------------------------------------------
    def fresh(self, hint: str = "t") -> str:
        base = re.sub(r"\W", "_", hint) or "t"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "_" + base
        while True:
            self.counter += 1
            name = f"{base}_{self.counter}"
            if name not in self.used:
                self.used.add(name)
                return name

    def var_name(self, var: Var) -> str:
        name = self.names.get(var)
        if name is None:
            name = self.names[var] = self.fresh("v_" + var.name_hint)
        return name

    def global_name(self, name: str) -> str:
        return "g_" + re.sub(r"\W", "_", name)

    # -- the program -------------------------------------------------------------------
    def convert(self, expr: Expr) -> str:
        lines = list(PROLOGUE)
        for gv, fn in sorted(self.mod.items(), key=lambda kv: kv[0].name_hint):
            lines.extend(self.function_def(self.global_name(gv.name_hint), fn, {}))
        body: list[str] = []
        result = self.expr(expr, body, {})
        lines.extend(body)
        lines.append(f"{OUTPUT_VAR_NAME} = {result}")
        return "\n".join(lines) + "\n"

    def function_def(self, name: str, fn: Function, memo: dict[Expr, str]) -> list[str]:
        params = [self.var_name(p) for p in fn.params]
        body: list[str] = []
        result = self.expr(fn.body, body, dict(memo))
        out = [f"def {name}({', '.join(params)}):"]
        out.extend("    " + line for line in body)
        out.append(f"    return {result}")
        return out

    def expr(self, node: Expr, out: list[str], memo: dict[Expr, str]) -> str:
        """Statements computing ``node`` appended to ``out``; the Python expression (a
        name or a literal) of its value."""
        if node in memo:
            return memo[node]
        text = self.compute(node, out, memo)
        if not isinstance(node, (Var, GlobalVar)):
            memo[node] = text
        return text

    def bind(self, value: str, out: list[str], hint: str = "t") -> str:
        name = self.fresh(hint)
        out.append(f"{name} = {value}")
        return name

    def compute(self, node: Expr, out: list[str], memo: dict[Expr, str]) -> str:
        t = type(node)
        if t is Var:
            return self.var_name(node)  # type: ignore[arg-type]
        if t is GlobalVar:
            return self.global_name(node.name_hint)  # type: ignore[attr-defined]
        rule = _RULES.get(t)
        if rule is None:
            raise ArgumentError(f"to_python cannot convert a {t.__name__}")
        return rule(self, node, out, memo)

    def constant(self, node: Constant, out: list[str], memo: dict[Expr, str]) -> str:
        arr = node.data.numpy()
        literal = f"numpy.array({arr.tolist()!r}, dtype={str(arr.dtype)!r})"
        return self.bind(f"NDArray({literal})", out)

    def tuple(self, node: Tuple, out: list[str], memo: dict[Expr, str]) -> str:
        fields = [self.expr(f, out, memo) for f in node.fields]
        return self.bind(f"ADT(0, [{', '.join(fields)}])", out)

    def projection(self, node: TupleGetItem, out: list[str], memo: dict[Expr, str]) -> str:
        return self.bind(f"{self.expr(node.tuple_value, out, memo)}[{node.index}]", out)

    def let(self, node: Let, out: list[str], memo: dict[Expr, str]) -> str:
        out.append(f"{self.var_name(node.var)} = {self.expr(node.value, out, memo)}")
        return self.expr(node.body, out, memo)

    def function(self, node: Function, out: list[str], memo: dict[Expr, str]) -> str:
        name = self.fresh("fn")
        out.extend(self.function_def(name, node, memo))
        return name

    def ref(self, node: Any, out: list[str], memo: dict[Expr, str]) -> str:
        if type(node) is RefCreate:
            return self.bind(f"RefValue({self.expr(node.value, out, memo)})", out)
        ref = self.expr(node.ref, out, memo)
        if type(node) is RefRead:
            return self.bind(f"{ref}.value", out)
        out.append(f"{ref}.value = {self.expr(node.value, out, memo)}")
        return self.bind("ADT(0, [])", out)

    def op_value(self, node: Op, out: list[str], memo: dict[Expr, str]) -> str:
        raise ArgumentError(f"operator {node.name} used as a value; call it")

    def constructor_fn(self, con: Constructor, out: list[str], memo: Any = None) -> str:
        """A constructor used as a value: the function building its values."""
        name = self.fresh("con_" + con.name_hint)
        params = [f"a{i}" for i in range(len(con.inputs))]
        out.append(f"def {name}({', '.join(params)}):")
        out.append(f"    return ConstructorValue({con.tag}, [{', '.join(params)}], None)")
        return name

    def call(self, node: Call, out: list[str], memo: dict[Expr, str]) -> str:
        op = node.op
        if isinstance(op, Op):
            args = [self.expr(a, out, memo) for a in node.args]
            attrs = dict(node.attrs)
            type_key = getattr(node.attrs, "type_key", "DictAttrs")
            call = f"_op({op.name!r}, [{', '.join(args)}], Attrs({attrs!r}, {type_key!r}))"
            return self.bind(call, out)
        if isinstance(op, Constructor):
            args = [self.expr(a, out, memo) for a in node.args]
            return self.bind(f"ConstructorValue({op.tag}, [{', '.join(args)}], None)", out)
        callee = self.expr(op, out, memo)
        args = [self.expr(a, out, memo) for a in node.args]
        return self.bind(f"{callee}({', '.join(args)})", out)

    def if_expr(self, node: If, out: list[str], memo: dict[Expr, str]) -> str:
        cond = self.expr(node.cond, out, memo)
        result = self.fresh("if")
        out.append(f"if _truth({cond}):")
        out.extend(self.branch(node.true_branch, result, memo))
        out.append("else:")
        out.extend(self.branch(node.false_branch, result, memo))
        return result

    def branch(self, expr: Expr, result: str, memo: dict[Expr, str]) -> list[str]:
        body: list[str] = []
        value = self.expr(expr, body, dict(memo))
        body.append(f"{result} = {value}")
        return ["    " + line for line in body]

    def match(self, node: Match, out: list[str], memo: dict[Expr, str]) -> str:
        data = self.expr(node.data, out, memo)
        result = self.fresh("match")
        indent = ""
        for clause in node.clauses:
            bound = self.fresh("bound")
            out.append(f"{indent}{bound} = {{}}")
            out.append(f"{indent}if _match({self.pattern(clause.lhs)!r}, {data}, {bound}):")
            inner = indent + "    "
            for var in _pattern_vars(clause):
                name = self.var_name(var)
                out.append(f"{inner}{name} = {bound}[{name!r}]")
            out.extend(inner + line[4:] for line in self.branch(clause.rhs, result, memo))
            out.append(f"{indent}else:")
            indent = inner
        out.append(f"{indent}raise RuntimeError('match failed: no clause matches the value')")
        return result

    def pattern(self, pat: Pattern) -> Any:
        if isinstance(pat, PatternVar):
            return ("var", self.var_name(pat.var))
        if isinstance(pat, PatternConstructor):
            return ("con", pat.constructor.tag, tuple(self.pattern(p) for p in pat.patterns))
        if isinstance(pat, PatternTuple):
            return ("tuple", tuple(self.pattern(p) for p in pat.patterns))
        return ("_",)


_RULES: dict[type, Any] = {
    Constant: PythonConverter.constant,
    Tuple: PythonConverter.tuple,
    TupleGetItem: PythonConverter.projection,
    Let: PythonConverter.let,
    Function: PythonConverter.function,
    If: PythonConverter.if_expr,
    Call: PythonConverter.call,
    Constructor: PythonConverter.constructor_fn,
    Match: PythonConverter.match,
    RefCreate: PythonConverter.ref,
    RefRead: PythonConverter.ref,
    RefWrite: PythonConverter.ref,
    Op: PythonConverter.op_value,
}


def _pattern_vars(clause: Clause) -> list[Var]:
    out: list[Var] = []
    stack: list[Pattern] = [clause.lhs]
    while stack:
        p = stack.pop()
        if isinstance(p, PatternVar):
            out.append(p.var)
        stack.extend(reversed(getattr(p, "patterns", ())))
    return out


def to_python(expr: Expr, mod: IRModule | None = None, target: Any = None) -> str:
    """The Python program computing ``expr`` (with ``mod``'s globals)."""
    if isinstance(expr, TupleWrapper):  # a multi-output operator's call
        expr = expr.astuple()
    if not isinstance(expr, Expr):
        raise ArgumentError(f"to_python converts relay expressions, not {type(expr).__name__}")
    return PythonConverter(mod).convert(expr)


def run_as_python(expr: Expr, mod: IRModule | None = None, target: Any = None) -> Any:
    """The value of ``expr`` computed by its Python program (see :func:`to_python`)."""
    source = to_python(expr, mod, target)
    namespace: dict[str, Any] = {}
    exec(compile(source, "<relay program>", "exec"), namespace)
    return namespace[OUTPUT_VAR_NAME]
