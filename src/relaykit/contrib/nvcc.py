"""``tvm.contrib.nvcc``: CUDA compute-capability checks (relaykit compiles no CUDA).

The checks are TVM's rules on a compute-capability string such as ``"7.5"``;
with no CUDA device (relaykit never has one) they answer False.

>>> have_fp16("7.0"), have_fp16("5.2"), have_tensorcore("7.0"), have_fp16(None)
(True, False, True, False)
"""

from __future__ import annotations

from relaykit.errors import ArgumentError

__all__ = ["have_fp16", "have_int8", "have_tensorcore", "have_bf16", "parse_compute_version"]


def parse_compute_version(compute_version: str) -> tuple[int, int]:
    """``"7.5"`` -> ``(7, 5)``."""
    major, dot, minor = str(compute_version).partition(".")
    if not dot or not major.isdigit() or not minor.isdigit():
        raise ArgumentError(f"a compute version is 'major.minor', got {compute_version!r}")
    return int(major), int(minor)


def _at_least(compute_version: str | None, major: int, minor: int) -> bool:
    if compute_version is None:
        return False
    return parse_compute_version(compute_version) >= (major, minor)


def have_fp16(compute_version: str | None) -> bool:
    """Half-precision arithmetic: compute capability 5.3, or 6.0 and later."""
    if compute_version is None:
        return False
    return parse_compute_version(compute_version) == (5, 3) or _at_least(compute_version, 6, 0)


def have_int8(compute_version: str | None) -> bool:
    """``dp4a`` int8 dot products: compute capability 6.1 and later."""
    return _at_least(compute_version, 6, 1)


def have_tensorcore(compute_version: str | None = None, target: object = None) -> bool:
    """Tensor cores: compute capability 7.0 and later."""
    return _at_least(compute_version, 7, 0)


def have_bf16(compute_version: str | None) -> bool:
    """bfloat16 arithmetic: compute capability 8.0 and later."""
    return _at_least(compute_version, 8, 0)
