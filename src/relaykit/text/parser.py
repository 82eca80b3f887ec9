"""The Relay text parser: modules and expressions back from the text format.

Reads everything :func:`relaykit.text.astext` writes (and TVM 0.8-0.14 prints):
the version header (``#[version = "0.0.5"]`` or the older ``v0.0.4``),
``def @name(...) -> type {...}`` with attributes, ``%n = ...;`` bindings,
``let``, ``if``, ``fn`` closures, tuples, projections, calls with keyword
attributes, types, scalar literals, ``meta[relay.Constant][i]`` with the
``#[metadata]`` section, ``free_var`` and comments. Errors are
:class:`relaykit.errors.ParseError` with ``source:line:col``, the line and a caret.

Hostile text raises relaykit errors only (``benchmarks/fuzz_parser.py`` checks it):
integer literals have at most 100 digits, dimensions fit in int64, types and
attribute values nest at most 100 levels, expressions as deep as Python's stack
allows (a ParseError beyond), metadata shapes are checked before any array is
made; with type inference, attribute values a type relation cannot use are a
:class:`relaykit.errors.RelayTypeError` at the call. Name lookup costs O(1), so a
chain of 100,000 ``let`` bindings parses in linear time.

>>> from relaykit.ir import OpRegistry
>>> from relaykit.op.define import define_op
>>> reg = OpRegistry()
>>> _ = define_op("add", num_inputs=2, type_rel=None, compute=None, registry=reg)
>>> e = parse_expr("free_var %x: Tensor[(2), float32];\\nadd(%x, 1f)", registry=reg)
>>> e.op.name, float(e.args[1].data.numpy())
('add', 1.0)
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from relaykit.errors import IRError, OpNotFoundError, ParseError, RelayKitError
from relaykit.ir.analysis import free_vars
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Span,
    Tuple,
    TupleGetItem,
    Var,
)
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op, OpRegistry, default_registry
from relaykit.ir.ref import RefCreate, RefRead, RefWrite
from relaykit.ir.types import Type
from relaykit.runtime.ndarray import NDArray
from relaykit.target import VirtualDevice
from relaykit.transform.infer_type import infer_module

from .adt_syntax import AdtSyntax
from .reader import describe
from .tokenizer import Source, Token

__all__ = ["parse", "parse_expr", "fromtext"]

_OLD_VERSION = re.compile(r"v[0-9]+\.[0-9]+\.[0-9]+\Z")
_INDEX = re.compile(r"[0-9]+(\.[0-9]+)?")
# Infix operators: the operator each calls and its precedence (higher binds tighter).
_INFIX_OPS = {
    "*": "multiply",
    "/": "divide",
    "+": "add",
    "-": "subtract",
    "<": "less",
    ">": "greater",
    "<=": "less_equal",
    ">=": "greater_equal",
    "==": "equal",
    "!=": "not_equal",
}
_INFIX_PREC = {"*": 4, "/": 4, "+": 3, "-": 3, "<": 2, ">": 2, "<=": 2, ">=": 2, "==": 1, "!=": 1}
_REF_NODES: dict[str, tuple[Any, int]] = {
    "ref": (RefCreate, 1),
    "ref_read": (RefRead, 1),
    "ref_write": (RefWrite, 2),
}
_KEYWORDS = frozenset(
    {"fn", "def", "let", "if", "else", "free_var", "meta", "True", "False", "None", "match"}
)


class _Parser(AdtSyntax):
    def __init__(self, text: str, source_name: str, registry: OpRegistry) -> None:
        super().__init__(Source(text, source_name))
        self.registry = registry
        self.op_info: dict[Op, tuple[int | None, Any, Attrs]] = {}
        # Names in scope: each name maps to the stack of its bindings (the depth of the
        # scope that bound it, the value), innermost last, and each scope lists the
        # names it bound; so a lookup costs O(1) however many scopes (one per ``let``)
        # are open.
        self.bound: dict[str, list[tuple[int, Expr]]] = {}
        self.longest_name = 0  # of the names ever bound: projections look up no longer
        self.scopes: list[list[str]] = [[]]
        self.globals: dict[str, GlobalVar] = {}
        self.global_refs: dict[str, Token] = {}
        self.fn_depth = 0
        self.init_functions: dict[GlobalVar, Function] = {}
        self.init_adts()

    # -- names ----------------------------------------------------------------------
    def find(self, name: str) -> Expr | None:
        found = self.bound.get(name)
        return found[-1][1] if found else None

    def open_scope(self) -> None:
        self.scopes.append([])

    def close_scope(self) -> None:
        bound = self.bound
        for name in self.scopes.pop():
            bound[name].pop()

    def lookup(self, tok: Token) -> Expr:
        name = tok[1]
        found = self.find(name)
        if found is not None:
            return found
        if tok[0] == "GRAPH":
            raise self.error(tok, f"undefined temporary {name}: it is used before '{name} = ...;'")
        # %t.0.1 where %t is defined (and %t.0.1 is not) is a projection, as TVM prints it.
        base, indices = self._projection(name)
        if base is not None:
            span = self.token_span(tok)
            for index in indices:
                base = TupleGetItem(base, self.integer(tok, index), span=span)
            return base
        hint = f"; declare it first with 'free_var {name}: <type>;'" if not self.fn_depth else ""
        raise self.error(tok, f"undefined variable {name}{hint}")

    def _projection(self, name: str) -> tuple[Expr | None, list[str]]:
        """The longest defined prefix of ``name`` followed by ``.<digits>`` parts only,
        and those parts: ``%t.0.1`` -> (``%t``, ``["0", "1"]``). Linear in ``name``: only
        prefixes no longer than the longest defined name are looked up."""
        parts = name.split(".")
        low = len(parts)  # parts[low:] are all digits
        while low > 1 and parts[low - 1].isdigit():
            low -= 1
        end = len(name)
        for cut in range(len(parts) - 1, low - 1, -1):
            end -= len(parts[cut]) + 1  # name[:end] is ".".join(parts[:cut])
            if end > self.longest_name:
                continue
            base = self.find(name[:end])
            if base is not None:
                return base, parts[cut:]
        return None, []

    def define(self, tok: Token, value: Expr) -> None:
        """Bind ``tok``'s name in the innermost scope."""
        name = tok[1]
        depth = len(self.scopes)
        stack = self.bound.setdefault(name, [])
        if stack and stack[-1][0] == depth:
            raise self.error(tok, f"{name} is already defined in this scope")
        stack.append((depth, value))
        self.scopes[-1].append(name)
        self.longest_name = max(self.longest_name, len(name))

    def new_var(self, tok: Token, ty: Type | None, virtual_device: Any = None) -> Var:
        if virtual_device is not None and not isinstance(virtual_device, VirtualDevice):
            raise self.error(
                tok,
                f"the virtual device of {tok[1]} must be meta[VirtualDevice][i], "
                f"got {virtual_device!r}",
            )
        return Var(tok[1][1:], ty, span=self.token_span(tok), virtual_device=virtual_device)

    def global_var(self, tok: Token) -> GlobalVar:
        name = tok[1][1:]
        gv = self.globals.get(name)
        if gv is None:
            gv = self.globals[name] = GlobalVar(name)
        return gv

    # -- expressions -------------------------------------------------------------------
    def parse_expr(self) -> Expr:
        """An expression with infix operators, by precedence climbing (left-associative
        within a level: ``* /`` bind tighter than ``+ -``, then ``< > <= >=``, then
        ``== !=``)."""
        return self.binary(1)

    def binary(self, min_prec: int) -> Expr:
        start = self.peek()
        lhs = self.postfix()
        while True:
            tok = self.peek()
            text = tok[1]
            negative_literal = tok[0] == "NUMBER" and text.startswith("-")
            prec = 3 if negative_literal else _INFIX_PREC.get(text, 0) if tok[0] == "PUNCT" else 0
            if prec < min_prec:
                return lhs
            if negative_literal:  # `1 -1` lexes as 1 and -1: the minus is infix
                self.toks[self.pos] = ("NUMBER", text[1:], tok[2] + 1, tok[3], tok[4] + 1)
                text = "-"
            else:
                self.pos += 1
            rhs = self.binary(prec + 1)
            op = self.op(tok, _INFIX_OPS[text])
            lhs = self.op_call(op, [lhs, rhs], {}, {}, start, self.span_from(start))

    def negate(self) -> Expr:
        """Unary minus: a numeric literal's value is negated, as TVM's parser does
        (``--10`` is 10); any other operand becomes a call to ``negative``."""
        start = self.next()
        operand = self.negated_operand()
        if isinstance(operand, Constant) and operand.data.dtype != "bool":
            value = operand.data.numpy()
            if value.ndim == 0:
                if value.dtype.kind in "iu" and -int(value) != int(-value):
                    raise self.error(start, f"-({value}) does not fit in {value.dtype}")
                with np.errstate(over="ignore"):
                    negated = np.asarray(-value, dtype=value.dtype)
                return Constant(NDArray(negated), span=self.span_from(start))
        op = self.op(start, "negative")
        return self.op_call(op, [operand], {}, {}, start, self.span_from(start))

    def negated_operand(self) -> Expr:
        return self.negate() if self.at("-") and self.peek()[0] == "PUNCT" else self.postfix()

    def postfix(self) -> Expr:
        start = self.peek()
        if start[0] == "PUNCT" and start[1] == "-":
            return self.negate()
        expr = self.primary()
        while True:
            if self.at("("):
                expr = self.call(expr, start)
            elif self.at("."):
                self.pos += 1
                tok = self.next()
                if tok[0] != "NUMBER" or not _INDEX.fullmatch(tok[1]):
                    raise self.error(
                        tok, f"expected a field index after '.' but found {describe(tok)}"
                    )
                for index in tok[1].split("."):  # %t.0.1 lexes as %t . 0.1
                    expr = TupleGetItem(expr, self.integer(tok, index), span=self.span_from(start))
            else:
                return expr

    def primary(self) -> Expr:
        tok = self.peek()
        kind, text = tok[0], tok[1]
        if kind in ("LOCAL", "GRAPH"):
            self.pos += 1
            return self.lookup(tok)
        if kind == "GLOBAL":
            self.pos += 1
            self.global_refs.setdefault(text[1:], tok)
            return self.global_var(tok)
        if kind == "NUMBER":
            self.pos += 1
            return self.constant(tok)
        if kind == "IDENT":
            found = self.word_expr(tok)
            if found is not None:
                return found
        if kind == "PUNCT" and text == "(":
            return self.paren()
        raise self.error(tok, f"expected an expression but found {describe(tok)}")

    def word_expr(self, tok: Token) -> Expr | None:
        """The expression a word starts: a keyword's, a constructor, or an operator."""
        text = tok[1]
        if text in ("True", "False"):
            self.pos += 1
            return self.bool_constant(tok)
        keyword = _WORD_EXPRS.get(text)
        if keyword is not None:
            return keyword(self)
        if text in _REF_NODES and self.at("(", 1):
            return self.ref_expr()
        if text in self.constructors:
            return self.constructor_expr(tok)
        if text not in _KEYWORDS:
            self.pos += 1
            return self.op(tok)
        return None

    def ref_expr(self) -> Expr:
        """``ref(v)``, ``ref_read(r)`` or ``ref_write(r, v)``."""
        start = self.next()
        node_class, arity = _REF_NODES[start[1]]
        self.expect("(")
        args: list[Expr] = []
        while not self.accept(")"):
            if args:
                self.expect(",", f" or ')' in {start[1]}(...)")
            args.append(self.parse_expr())
        if len(args) != arity:
            raise self.error(start, f"{start[1]} takes {arity} argument(s), got {len(args)}")
        return node_class(*args, span=self.span_from(start))

    def op(self, tok: Token, name: str | None = None) -> Op:
        try:
            return self.registry.get(name or tok[1])
        except OpNotFoundError as err:
            raise self.error(tok, f"unknown operator: {err}") from None

    def paren(self) -> Expr:
        start = self.next()
        if self.at("let") or (self.peek()[0] == "GRAPH" and self.at("=", 1)):
            return self.body(")")
        fields: list[Expr] = []
        trailing = False
        while not self.accept(")"):
            if fields:
                self.expect(",", " or ')'")
                if self.accept(")"):
                    trailing = True
                    break
            fields.append(self.parse_expr())
        if len(fields) == 1 and not trailing:
            return fields[0]
        return Tuple(fields, span=self.span_from(start))

    def call(self, callee: Expr, start: Token) -> Call:
        self.expect("(")
        args: list[Expr] = []
        attrs: dict[str, Any] = {}
        attr_toks: dict[str, Token] = {}
        while not self.accept(")"):
            if args or attrs:
                self.expect(",", " or ')' in the arguments")
            tok = self.peek()
            if tok[0] == "IDENT" and self.at("=", 1):
                self.pos += 2
                if tok[1] in attrs:
                    raise self.error(tok, f"attribute {tok[1]} is given twice")
                attrs[tok[1]], attr_toks[tok[1]] = self.attr_value(), tok
            elif attrs:
                raise self.error(tok, "positional arguments must come before keyword attributes")
            else:
                args.append(self.parse_expr())
        span = self.span_from(start)
        if not isinstance(callee, Op):
            # The printer writes the attrs type of a non-operator call as attrs_type_key.
            type_key = attrs.pop("attrs_type_key", None)
            if type_key is not None:
                if not isinstance(type_key, str):
                    raise self.error(attr_toks["attrs_type_key"], "attrs_type_key must be a string")
                return Call(callee, args, Attrs(attrs, type_key), span=span)
            return Call(callee, args, attrs or None, span=span)
        return self.op_call(callee, args, attrs, attr_toks, start, span)

    def op_call(
        self,
        op: Op,
        args: list[Expr],
        attrs: dict[str, Any],
        attr_toks: dict[str, Token],
        start: Token,
        span: Span,
    ) -> Call:
        info = self.op_info.get(op)
        if info is None:
            schema = op.attrs_schema
            type_key = op.get_attr("attrs_type_key") or "DictAttrs"
            info = self.op_info[op] = (op.num_inputs, schema, Attrs(dict(schema), type_key))
        arity, schema, defaults = info
        if arity is not None and arity >= 0 and len(args) != arity:
            raise self.error(start, f"operator {op.name} takes {arity} inputs, got {len(args)}")
        if not attrs:
            return Call(op, args, defaults, span=span)
        for key, tok in attr_toks.items():
            if key not in schema:
                known = ", ".join(schema) or "none"
                raise self.error(
                    tok, f"operator {op.name} has no attribute {key!r}; its attributes are: {known}"
                )
            default = schema[key]
            wanted = _attr_kind_error(default, attrs[key]) if type(default) in _CHECKED else ""
            if wanted:
                raise self.error(
                    tok, f"attribute {key} of {op.name} must be {wanted}, got {attrs[key]!r}"
                )
        values: dict[str, Any] = {}
        for key, default in schema.items():
            value = attrs.get(key, default)
            if isinstance(default, float) and type(value) is int:
                value = float(value)
            values[key] = value
        return Call(op, args, Attrs(values, defaults.type_key), span=span)

    def params(self) -> tuple[list[Var], dict[str, Any]]:
        """``(%x: T, ..., key=value, ...)`` after the opening parenthesis."""
        params: list[Var] = []
        attrs: dict[str, Any] = {}
        while not self.accept(")"):
            if params or attrs:
                self.expect(",", " or ')' in the parameters")
            tok = self.next()
            if tok[0] == "LOCAL":
                if attrs:
                    raise self.error(tok, "parameters must come before attributes")
                vd = self.var_attrs().get("virtual_device")
                ty = self.annotation()
                var = self.new_var(tok, ty, vd)
                self.define(tok, var)
                params.append(var)
            elif tok[0] == "IDENT" and self.at("="):
                self.pos += 1
                attrs[tok[1]] = self.attr_value()
            else:
                raise self.error(
                    tok,
                    f"expected a parameter like %x: Tensor[(1), float32] or an "
                    f"attribute like Primitive=1 but found {describe(tok)}",
                )
        return params, attrs

    def function(self, name_tok: Token | None = None) -> Function:
        start = self.next()  # 'fn' or 'def'
        if name_tok is not None:
            self.next()
        type_params = self.type_params()
        try:
            fn = self.function_rest(start, name_tok)
        finally:
            self.type_scopes.pop()
        return fn.with_fields(type_params=type_params) if type_params else fn

    def function_rest(self, start: Token, name_tok: Token | None) -> Function:
        """The parameters, result type and body of a function."""
        self.expect("(", " after 'fn'" if name_tok is None else f" after {name_tok[1]}")
        self.open_scope()
        self.fn_depth += 1
        try:
            params, attrs = self.params()
            ret = self.parse_type() if self.accept("->") else None
            self.expect("{", " to open the function body")
            body = self.body("}")
        finally:
            self.close_scope()
            self.fn_depth -= 1
        try:
            params, attrs, vd = _placement_attrs(params, attrs)
            return Function(
                params,
                body,
                ret,
                attrs=attrs or None,
                span=self.span_from(start),
                virtual_device=vd,
            )
        except IRError as err:
            raise self.error(start, str(err)) from None

    def if_expr(self) -> If:
        start = self.next()
        self.expect("(", " after 'if'")
        cond = self.parse_expr()
        self.expect(")", " after the condition")
        self.expect("{", " to open the then-branch")
        then = self.body("}")
        self.expect("else", " after the then-branch")
        self.expect("{", " to open the else-branch")
        other = self.body("}")
        return If(cond, then, other, span=self.span_from(start))

    def body(self, closer: str | None) -> Expr:
        """Bindings and lets ending with the result expression (and ``closer`` if given).

        Iterates over statements, so a long chain of ``%n = ...;`` costs no recursion.
        """
        self.open_scope()
        lets: list[tuple[Var, Expr, Token]] = []
        try:
            while True:
                tok = self.peek()
                if tok[0] == "GRAPH" and self.at("=", 1):
                    self.pos += 2
                    value = self.parse_expr()
                    self.expect(";", f" after the binding of {tok[1]}")
                    self.define(tok, value)
                elif tok[0] == "IDENT" and tok[1] == "let":
                    self.pos += 1
                    var_tok = self.next()
                    if var_tok[0] != "LOCAL":
                        raise self.error(
                            var_tok,
                            f"expected a variable like %x after 'let' but "
                            f"found {describe(var_tok)}",
                        )
                    vd = self.var_attrs().get("virtual_device")
                    ty = self.annotation()
                    self.expect("=", f" after let {var_tok[1]}")
                    if self.at("fn"):
                        # a let-bound function sees itself (recursion), as in TVM
                        var = self.new_var(var_tok, ty, vd)
                        self.open_scope()
                        self.define(var_tok, var)
                        value = self.parse_expr()
                    else:
                        value = self.parse_expr()
                        var = self.new_var(var_tok, ty, vd)
                        self.open_scope()
                        self.define(var_tok, var)
                    self.expect(";", " after the let value")
                    lets.append((var, value, tok))
                else:
                    result = self.parse_expr()
                    if not self.at(";"):
                        break
                    # `e1; e2` is `let %_ = e1; e2`, as in TVM
                    self.pos += 1
                    self.open_scope()
                    lets.append((Var("_", span=self.span_from(tok)), result, tok))
            if closer is not None:
                self.expect(closer, " after the result expression")
        finally:
            for _ in lets:
                self.close_scope()
            self.close_scope()
        for var, value, tok in reversed(lets):
            result = Let(var, value, result, span=self.span_from(tok))
        return result

    # -- top level -------------------------------------------------------------------
    def header(self) -> None:
        tok = self.peek()
        if tok[0] == "VERSION" or (tok[0] == "IDENT" and _OLD_VERSION.match(tok[1])):
            self.pos += 1

    def module(self) -> IRModule:
        self.header()
        self.predeclare_types()
        top_level = ("def", "type", "extern")
        if not any(self.at(k) for k in top_level) and self.peek()[0] != "EOF":
            expr = self.expression()
            fn = expr if isinstance(expr, Function) else Function(free_vars(expr), expr)
            return IRModule({"main": fn})
        funcs: dict[str, tuple[GlobalVar, Function]] = {}
        while self.peek()[0] != "EOF":
            tok = self.peek()
            if self.at("type") or self.at("extern"):
                self.type_definition()
                continue
            if not self.at("def"):
                raise self.error(
                    tok, f"expected 'def' or the end of the module but found {describe(tok)}"
                )
            name_tok = self.peek(1)
            if name_tok[0] != "GLOBAL":
                raise self.error(
                    name_tok,
                    f"expected a global name like @main after 'def' but found {describe(name_tok)}",
                )
            name = name_tok[1][1:]
            if name in funcs:
                raise self.error(name_tok, f"@{name} is defined twice")
            gv = self.global_var(name_tok)
            funcs[name] = (gv, self.function(name_tok))
        for gv, fn in self.init_functions.items():
            funcs.setdefault(gv.name_hint, (gv, fn))
        for name, tok in self.global_refs.items():
            if name not in funcs:
                close = difflib.get_close_matches(name, funcs, n=3)
                hint = f"; did you mean {', '.join('@' + c for c in close)}?" if close else ""
                known = ", ".join("@" + n for n in funcs) or "none"
                raise self.error(tok, f"undefined global @{name} (defined: {known}){hint}")
        return IRModule(
            {gv: fn for gv, fn in funcs.values()}, type_definitions=list(self.type_defs.values())
        )

    def expression(self, allow_globals: bool = False) -> Expr:
        """``free_var`` declarations and one expression; with ``allow_globals`` (as
        TVM's ``parse_expr``) a global like ``@f`` is a free GlobalVar."""
        self.header()
        while self.at("free_var"):
            self.pos += 1
            tok = self.next()
            if tok[0] != "LOCAL":
                raise self.error(
                    tok, f"expected a variable like %x after 'free_var' but found {describe(tok)}"
                )
            ty = self.annotation()
            self.accept(";")
            self.define(tok, self.new_var(tok, ty))
        expr = self.body(None)
        tok = self.peek()
        if tok[0] != "EOF":
            raise self.error(tok, f"expected the end of the expression but found {describe(tok)}")
        for name, gtok in self.global_refs.items():
            if allow_globals:
                break
            raise self.error(
                gtok,
                f"undefined global @{name}: a lone expression has no globals; "
                "parse a module with def @name(...) instead",
            )
        return expr


