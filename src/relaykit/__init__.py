"""relaykit: the Relay IR and its Bring-Your-Own-Codegen flow, in Python.

Scripts written for TVM's Relay run with ``import relaykit as tvm``:

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> mod = tvm.IRModule.from_expr(relay.Function([x], x + x))
>>> tvm.transform.PassContext is relay.transform.PassContext
True
"""

from __future__ import annotations

from typing import Any

from . import errors, ir, op, parser, runtime, transform
from . import relay as relay
from .errors import RelayKitError
from .ir import IRModule, assert_structural_equal, structural_equal, structural_hash
from .parser import parse
from .runtime import ndarray as nd
from .runtime.ndarray import Device, cpu, device
from .runtime.registry import get_global_func, register_func

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("testing", "dataflow_pattern", "byoc", "text", "backend", "contrib"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'relaykit' has no attribute {name!r}")


__all__ = [
    "IRModule",
    "RelayKitError",
    "parse",
    "parser",
    "assert_structural_equal",
    "structural_equal",
    "structural_hash",
    "cpu",
    "device",
    "Device",
    "register_func",
    "get_global_func",
    "nd",
    "errors",
    "ir",
    "op",
    "relay",
    "runtime",
    "transform",
]
