"""What the ``onnxruntime`` backend accepts: every operator its exporter converts, on
static float32 tensors (layouts and attributes checked by each converter's rule).

It has no pattern table of its own: a region is one ONNX model, and onnxruntime's
graph optimiser fuses inside it (conv + bias + relu, GEMM epilogues, layer norm).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaykit.byoc.rules import Decline
from relaykit.ir.expr import Call

from .export import CONVERTERS

__all__ = ["TARGET", "RULES", "check_call"]

TARGET = "onnxruntime"


def check_call(call: Call) -> Decline | bool:
    """Whether onnxruntime runs ``call`` (True or the reason it does not)."""
    entry = CONVERTERS.get(str(getattr(call.op, "name", "")))
    if entry is None:
        return False
    return entry[1](call)


RULES: dict[str, Callable[[Call], Any]] = {name: entry[1] for name, entry in CONVERTERS.items()}
