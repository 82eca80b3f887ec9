"""``tvm.contrib.cutlass``: TVM's CUTLASS (NVIDIA GPU) kernel builder — not in relaykit.

The module imports, so that scripts naming it load; calling one of its functions
raises :class:`~relaykit.errors.UnsupportedFeatureError` (relaykit compiles for
the host CPU; its library backend is oneDNN, ``relaykit.backends.dnnl``).

>>> try:
...     finalize_modules(None)
... except UnsupportedFeatureError as exc:
...     print(type(exc).__name__)
UnsupportedFeatureError
"""

from __future__ import annotations

from typing import Any, NoReturn

from relaykit.errors import UnsupportedFeatureError

__all__ = [
    "finalize_modules",
    "finalize_modules_vm",
    "has_cutlass",
    "num_cutlass_partitions",
    "tune_cutlass_kernels",
    "build_cutlass_kernels",
    "build_cutlass_kernels_vm",
]

INSTEAD = "CUTLASS is an NVIDIA GPU library and relaykit compiles for the host CPU"


def _refuse(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.contrib.cutlass", name, INSTEAD)


def has_cutlass() -> bool:
    """Whether CUTLASS kernels can be built: never, in relaykit."""
    return False


def finalize_modules(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: compiles CUTLASS kernels for a GPU."""
    _refuse("finalize_modules")


def finalize_modules_vm(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: compiles CUTLASS kernels for a GPU."""
    _refuse("finalize_modules_vm")


def num_cutlass_partitions(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: counts CUTLASS partitions, which relaykit never makes."""
    _refuse("num_cutlass_partitions")


def tune_cutlass_kernels(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: profiles CUTLASS kernels on a GPU."""
    _refuse("tune_cutlass_kernels")


def build_cutlass_kernels(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: compiles CUTLASS kernels for a GPU."""
    _refuse("build_cutlass_kernels")


def build_cutlass_kernels_vm(*args: Any, **kwargs: Any) -> NoReturn:
    """Refused: compiles CUTLASS kernels for a GPU."""
    _refuse("build_cutlass_kernels_vm")
