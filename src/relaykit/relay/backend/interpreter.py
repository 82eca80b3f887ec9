"""``tvm.relay.backend.interpreter``: the Relay interpreter and its executor.

>>> from relaykit import relay
>>> Interpreter.__module__
'relaykit.execution.interpreter'
"""

from relaykit.execution.interpreter import Executor, Interpreter, create_executor, evaluate
from relaykit.runtime.container import ADT, ConstructorValue, RefValue

__all__ = [
    "Executor",
    "Interpreter",
    "create_executor",
    "evaluate",
    "ADT",
    "ConstructorValue",
    "RefValue",
]
