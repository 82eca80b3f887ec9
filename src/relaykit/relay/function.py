"""``tvm.relay.function``: :class:`Function` (and ``FunctionWithFields``, TVM's copy
with some fields changed).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> f = FunctionWithFields(relay.Function([x], x), body=x + x)
>>> f.body.op.name
'add'
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.expr import Function

__all__ = ["Function", "FunctionWithFields"]


def FunctionWithFields(function: Function, **fields: Any) -> Function:
    """A copy of ``function`` with the given fields (``params``, ``body``, ``ret_type``,
    ``type_params``, ``attrs``, ``span``) replaced; unchanged if none differ."""
    changes = {k: v for k, v in fields.items() if v is not None}
    return function.with_fields(**changes) if changes else function
