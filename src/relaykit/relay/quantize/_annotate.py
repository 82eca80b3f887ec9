"""TVM's ``relay.quantize._annotate``: annotation rules and their helpers."""

from relaykit.quantize import QAnnotateKind
from relaykit.quantize.annotate import (
    QAnnotateExpr,
    attach_simulated_quantize,
    register_annotate_function,
)

__all__ = [
    "QAnnotateExpr",
    "QAnnotateKind",
    "attach_simulated_quantize",
    "register_annotate_function",
]
