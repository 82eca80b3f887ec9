"""The element types relaykit knows and their NumPy dtypes: a bottom module, so that the
IR (``relaykit.ir.types`` re-exports these names) and the artifact format share one table.

>>> DTYPES["float32"]
dtype('float32')
>>> "bfloat16" in ML_DTYPES
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["DTYPES", "ML_DTYPES", "converts_exactly"]

#: The element types relaykit knows, with their NumPy equivalents.
DTYPES: dict[str, np.dtype[Any]] = {
    name: np.dtype(name)
    for name in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
    )
}

#: Narrow element types backed by the optional ``ml_dtypes`` package (the NumPy dtypes
#: that onnx and JAX use for them): registered in :data:`DTYPES` when it is installed.
ML_DTYPES: tuple[str, ...] = (
    "bfloat16",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn",
    "int4",
    "uint4",
    "int2",
    "uint2",
)


def _register_ml_dtypes() -> None:
    try:
        import ml_dtypes
    except ImportError:
        return
    for name in ML_DTYPES:
        DTYPES[name] = np.dtype(getattr(ml_dtypes, name))


_register_ml_dtypes()


def converts_exactly(arr: np.ndarray, want: Any) -> bool:
    """Whether an input array may be stored as ``want``: a safe cast, a float to a
    narrower float, or integers of another signedness or width whose every value
    ``want`` holds (TVM converts ``int64`` data for a ``uint8`` input; values that would
    wrap around are refused, never changed), or floats that are all whole numbers ``want``
    holds (TVM converts ``2.0`` for an ``int32`` input; ``2.5`` is refused, not truncated).

    >>> converts_exactly(np.array([2.0, -1.0]), "int32"), converts_exactly(np.array([2.5]), "int32")
    (True, False)
    >>> converts_exactly(np.array([1, 2**40]), "int32")  # int64 that int32 cannot hold
    False
    """
    want = np.dtype(want)
    if np.can_cast(arr.dtype, want, "safe"):
        return True
    if arr.dtype.kind in "iuf" and want.kind in "iu":  # narrower ints too: range-checked
        if arr.size == 0:
            return True
        info = np.iinfo(want)
        if arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr) & (np.trunc(arr) == arr)):
                return False
            # float(info.max) rounds up to 2**bits for 64-bit types: compare with the
            # power of two above it, which every float dtype holds exactly
            return bool(info.min <= arr.min() and arr.max() < float(info.max) + 1.0)
        return bool(info.min <= arr.min() and arr.max() <= info.max)
    return bool(np.can_cast(arr.dtype, want, "same_kind"))
