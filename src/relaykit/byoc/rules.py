"""Target rules: what a backend accepts, and why it declines.

A backend states per operator whether it takes a call, as in TVM::

    @tvm.ir.register_op_attr("nn.dense", "target.mylib")
    def dense(expr):                      # TVM 0.8+: the typed Call
        if expr.args[0].checked_type.dtype != "float32":
            return decline("only float32 is supported")
        return True

The older ``fn(attrs, args)`` signature is accepted too (detected from the
function's signature), and so is a plain ``True``/``False`` value. A checker
declines by returning anything falsy; :func:`decline` carries the reason into
``relaykit.byoc.explain``.

>>> d = decline("only float32")
>>> bool(d), d.reason
(False, 'only float32')
"""

from __future__ import annotations

import contextlib
import inspect
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from relaykit.backends import target_key
from relaykit.errors import RelayKitError
from relaykit.ir.expr import Call
from relaykit.ir.op import Op, OpRegistry, default_registry

from ._common import PartitionError

__all__ = [
    "Decline",
    "decline",
    "Verdict",
    "RuleError",
    "check_op",
    "rule_key",
]


class RuleError(RelayKitError):
    """A target rule (``target.<name>`` checker) raised an exception."""


class Decline:
    """A falsy answer of a target rule that says why the call is declined."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = str(reason)

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"decline({self.reason!r})"


def decline(reason: str) -> Decline:
    """Decline a call with a reason: ``return decline("groups > 1 unsupported")``."""
    return Decline(reason)


@dataclass(frozen=True)
class Verdict:
    """What one target's rule says about one call."""

    accepted: bool
    reason: str


def rule_key(target: str) -> str:
    """The operator attribute that holds ``target``'s rule: ``"target.<target>"``
    (:func:`relaykit.backends.target_key`, the one place the key is spelled)."""
    return target_key(target)


_ARITY: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def _arity(fn: Callable[..., Any]) -> int:
    """How many positional arguments the checker takes (1: ``expr``, 2: ``attrs, args``)."""
    try:
        return _ARITY[fn]
    except (KeyError, TypeError):
        pass
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        n = 1
    else:
        params = [
            p
            for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
        varargs = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
        n = 2 if len(params) >= 2 else 1
        if varargs and not params:
            n = 1
    with contextlib.suppress(TypeError):
        _ARITY[fn] = n
    return n


def call_rule(rule: Any, call: Call, op_name: str, target: str) -> Any:
    """Run one rule on ``call`` and return its raw answer."""
    if not callable(rule):
        return rule
    try:
        if _arity(rule) == 2:
            return rule(call.attrs, list(call.args))
        return rule(call)
    except RelayKitError:
        raise
    except Exception as err:
        raise RuleError(
            f"the {rule_key(target)!r} rule of {op_name} raised {type(err).__name__}: {err}"
        ) from err


def verdict_of(answer: Any, op_name: str, target: str) -> Verdict:
    """Turn a rule's raw answer into a :class:`Verdict` with a readable reason."""
    if isinstance(answer, Decline):
        return Verdict(False, f"declined: {answer.reason}")
    if answer:
        return Verdict(True, f"accepted by the {rule_key(target)} rule of {op_name}")
    return Verdict(False, f"the {rule_key(target)} rule of {op_name} returned {answer!r}")


def check_op(call: Call, target: str, registry: OpRegistry = default_registry) -> Verdict:
    """What ``target``'s rule says about the operator call ``call``.

    >>> from relaykit import relay
    >>> x = relay.var("x", shape=(2,))
    >>> check_op(relay.nn.relu(x), "nowhere").reason
    'no rule registered for nn.relu (no target.nowhere attribute)'
    """
    op = call.op
    if type(op) is not Op:
        raise PartitionError(f"check_op takes an operator call, got a call of {type(op).__name__}")
    rule = registry.get_attr(op.name, rule_key(target))
    if rule is None:
        return Verdict(False, f"no rule registered for {op.name} (no {rule_key(target)} attribute)")
    return verdict_of(call_rule(rule, call, op.name, target), op.name, target)
