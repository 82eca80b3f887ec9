"""Parameter dictionaries as bytes: TVM's ``save_param_dict`` / ``load_param_dict``.

The bytes are a NumPy ``.npz`` archive (one ``.npy`` member per parameter),
read back without pickle, so loading parameters never runs code. They are
relaykit's own format: bytes written by TVM's ``save_param_dict`` are not read.

>>> import numpy as np
>>> blob = save_param_dict({"w": np.arange(3, dtype="float32")})
>>> load_param_dict(blob)["w"].numpy().tolist()
[0.0, 1.0, 2.0]
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from relaykit.errors import ArtifactCorruptError, ExecutorUsageError

from .ndarray import NDArray

__all__ = ["save_param_dict", "load_param_dict"]


def save_param_dict(params: Mapping[str, Any]) -> bytes:
    """``params`` (name -> array or ``NDArray``) as bytes for :func:`load_param_dict` or a
    graph executor's ``load_params``."""
    if not isinstance(params, Mapping):
        raise ExecutorUsageError(
            f"save_param_dict takes a dict of parameter arrays, got {type(params).__name__}"
        )
    arrays = {}
    for name, value in params.items():
        arr = value.numpy() if isinstance(value, NDArray) else np.asarray(value)
        if arr.dtype.kind == "O":
            raise ExecutorUsageError(
                f"parameter {name!r} is not a numeric array ({type(value).__name__})"
            )
        arrays[str(name)] = arr
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def load_param_dict(data: bytes | bytearray) -> dict[str, NDArray]:
    """The parameters :func:`save_param_dict` wrote, as ``NDArray`` values."""
    if not isinstance(data, (bytes, bytearray)):
        raise ExecutorUsageError(
            f"load_param_dict takes the bytes save_param_dict returned, got {type(data).__name__}"
        )
    try:
        with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as npz:
            return {name: NDArray(np.array(npz[name])) for name in npz.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise ArtifactCorruptError(
            f"these bytes are not a parameter dict written by save_param_dict ({err})"
        ) from None
