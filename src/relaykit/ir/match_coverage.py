"""Which values a ``match`` does not cover (TVM's ``relay.analysis.unmatched_cases``).

Starting from "any value" (``_``), each clause's pattern is subtracted from the
cases still uncovered: a wildcard or a variable covers everything; a constructor
pattern splits ``_`` into one case per constructor of its type and subtracts
field by field; a tuple pattern likewise. What is left after the last clause are
the unmatched cases, as patterns.

>>> from relaykit.ir import Var
>>> from relaykit.ir.adt import Clause, Match, PatternVar
>>> v = Var("v")
>>> [type(p).__name__ for p in unmatched_cases(Match(v, []))]
['PatternWildcard']
>>> unmatched_cases(Match(v, [Clause(PatternVar(Var("w")), v)]))
[]
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import IRError

from .adt import (
    Constructor,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
)

__all__ = ["unmatched_cases"]


def unmatched_cases(match: Match, mod: Any = None) -> list[Pattern]:
    """The patterns of the values no clause of ``match`` matches; ``mod`` holds the type
    definitions of the constructors the patterns use."""
    if not isinstance(match, Match):
        raise IRError(f"unmatched_cases takes a relay Match, got {type(match).__name__}")
    coverage = _Coverage(mod)
    cases: list[Pattern] = [PatternWildcard()]
    for clause in match.clauses:
        cases = [rest for case in cases for rest in coverage.subtract(case, clause.lhs)]
    return cases


def _covers_all(p: Pattern) -> bool:
    return isinstance(p, (PatternWildcard, PatternVar))


class _Coverage:
    def __init__(self, mod: Any) -> None:
        self.mod = mod

    def siblings(self, con: Constructor) -> tuple[Constructor, ...]:
        """All constructors of ``con``'s type."""
        defs = getattr(self.mod, "type_definitions", {})
        data = defs.get(con.belong_to)
        if data is None:
            raise IRError(
                f"unmatched_cases: type {con.belong_to} of constructor {con.name_hint} is not "
                "defined in the module; pass the module: unmatched_cases(match, mod)"
            )
        return data.constructors

    def expand(self, like: Pattern) -> list[Pattern]:
        """``_`` split into the cases of ``like``'s shape (all wildcards below)."""
        if isinstance(like, PatternConstructor):
            return [
                PatternConstructor(c, [PatternWildcard() for _ in c.inputs])
                for c in self.siblings(like.constructor)
            ]
        if isinstance(like, PatternTuple):
            return [PatternTuple([PatternWildcard() for _ in like.patterns])]
        return [PatternWildcard()]

    def subtract(self, case: Pattern, pat: Pattern) -> list[Pattern]:
        """The cases of ``case`` that ``pat`` does not match."""
        if _covers_all(pat):
            return []
        if _covers_all(case):
            return [r for c in self.expand(pat) for r in self.subtract(c, pat)]
        if isinstance(case, PatternConstructor) and isinstance(pat, PatternConstructor):
            if case.constructor is not pat.constructor:
                return [case]
            con = case.constructor
            return self.subtract_fields(
                case.patterns, pat.patterns, lambda subs: PatternConstructor(con, subs)
            )
        if isinstance(case, PatternTuple) and isinstance(pat, PatternTuple):
            if len(case.patterns) != len(pat.patterns):
                raise IRError(
                    f"unmatched_cases: tuple patterns of {len(case.patterns)} and "
                    f"{len(pat.patterns)} fields match the same value"
                )
            return self.subtract_fields(case.patterns, pat.patterns, PatternTuple)
        raise IRError(
            f"unmatched_cases: a {type(pat).__name__} pattern where the value is a "
            f"{type(case).__name__}"
        )

    def subtract_fields(self, cases: Any, pats: Any, rebuild: Any) -> list[Pattern]:
        """``C(c1..cn) - C(p1..pn)``: for each field ``i``, the values whose fields before
        ``i`` match (``ci & pi``) and whose field ``i`` does not (``ci - pi``)."""
        out: list[Pattern] = []
        prefix: list[Pattern] = []
        for i, (c, p) in enumerate(zip(cases, pats, strict=True)):
            for rest in self.subtract(c, p):
                out.append(rebuild([*prefix, rest, *cases[i + 1 :]]))
            both = self.intersect(c, p)
            if both is None:
                break
            prefix.append(both)
        return out

    def intersect(self, a: Pattern, b: Pattern) -> Pattern | None:
        """The values both patterns match, as a pattern, or ``None`` if there are none."""
        if _covers_all(a):
            return PatternWildcard() if _covers_all(b) else b
        if _covers_all(b):
            return a
        if isinstance(a, PatternConstructor) and isinstance(b, PatternConstructor):
            if a.constructor is not b.constructor:
                return None
            subs = [self.intersect(x, y) for x, y in zip(a.patterns, b.patterns, strict=True)]
            if any(s is None for s in subs):
                return None
            return PatternConstructor(a.constructor, subs)  # type: ignore[arg-type]
        if isinstance(a, PatternTuple) and isinstance(b, PatternTuple):
            subs = [self.intersect(x, y) for x, y in zip(a.patterns, b.patterns, strict=True)]
            if any(s is None for s in subs):
                return None
            return PatternTuple(subs)  # type: ignore[arg-type]
        return None
