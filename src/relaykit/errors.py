"""The one exception hierarchy of relaykit.

Every user-facing failure is a subclass of :class:`RelayKitError`, so a caller
can catch everything relaykit raises with one ``except`` clause, or a single
kind precisely.

>>> from relaykit.errors import RelayKitError, RelayTypeError
>>> issubclass(RelayTypeError, RelayKitError)
True
"""

from __future__ import annotations

__all__ = [
    "RelayKitError",
    "IRError",
    "StructuralMismatchError",
    "RelayTypeError",
    "TypeNotInferredError",
    "OpNotFoundError",
    "AttrError",
    "ParseError",
    "ExecutionError",
    "MissingDependencyError",
]


class RelayKitError(Exception):
    """Base class of every error relaykit raises on bad input."""


class IRError(RelayKitError, ValueError):
    """An IR node was built or used incorrectly (wrong field type, bad arity...)."""


class StructuralMismatchError(RelayKitError, AssertionError):
    """Raised by ``assert_structural_equal``; the message names the first mismatching path."""


class RelayTypeError(RelayKitError, TypeError):
    """Type inference failed: the message names the operator, the argument types
    and shows the IR around the offending node."""


class TypeNotInferredError(RelayKitError, AttributeError):
    """``checked_type`` was read before type inference ran."""


class OpNotFoundError(RelayKitError, KeyError):
    """An operator name is not registered; the message suggests close names."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want plain text
        return str(self.args[0]) if self.args else ""


class AttrError(RelayKitError, ValueError):
    """An operator attribute is unknown, missing or of the wrong kind."""


class ParseError(RelayKitError, SyntaxError):
    """Relay text could not be parsed; the message shows ``source:line:col`` and a caret."""


class ExecutionError(RelayKitError, RuntimeError):
    """Evaluating the IR failed; the message names the node being evaluated."""


class MissingDependencyError(RelayKitError, ImportError):
    """An optional feature needs a package that is not installed; the message says
    which extra to install."""
