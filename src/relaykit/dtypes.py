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

__all__ = ["DTYPES", "ML_DTYPES"]

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