# Words that start an expression, and how it is read.
_WORD_EXPRS: dict[str, Any] = {
    "fn": _Parser.function,
    "if": _Parser.if_expr,
    "meta": _Parser.meta_ref,
    "let": lambda parser: parser.body(None),
    "match": _Parser.match_expr,
}

_CHECKED = (str, float)  # schema defaults whose kind an attribute value must have


def _placement_attrs(
    params: list[Var], attrs: dict[str, Any]
) -> tuple[list[Var], dict[str, Any], Any]:
    """The function's ``virtual_device=`` attribute taken out as its result device; the
    older ``param_virtual_devices`` / ``result_virtual_device`` attributes (written by
    earlier TVM releases) become the parameters' and the result's virtual devices."""
    vd = attrs.pop("virtual_device", None)
    result_vd = attrs.pop("result_virtual_device", None)
    if vd is None:
        vd = result_vd
    param_vds = attrs.pop("param_virtual_devices", None)
    for v in (vd, *(param_vds or ())):
        if v is not None and not isinstance(v, VirtualDevice):
            raise IRError(f"a function's virtual devices must be meta[VirtualDevice][i], got {v!r}")
    if param_vds is not None:
        if len(param_vds) != len(params):
            raise IRError(
                f"param_virtual_devices has {len(param_vds)} entries for {len(params)} parameters"
            )
        for p, d in zip(params, param_vds, strict=True):
            if not p.virtual_device_:
                p.virtual_device_ = d  # the parser's own new variable: the body already uses it
    return params, attrs, vd


