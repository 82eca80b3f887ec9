"""``tvm.target.codegen``: questions about the code generator.

relaykit has no LLVM code generator: its host kernels are NumPy and C functions. The
LLVM queries answer as TVM does when it was built without LLVM (``llvm_version_major``
is 0, so scripts that check it take their non-LLVM path); building a module for a
target (``build_module``) is ``relay.build``'s job.

>>> llvm_version_major()
0
>>> llvm_get_targets()
[]
"""

from __future__ import annotations

from typing import Any, NoReturn

from relaykit.errors import UnsupportedFeatureError

__all__ = [
    "build_module",
    "llvm_version_major",
    "llvm_get_targets",
    "llvm_get_system_cpu",
    "llvm_get_system_triple",
    "llvm_get_system_x86_vendor",
    "llvm_get_cpu_archlist",
    "llvm_get_cpu_features",
    "llvm_cpu_has_features",
    "llvm_lookup_intrinsic_id",
    "llvm_get_intrinsic_name",
    "target_has_features",
]

_NO_LLVM = "relaykit has no LLVM code generator (its host kernels are NumPy and C functions)"


def build_module(mod: Any, target: Any) -> NoReturn:
    """TVM's lowering of a TIR module to machine code: not in relaykit."""
    raise UnsupportedFeatureError(
        f"tvm.target.codegen.build_module builds TIR: {_NO_LLVM}; use relay.build(mod, target)"
    )


def llvm_version_major(allow_none: bool = False) -> int:
    """0: relaykit is not built with LLVM."""
    return 0


def llvm_get_targets() -> list[str]:
    """The LLVM targets relaykit can generate code for: none."""
    return []


def _no_llvm(name: str) -> NoReturn:
    raise UnsupportedFeatureError(f"tvm.target.codegen.{name}: {_NO_LLVM}")


def llvm_get_system_cpu() -> NoReturn:
    _no_llvm("llvm_get_system_cpu")


def llvm_get_system_triple() -> NoReturn:
    _no_llvm("llvm_get_system_triple")


def llvm_get_system_x86_vendor() -> NoReturn:
    _no_llvm("llvm_get_system_x86_vendor")


def llvm_get_cpu_archlist(target: Any = None) -> NoReturn:
    _no_llvm("llvm_get_cpu_archlist")


def llvm_get_cpu_features(target: Any = None) -> NoReturn:
    _no_llvm("llvm_get_cpu_features")


def llvm_cpu_has_features(cpu_features: Any, target: Any = None) -> NoReturn:
    _no_llvm("llvm_cpu_has_features")


def llvm_lookup_intrinsic_id(name: str) -> NoReturn:
    _no_llvm("llvm_lookup_intrinsic_id")


def llvm_get_intrinsic_name(intrin_id: int) -> NoReturn:
    _no_llvm("llvm_get_intrinsic_name")


def target_has_features(cpu_features: Any, target: Any = None) -> NoReturn:
    _no_llvm("target_has_features")
