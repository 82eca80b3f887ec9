"""``tvm.target``: what a model is compiled for, parsed from TVM's target strings.

The implementation is :mod:`relaykit.target.target` (TVM's module path);
:mod:`relaykit.target.codegen` answers TVM's questions about the code generator.

>>> Target("llvm -mcpu=skylake").attrs["mcpu"]
'skylake'
"""

from . import codegen, target
from .compilation_config import CompilationConfig, make_compilation_config
from .target import (
    HOST_KINDS,
    Target,
    TargetKind,
    arm_cpu,
    cuda,
    list_kinds,
    mali,
    rocm,
)
from .virtual_device import VirtualDevice

__all__ = [
    "Target", "TargetKind", "VirtualDevice", "list_kinds", "HOST_KINDS",
    "arm_cpu", "cuda", "rocm", "mali", "codegen", "target",
    "CompilationConfig", "make_compilation_config",
]  # fmt: skip
