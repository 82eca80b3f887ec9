"""The ``#[metadata]`` section: non-scalar constants as JSON, read back bit-exactly.

The section is one JSON object mapping a node kind to a list of entries;
``meta[relay.Constant][i]`` in the code refers to entry ``i`` of
``"relay.Constant"``. A tensor entry holds its shape, dtype and the
little-endian bytes in base64.

>>> import numpy as np
>>> text = dump_metadata({"relay.Constant": [np.arange(3, dtype="int8")]})
>>> print(text)
{"relay.Constant": [
  {"shape": [3], "dtype": "int8", "data": "AAEC"}
]}
>>> load_metadata(text)["relay.Constant"][0].tolist()
[0, 1, 2]
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from relaykit.ir.types import DTYPES
from relaykit.target import Target, VirtualDevice

__all__ = ["dump_metadata", "load_metadata", "MetadataError"]


_MAX_NDIM = 32  # NumPy's limit
_MAX_DIM = 2**63 - 1


#: The most digits an integer of the section may have (a dimension is below 2**63: 19).
_MAX_INT_DIGITS = 40
_LONG_INT = re.compile(rf"-?[0-9]{{{_MAX_INT_DIGITS + 1},}}")


class MetadataError(ValueError):
    """The metadata section is not what the printer writes (the parser reports it).
    ``pos`` is the offset in the section's text where it is wrong, when known."""

    def __init__(self, message: str, pos: int | None = None) -> None:
        super().__init__(message)
        self.pos = pos


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > _MAX_INT_DIGITS:
        raise MetadataError(
            f"an integer of {digits} digits (at most {_MAX_INT_DIGITS}: shapes are below 2**63)"
        )
    return int(text)


def _encode(array: np.ndarray) -> str:
    le = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    entry = {
        "shape": list(array.shape),
        "dtype": array.dtype.name,
        "data": base64.b64encode(le.tobytes()).decode("ascii"),
    }
    return json.dumps(entry)


def _encode_virtual_device(vd: VirtualDevice) -> str:
    target = vd.target
    host = target.host if target is not None else None
    entry = {
        "device_type": vd.device_type_int,
        "virtual_device_id": vd.virtual_device_id,
        "target": None if target is None else str(target),
        "target_host": None if host is None else str(host),
        "memory_scope": vd.memory_scope,
    }
    return json.dumps(entry)


def _decode_virtual_device(entry: Any, where: str) -> VirtualDevice:
    if not isinstance(entry, dict):
        raise MetadataError(f"{where} must be an object with device_type, target, ...")
    dev, vid = entry.get("device_type", -1), entry.get("virtual_device_id", -1)
    target, host = entry.get("target"), entry.get("target_host")
    scope = entry.get("memory_scope", "")
    if not (isinstance(dev, int) and isinstance(vid, int) and isinstance(scope, str)):
        raise MetadataError(f"{where}: device_type and virtual_device_id must be integers")
    for name, text in (("target", target), ("target_host", host)):
        if text is not None and not isinstance(text, str):
            raise MetadataError(f"{where}: {name} must be a target string or null")
    try:
        tgt = None if target is None else Target(target, host)
    except ValueError as err:
        raise MetadataError(f"{where}: bad target ({err})") from None
    return VirtualDevice.make(dev, vid, tgt, scope)


def dump_metadata(sections: Mapping[str, Sequence[Any]]) -> str:
    """The JSON text of the metadata section, one entry per line (tensors for
    ``relay.Constant``, virtual devices for ``VirtualDevice``)."""
    parts = []
    for kind, arrays in sections.items():
        if kind == "VirtualDevice":
            body = ",\n".join("  " + _encode_virtual_device(vd) for vd in arrays)
        else:
            body = ",\n".join("  " + _encode(np.asarray(a)) for a in arrays)
        parts.append(f"{json.dumps(kind)}: [\n{body}\n]")
    return "{" + ",\n".join(parts) + "}"


def _decode(entry: Any, where: str) -> np.ndarray:
    if not isinstance(entry, dict):
        raise MetadataError(f"{where} must be an object with shape, dtype and data")
    shape, dtype, data = entry.get("shape"), entry.get("dtype"), entry.get("data")
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise MetadataError(
            f"{where}: shape must be a list of non-negative integers, got {shape!r}"
        )
    if len(shape) > _MAX_NDIM or any(d > _MAX_DIM for d in shape):
        raise MetadataError(
            f"{where}: shape {shape!r} is too large (at most {_MAX_NDIM} dimensions, "
            "each below 2**63)"
        )
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise MetadataError(f"{where}: unknown dtype {dtype!r}")
    if not isinstance(data, str):
        raise MetadataError(f"{where}: data must be a base64 string")
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as err:
        raise MetadataError(f"{where}: data is not valid base64 ({err})") from None
    np_dtype = DTYPES[dtype].newbyteorder("<")
    count = extent = 1
    for d in shape:
        count *= d
        extent *= max(d, 1)  # NumPy refuses shapes whose non-zero extents overflow
    if extent * np_dtype.itemsize > _MAX_DIM:
        raise MetadataError(f"{where}: shape {tuple(shape)} {dtype} is too large for an array")
    if len(raw) != count * np_dtype.itemsize:
        raise MetadataError(
            f"{where}: {len(raw)} bytes of data for shape {tuple(shape)} {dtype} "
            f"(expected {count * np_dtype.itemsize})"
        )
    array = np.frombuffer(raw, dtype=np_dtype).reshape(shape)
    return array.astype(DTYPES[dtype])  # native byte order, writable copy


def load_metadata(text: str) -> dict[str, list[Any]]:
    """Parse a metadata section written by :func:`dump_metadata`.

    Raises :class:`MetadataError` (with a reason) on anything else.
    """
    try:
        doc = json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as err:
        raise MetadataError(
            f"metadata is not valid JSON: {err.msg} (line {err.lineno})", err.pos
        ) from None
    except MetadataError as err:  # from _parse_int: find where, for the message
        found = _LONG_INT.search(text)
        raise MetadataError(str(err), found.start() if found else None) from None
    except ValueError as err:  # any other conversion the JSON reader refuses
        raise MetadataError(f"metadata is not valid JSON: {err}") from None
    if not isinstance(doc, dict):
        raise MetadataError("metadata must be a JSON object mapping kinds to lists")
    out: dict[str, list[Any]] = {}
    for kind, entries in doc.items():
        if not isinstance(entries, list):
            raise MetadataError(f"metadata[{kind!r}] must be a list")
        decode = _decode_virtual_device if kind == "VirtualDevice" else _decode
        out[kind] = [decode(e, f"meta[{kind}][{i}]") for i, e in enumerate(entries)]
    return out
