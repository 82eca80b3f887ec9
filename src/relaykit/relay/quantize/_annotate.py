"""TVM's ``relay.quantize._annotate``: annotation rules and their helpers."""

from relaykit.quantize.annotate import (
    QAnnotateExpr,
    attach_simulated_quantize,
    register_annotate_function,
)

__all__ = ["QAnnotateExpr", "attach_simulated_quantize", "register_annotate_function"]
