"""The algebraic-data-type part of the text format, read by the parser.

``type List[A] { Cons(A, List[A]), Nil }`` (and ``extern type T[A]``) define
types; ``List[A]`` is a type call; a constructor's name is an expression (a
nullary one written alone, ``Nil``, is the value ``Nil()``); ``def @f[A](...)``
and ``fn [A](...)`` bind type parameters; ``match (e) { Cons(%x, _) => ..., }``
(``match?`` for an incomplete one) takes values apart with patterns ``_``,
``%x: T``, ``C(p, ...)`` and ``(p, ...)``.
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.adt import (
    Clause,
    Constructor,
    GlobalTypeVar,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    TypeCall,
    TypeData,
)
from relaykit.ir.expr import Call, Expr, Var
from relaykit.ir.types import Type, TypeVar

from .reader import TokenReader, describe
from .tokenizer import Token

__all__ = ["AdtSyntax"]


class AdtSyntax(TokenReader):
    """Type definitions, type parameters, constructors and ``match`` (a parser mixin)."""

    type_globals: dict[str, GlobalTypeVar]
    type_defs: dict[GlobalTypeVar, TypeData]
    constructors: dict[str, Constructor]
    type_scopes: list[dict[str, TypeVar]]
    known_types: set[str]

    def init_adts(self, known: Any = None) -> None:
        """Start with the type definitions of ``known`` (a module) in scope, if given."""
        self.type_globals = {}
        self.type_defs = {}
        self.constructors = {}
        self.type_scopes = []
        for gtv, data in getattr(known, "type_definitions", {}).items():
            self.type_globals[gtv.name_hint] = gtv
            self.type_defs[gtv] = data
            for con in data.constructors:
                self.constructors[con.name_hint] = con
        self.known_types = set(self.type_globals)

    # -- hooks the parser provides ---------------------------------------------------
    def parse_expr(self) -> Expr:
        raise NotImplementedError

    def body(self, closer: str | None) -> Expr:
        raise NotImplementedError

    def open_scope(self) -> None:
        raise NotImplementedError

    def close_scope(self) -> None:
        raise NotImplementedError

    def define(self, tok: Token, value: Expr) -> None:
        raise NotImplementedError

    # -- types -------------------------------------------------------------------------
    def named_type(self, tok: Token) -> Type | None:
        """A type variable in scope, or a defined type (``List[A]``, ``Ayy``)."""
        name = tok[1]
        for scope in reversed(self.type_scopes):
            tv = scope.get(name)
            if tv is not None:
                self.pos += 1
                return tv
        gtv = self.type_globals.get(name)
        if gtv is None:
            return None
        self.pos += 1
        args: list[Type] = []
        if self.accept("["):
            args = list(self.type_list("]"))
        return TypeCall(gtv, args)

    def type_params(self) -> list[TypeVar]:
        """``[A, B]`` if present: new type variables, put in a new type scope (the caller
        pops ``type_scopes`` when it is done)."""
        scope: dict[str, TypeVar] = {}
        self.type_scopes.append(scope)
        if not self.accept("["):
            return []
        params: list[TypeVar] = []
        while not self.accept("]"):
            if params:
                self.expect(",", " or ']' in the type parameters")
            tok = self.next()
            if tok[0] != "IDENT":
                raise self.error(tok, f"expected a type parameter name but found {describe(tok)}")
            if tok[1] in scope:
                raise self.error(tok, f"type parameter {tok[1]} is declared twice")
            scope[tok[1]] = TypeVar(tok[1])
            params.append(scope[tok[1]])
        return params

    def end_type_params(self) -> None:
        self.type_scopes.pop()

    def predeclare_types(self) -> None:
        """Make every top-level ``type Name`` known before any is read (they may refer to
        each other, and functions may use them in any order)."""
        depth = 0
        toks = self.toks
        for i, tok in enumerate(toks):
            if tok[0] == "EOF":
                break
            if tok[0] == "PUNCT" and tok[1] in "{([":
                depth += 1
            elif tok[0] == "PUNCT" and tok[1] in "})]":
                depth -= 1
            elif depth == 0 and tok[0] == "IDENT" and tok[1] == "type":
                name_tok = toks[i + 1]
                if name_tok[0] != "IDENT":
                    raise self.error(
                        name_tok, f"expected a type name but found {describe(name_tok)}"
                    )
                if name_tok[1] in self.type_globals:
                    where = "in the module" if name_tok[1] in self.known_types else "twice"
                    raise self.error(name_tok, f"type {name_tok[1]} is defined {where}")
                self.type_globals[name_tok[1]] = GlobalTypeVar(name_tok[1])

    def type_definition(self) -> TypeData:
        """``[extern] type Name[A, ...] { Con(T, ...), ... }`` (no body after ``extern``)."""
        extern = self.accept("extern")
        self.expect("type")
        name_tok = self.next()
        gtv = self.type_globals.get(name_tok[1])
        if gtv is None:  # an expression-level parse without predeclaration
            gtv = self.type_globals[name_tok[1]] = GlobalTypeVar(name_tok[1])
        params = self.type_params()
        cons: list[Constructor] = []
        try:
            if not extern:
                self.expect("{", f" to open the constructors of {name_tok[1]}")
                while not self.accept("}"):
                    if cons:
                        self.expect(",", " or '}' after a constructor")
                        if self.accept("}"):
                            break
                    cons.append(self.constructor_definition(gtv))
        finally:
            self.type_scopes.pop()
        data = TypeData(gtv, params, cons)
        self.type_defs[gtv] = data
        return data

    def constructor_definition(self, gtv: GlobalTypeVar) -> Constructor:
        tok = self.next()
        if tok[0] != "IDENT":
            raise self.error(tok, f"expected a constructor name but found {describe(tok)}")
        if tok[1] in self.constructors:
            raise self.error(tok, f"constructor {tok[1]} is defined twice")
        inputs: list[Type] = []
        if self.accept("("):
            inputs = list(self.type_list(")"))
        con = Constructor(tok[1], inputs, gtv)
        self.constructors[tok[1]] = con
        return con

    # -- expressions -----------------------------------------------------------------
    def constructor_expr(self, tok: Token) -> Expr:
        """A constructor used as a value; a nullary one not called is its value."""
        self.pos += 1
        con = self.constructors[tok[1]]
        if not con.inputs and not self.at("("):
            return Call(con, [], span=self.token_span(tok))
        return con

    def match_expr(self) -> Match:
        start = self.next()  # 'match'
        complete = not self.accept("?")
        data = self.parse_expr()  # usually parenthesised: match (%x) {...}
        self.expect("{", " to open the match clauses")
        clauses: list[Clause] = []
        while not self.accept("}"):
            if clauses:
                self.expect(",", " or '}' after a match clause")
                if self.accept("}"):
                    break
            clauses.append(self.clause())
        return Match(data, clauses, complete, span=self.span_from(start))

    def clause(self) -> Clause:
        start = self.peek()
        self.open_scope()
        try:
            lhs = self.pattern()
            self.expect("=", " (the '=>' of a match clause)")
            self.expect(">", " (the '=>' of a match clause)")
            rhs = self.body("}") if self.accept("{") else self.body(None)
        finally:
            self.close_scope()
        return Clause(lhs, rhs, span=self.span_from(start))

    def pattern(self) -> Pattern:
        tok = self.next()
        kind, text = tok[0], tok[1]
        if kind == "IDENT" and text == "_":
            return PatternWildcard()
        if kind == "LOCAL":
            var = Var(text[1:], self.annotation(), span=self.token_span(tok))
            self.define(tok, var)
            return PatternVar(var)
        if kind == "IDENT" and text in self.constructors:
            subs: list[Pattern] = []
            if self.accept("("):
                while not self.accept(")"):
                    if subs:
                        self.expect(",", " or ')' in a constructor pattern")
                    subs.append(self.pattern())
            return PatternConstructor(self.constructors[text], subs)
        if kind == "PUNCT" and text == "(":
            fields: list[Pattern] = []
            while not self.accept(")"):
                if fields:
                    self.expect(",", " or ')' in a tuple pattern")
                    if self.accept(")"):
                        break
                fields.append(self.pattern())
            return PatternTuple(fields)
        raise self.error(
            tok, f"expected a pattern (_, %x, a constructor or a tuple) but found {describe(tok)}"
        )
