"""``tvm.relay.adt``: algebraic data types (constructors, patterns, ``match``).

>>> from relaykit.relay.adt import Clause, Match, PatternWildcard
>>> PatternWildcard().__class__.__module__
'relaykit.ir.adt'
"""

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

__all__ = [
    "Clause",
    "Constructor",
    "GlobalTypeVar",
    "Match",
    "Pattern",
    "PatternConstructor",
    "PatternTuple",
    "PatternVar",
    "PatternWildcard",
    "TypeCall",
    "TypeData",
]
