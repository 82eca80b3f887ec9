"""Choosing the target of one call: pins, transparency, composites, target rules.

The order of precedence, for a call and the targets given in priority order:

1. a user pin that matches the call (first pin wins);
2. a transparent operator (``annotation.stop_fusion`` by default) follows its
   producer when the producer runs on a target that declares it transparent;
3. a composite call goes to the target named before the first ``.`` of its
   ``Composite`` attribute, when that target is in the list;
4. an operator call goes to the first target whose ``target.<name>`` rule
   accepts it;
5. everything else stays on the host (``"default"``).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> TargetChooser(["nowhere"]).choose(relay.nn.relu(x), None)
'default'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from relaykit.ir.expr import Call
from relaykit.ir.op import Op, OpRegistry, default_registry

from ._common import DEFAULT_TARGET, PartitionError, composite_name
from .pins import Pin, find_pin
from .rules import call_rule, rule_key, verdict_of
from .targets import TargetSpec, get_target_spec

__all__ = ["Decision", "TargetChooser", "HOST_TARGETS", "is_host_target", "normalize_targets"]

#: Names of the host among targets: ``host``, and TVM's host targets ``llvm`` (with or
#: without options, ``"llvm -mcpu=skylake"``), ``c`` and ``cpu``. The host takes what no
#: target takes anyway, so naming it partitions nothing.
HOST_TARGETS = ("host", "llvm", "c", "cpu")


def is_host_target(name: Any) -> bool:
    """Whether ``name`` (a string or a TVM ``Target``) names the host.

    >>> is_host_target("host"), is_host_target("llvm -mcpu=skylake"), is_host_target("dnnl")
    (True, True, False)
    """
    words = str(name).split()
    return bool(words) and words[0] in HOST_TARGETS


def normalize_targets(targets: Any) -> tuple[str, ...]:
    """``targets`` as a tuple of names (a single string is one target), without the
    host (:func:`is_host_target`): ``"host"`` alone is no target, a no-op partition."""
    if isinstance(targets, str):
        targets = [targets]
    try:
        names = tuple(str(t) for t in targets if not is_host_target(t))
    except TypeError:
        raise PartitionError(
            f"targets must be a target name or a list of them, got {targets!r}"
        ) from None
    for t in names:
        if not t or t == DEFAULT_TARGET:
            raise PartitionError(f"invalid target name {t!r}: give the names of external targets")
    if len(set(names)) != len(names):
        raise PartitionError(f"targets are listed twice: {list(names)}")
    return names


@dataclass(frozen=True)
class Decision:
    """Where one call goes and, for every target, why it was or wasn't taken."""

    target: str
    why: str
    reasons: dict[str, str] = field(default_factory=dict)
    pinned: bool = False


class TargetChooser:
    """Decides targets for calls (shared by ``AnnotateTarget`` and ``explain``)."""

    def __init__(
        self,
        targets: Sequence[str],
        pins: Sequence[Pin] = (),
        registry: OpRegistry = default_registry,
    ) -> None:
        self.targets = tuple(targets)
        self.pins = tuple(pins)
        self.registry = registry
        self.specs: dict[str, TargetSpec] = {t: get_target_spec(t) for t in self.targets}
        self._rules: dict[str, list[tuple[str, Any]]] = {}

    def _rules_of(self, op_name: str) -> list[tuple[str, Any]]:
        rules = self._rules.get(op_name)
        if rules is None:
            rules = []
            for t in self.targets:
                rule = self.registry.get_attr(op_name, rule_key(t))
                if rule is not None:
                    rules.append((t, rule))
            self._rules[op_name] = rules
        return rules

    def _transparent_for(self, op_name: str, producer: str | None) -> bool:
        spec = self.specs.get(producer) if producer is not None else None
        return spec is not None and spec.is_transparent(op_name)

    def choose(self, call: Call, producer: str | None) -> str:
        """The target of ``call``; ``producer`` is the target of its first argument."""
        if self.pins:
            p = find_pin(self.pins, call)
            if p is not None:
                return p.target
        op = call.op
        if type(op) is Op:
            name = op.name
            if producer is not None and self._transparent_for(name, producer):
                return producer
            for t, rule in self._rules_of(name):
                if call_rule(rule, call, name, t):
                    return t
            return DEFAULT_TARGET
        comp = composite_name(op)
        if comp is not None:
            prefix = comp.split(".", 1)[0] if "." in comp else None
            if prefix is not None and prefix in self.specs:
                return prefix
        return DEFAULT_TARGET

    def decide(self, call: Call, producer: str | None) -> Decision:
        """Like :meth:`choose`, with a reason for every target."""
        reasons = self._reasons(call, producer)
        chosen = self.choose(call, producer)
        p = find_pin(self.pins, call) if self.pins else None
        if p is not None:
            return self._pinned(p, reasons)
        if chosen == DEFAULT_TARGET:
            why = "no target takes it" if self.targets else "no targets given"
            return Decision(chosen, why, reasons)
        self._note_priority(chosen, reasons)
        return Decision(chosen, reasons[chosen], reasons)

    def _reasons(self, call: Call, producer: str | None) -> dict[str, str]:
        """For every target, why its rules (or the composite's name) take ``call`` or not."""
        op = call.op
        if type(op) is Op:
            return {t: self._operator_reason(call, op.name, t, producer) for t in self.targets}
        comp = composite_name(op)
        if comp is None:
            why = "not an operator call (calls of functions stay on the host)"
            return dict.fromkeys(self.targets, why)
        prefix = comp.split(".", 1)[0] if "." in comp else None
        reasons: dict[str, str] = {}
        for t in self.targets:
            if t == prefix:
                reasons[t] = f"pattern {comp} matched"
            elif prefix is None:
                reasons[t] = f"composite {comp} names no target (no '.')"
            else:
                reasons[t] = f"inside composite {comp}, which is for {prefix}"
        return reasons

    def _operator_reason(self, call: Call, name: str, t: str, producer: str | None) -> str:
        """Why target ``t`` takes the call of operator ``name`` or not."""
        if producer == t and self._transparent_for(name, t):
            return f"transparent for {t}: follows its producer"
        rule = self.registry.get_attr(name, rule_key(t))
        if rule is None:
            return f"no rule registered for {name}"
        return verdict_of(call_rule(rule, call, name, t), name, t).reason

    def _pinned(self, p: Pin, reasons: dict[str, str]) -> Decision:
        """The decision for a call the user pinned with ``p``: the pin overrides every
        target's reason."""
        where = "host" if p.target == DEFAULT_TARGET else p.target
        for t in self.targets:
            if t != p.target:
                reasons[t] = f"pinned to {where} by user ({reasons[t]})"
            else:
                reasons[t] = f"pinned to {t} by user"
        return Decision(p.target, f"pinned to {where} by user", reasons, True)

    def _note_priority(self, chosen: str, reasons: dict[str, str]) -> None:
        """Adds to the reasons of later targets that accepted too that ``chosen`` won."""
        rank = self.targets.index
        for t in self.targets:
            if t != chosen and rank(t) > rank(chosen):
                r = reasons[t]
                if r.startswith(("accepted", "transparent")):
                    reasons[t] = f"{r}, but {chosen} comes first in the target list"