def _attr_kind_error(default: Any, value: Any) -> str:
    """What ``value`` should be when its kind cannot be that of the schema ``default``
    (only for string and float defaults, whose kinds are unambiguous), else ``""``."""
    if isinstance(default, str) and not isinstance(value, str):
        return "a string"
    if isinstance(default, float) and (
        isinstance(value, bool) or not isinstance(value, (int, float))
    ):
        return "a number"
    return ""


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a text is parsed and type-checked:
    the IR nodes are acyclic, and each collection would rescan all of those made so far,
    making a long text superlinear (as the BYOC passes do, ``byoc._common.no_gc``)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _run(fn: Any, parser: _Parser) -> Any:
    try:
        return fn()
    except RecursionError:
        raise parser.error(parser.peek(), "expressions are nested too deeply to parse") from None
    except ParseError:
        raise
    except RelayKitError as err:  # an IR constructor refused something: report where
        raise parser.error(parser.toks[max(parser.pos - 1, 0)], str(err)) from None


def parse(
    text: str,
    source_name: str = "<string>",
    init_module: IRModule | None = None,
    init_meta_table: Mapping[str, Sequence[Any]] | None = None,
    *,
    infer_types: bool = True,
    registry: OpRegistry | None = None,
) -> IRModule:
    """Parse a module (``def @main(...) {...}``, or a lone expression that becomes ``main``).

    As TVM's parser does, the module is type-checked (``infer_types=False`` skips it);
    a type error names the source position of the offending expression.
    ``init_module``'s functions can be called from the text and are part of the result
    (a ``def`` of the same name replaces one); ``init_meta_table`` maps
    ``"relay.Constant"`` to constants that ``meta[relay.Constant][i]`` refers to when
    the text has no ``#[metadata]`` section.
    """
    if not isinstance(text, str):
        raise ParseError(f"parse() takes the text as a str, got {type(text).__name__}")
    if init_module is not None and not isinstance(init_module, IRModule):
        raise ParseError(f"init_module must be an IRModule, got {type(init_module).__name__}")
    parser = _Parser(text, source_name, registry or default_registry)
    if init_meta_table is not None:
        parser.use_meta_table(init_meta_table)
    if init_module is not None:
        parser.init_adts(init_module)
        parser.init_functions = dict(init_module.items())
        parser.globals.update({gv.name_hint: gv for gv in parser.init_functions})
    with _gc_paused():
        mod = _run(parser.module, parser)
        if infer_types:
            mod = infer_module(mod)
    return mod


def parse_expr(
    text: str, source_name: str = "<string>", *, registry: OpRegistry | None = None
) -> Expr:
    """Parse one expression, with optional ``free_var`` declarations first (not type-checked)."""
    if not isinstance(text, str):
        raise ParseError(f"parse_expr() takes the text as a str, got {type(text).__name__}")
    parser = _Parser(text, source_name, registry or default_registry)
    return _run(lambda: parser.expression(allow_globals=True), parser)


def fromtext(text: str, source_name: str = "<string>") -> IRModule:
    """TVM's ``relay.fromtext``: the same as :func:`parse`."""
    return parse(text, source_name)
