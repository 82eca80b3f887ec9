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

import importlib
from types import ModuleType

from . import (
    auto_scheduler,
    autotvm,
    byoc,
    contrib,
    dataflow_pattern,
    error,
    errors,
    execution,
    instrument,
    ir,
    micro,
    op,
    parser,
    rpc,
    runtime,
    script,
    target,
    te,
    text,
    tir,
    transform,
)
from . import relay as relay
from ._version import __version__
from .errors import RelayKitError
from .errors import RelayKitError as TVMError
from .ir import IRModule, assert_structural_equal, structural_equal, structural_hash
from .parser import parse
from .runtime import ndarray as nd
from .runtime.module import enabled
from .runtime.ndarray import (
    Device,
    cl,
    cpu,
    cuda,
    device,
    ext_dev,
    gpu,
    hexagon,
    metal,
    mtl,
    opencl,
    rocm,
    vpi,
    vulkan,
    webgpu,
)
from .runtime.registry import get_global_func, register_func
from .tvm import remove_tvm_alias, use_as_tvm

# TVM code reaches TVMError as tvm._ffi.base.TVMError: load the package as an attribute
importlib.import_module(f"{__name__}._ffi")


def __getattr__(name: str) -> ModuleType:
    # relaykit.testing (the workloads) loads on first use: loading and running an
    # artifact imports no workload (tests/backends/test_export.py checks it).
    if name == "testing":
        return importlib.import_module(f"{__name__}.testing")
    raise AttributeError(f"module 'relaykit' has no attribute {name!r}")


__all__ = [
    "__version__",
    "IRModule",
    "RelayKitError",
    "TVMError",
    "parse",
    "parser",
    "assert_structural_equal",
    "structural_equal",
    "structural_hash",
    "cpu",
    "device",
    "cuda",
    "gpu",
    "opencl",
    "cl",
    "vulkan",
    "metal",
    "mtl",
    "rocm",
    "ext_dev",
    "hexagon",
    "webgpu",
    "vpi",
    "use_as_tvm",
    "enabled",
    "remove_tvm_alias",
    "Device",
    "register_func",
    "get_global_func",
    "nd",
    "execution",
    "byoc",
    "contrib",
    "dataflow_pattern",
    "errors",
    "ir",
    "op",
    "relay",
    "runtime",
    "text",
    "transform",
    "target",
    "te",
    "tir",
    "autotvm",
    "auto_scheduler",
    "rpc",
    "script",
    "error",
    "instrument",
    "micro",
]
