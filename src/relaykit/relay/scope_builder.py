"""``relay.ScopeBuilder``: write let-chains and branches imperatively.

Each ``let`` binds a value to a new variable in the current scope; ``ret`` gives
the scope its result; ``if_scope`` / ``else_scope`` open the two branches of an
``If``, which becomes the result of the enclosing scope. ``get()`` returns the
whole expression: the scope's lets around its result.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> sb = ScopeBuilder()
>>> y = sb.let("y", relay.add(x, x))
>>> with sb.if_scope(relay.const(True)):
...     sb.ret(y)
>>> with sb.else_scope():
...     sb.ret(x)
>>> print(relay.Function([x], sb.get()))  # doctest: +NORMALIZE_WHITESPACE
fn (%x: Tensor[(2), float32]) {
  let %y = add(%x, %x);
  if (True) {
    %y
  } else {
    %x
  }
}
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.expr import Expr, If, Let, Var
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import Type

__all__ = ["ScopeBuilder"]


class _Scope:
    def __init__(self) -> None:
        self.bindings: list[tuple[Var, Expr]] = []
        self.result: Expr | None = None

    def build(self) -> Expr:
        if self.result is None:
            raise IRError("a ScopeBuilder scope has no result: call sb.ret(value) in it")
        out = self.result
        for var, value in reversed(self.bindings):
            out = Let(var, value, out)
        return out


class ScopeBuilder:
    """Build nested ``let`` / ``if`` expressions (TVM's ``relay.ScopeBuilder``)."""

    def __init__(self) -> None:
        self._scopes: list[_Scope] = [_Scope()]
        self._pending_if: tuple[Expr, Expr] | None = None  # (condition, true branch)

    def _current(self) -> _Scope:
        scope = self._scopes[-1]
        if scope.result is not None:
            raise IRError(
                "this scope already has its result (sb.ret or an if/else); open a new one"
            )
        return scope

    def let(self, var: str | Var | tuple[str, Type], value: Any) -> Var:
        """Bind ``value`` to a new variable (a name, a ``(name, type)`` pair or a Var)."""
        if isinstance(var, str):
            var = Var(var)
        elif isinstance(var, tuple):
            var = Var(var[0], var[1])
        if not isinstance(var, Var):
            raise IRError(f"sb.let binds a name or a Var, not {type(var).__name__}")
        self._current().bindings.append((var, value))
        return var

    def ret(self, value: Any) -> None:
        """Set the result of the current scope."""
        self._current().result = value

    @contextmanager
    def if_scope(self, cond: Expr) -> Iterator[None]:
        """The true branch of an ``If`` on ``cond``; an ``else_scope`` must follow."""
        self._current()
        self._scopes.append(_Scope())
        yield
        branch = self._scopes.pop().build()
        self._pending_if = (cond, branch)

    @contextmanager
    def else_scope(self) -> Iterator[None]:
        """The false branch of the ``If`` opened by the preceding ``if_scope``."""
        if self._pending_if is None:
            raise IRError("sb.else_scope() must directly follow a `with sb.if_scope(...)` block")
        cond, true_branch = self._pending_if
        self._pending_if = None
        self._scopes.append(_Scope())
        yield
        false_branch = self._scopes.pop().build()
        self._current().result = If(cond, true_branch, false_branch)

    def type_of(self, expr: Expr) -> Type:
        """The inferred type of ``expr`` in the current scope (as TVM's ``type_of``)."""
        return infer_type_local(expr)

    def get(self) -> Expr:
        """The whole expression."""
        if len(self._scopes) != 1:
            raise IRError("sb.get() called inside an if_scope/else_scope block")
        if self._pending_if is not None:
            raise IRError("an if_scope has no else_scope: add `with sb.else_scope(): ...`")
        return self._scopes[0].build()
