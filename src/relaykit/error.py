"""``tvm.error``: TVM's error classes, as names for relaykit's.

TVM raises ``TVMError`` for every failure; relaykit's equivalent is
:class:`~relaykit.errors.RelayKitError`, the base of everything it raises, so
``except tvm.error.TVMError`` catches what TVM scripts expect. Parse and type
errors are ``DiagnosticError`` s, as in TVM.

>>> import relaykit
>>> issubclass(relaykit.errors.ParseError, DiagnosticError)
True
"""

from __future__ import annotations

from relaykit.errors import (
    AttrError,
    DiagnosticError,
    OpNotFoundError,
    RelayKitError,
    RelayTypeError,
    UnsupportedOpError,
)

__all__ = [
    "TVMError",
    "DiagnosticError",
    "InternalError",
    "OpError",
    "OpNotImplemented",
    "OpAttributeInvalid",
    "OpAttributeRequired",
    "OpAttributeUnImplemented",
    "TypeError",
]

TVMError = RelayKitError
InternalError = RelayKitError
OpError = OpNotFoundError
OpNotImplemented = UnsupportedOpError
OpAttributeInvalid = AttrError
OpAttributeRequired = AttrError
OpAttributeUnImplemented = AttrError
TypeError = RelayTypeError  # TVM's name: tvm.error.TypeError
