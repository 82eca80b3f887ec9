"""Literals of the Relay text format: numbers with dtype suffixes, strings, attribute values.

The printer and the parser share these rules, so that what one writes the
other reads back exactly.

>>> import numpy as np
>>> scalar_text(np.array(1.0, "float32")), scalar_text(np.array(16, "int64"))
('1f', '16i64')
>>> attr_text(1e-05), attr_text([[0, 0], [0, 1]]), attr_text("NCHW")
('1e-05f', '[[0, 0], [0, 1]]', '"NCHW"')
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from relaykit.errors import ParseError

__all__ = [
    "DTYPE_SUFFIX",
    "SUFFIX_DTYPE",
    "float_text",
    "scalar_text",
    "attr_text",
    "quote",
    "unquote",
]

#: The suffix a scalar constant of each dtype carries (int32 has none).
DTYPE_SUFFIX: dict[str, str] = {
    "float32": "f",
    "float64": "f64",
    "float16": "f16",
    "int32": "",
    "int64": "i64",
    "int8": "i8",
    "int16": "i16",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
}

#: Suffix -> dtype, including spellings the printer never writes (``f32``, ``i32``).
SUFFIX_DTYPE: dict[str, str] = {
    **{s: d for d, s in DTYPE_SUFFIX.items() if s},
    "f32": "float32",
    "i32": "int32",
    "i": "int32",
}

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_HEX2 = re.compile("[0-9A-Fa-f]{2}")
_UNESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def float_text(value: float, dtype: str = "float64") -> str | None:
    """Shortest decimal text of a finite ``value`` that reads back bit-exactly as ``dtype``.

    Tries C's ``%g`` first (how TVM prints), then Python's shortest repr;
    returns None for non-finite values.
    """
    if not math.isfinite(value):
        return None
    np_dtype = np.dtype(dtype)
    want = np.array(value, dtype=np_dtype)
    for text in (f"{value:g}", str(want[()]), repr(float(value))):
        if _same_bits(np.array(float(text), dtype=np_dtype), want):
            return text
    return None  # pragma: no cover - repr of a float always round-trips


def scalar_text(array: np.ndarray) -> str | None:
    """The inline text of a rank-0 constant (``1f``, ``3i8``, ``True``), or None when
    the value must go to the metadata section instead."""
    if array.ndim != 0:
        return None
    dtype = array.dtype.name
    if dtype == "bool":
        return "True" if bool(array) else "False"
    suffix = DTYPE_SUFFIX.get(dtype)
    if suffix is None:
        return None
    if array.dtype.kind == "f":
        text = float_text(float(array), dtype)
        return None if text is None else text + suffix
    return f"{int(array)}{suffix}"


def quote(text: str) -> str:
    """``text`` as a double-quoted string literal."""
    out = []
    for ch in text:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ord(ch) < 32:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def unquote(literal: str) -> str:
    """The value of a string literal written by :func:`quote` (quotes included).

    Raises ParseError on a bad escape.
    """
    body = literal[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _UNESCAPES:
            out.append(_UNESCAPES[nxt])
            i += 2
        elif nxt == "x" and _HEX2.fullmatch(body, i + 2, i + 4):
            out.append(chr(int(body[i + 2 : i + 4], 16)))
            i += 4
        else:
            raise ParseError(f"bad escape \\{nxt} in string literal")
    return "".join(out)


def _float_attr_text(value: float) -> str:
    if math.isnan(value):
        return "nanf"
    if math.isinf(value):
        return "inff" if value > 0 else "-inff"
    return f"{float_text(value)}f"


def attr_text(value: Any) -> str:
    """An attribute value as the text format writes it.

    ints ``1``, floats ``0.5f`` (``inff``, ``-inff``, ``nanf`` when not finite),
    bools ``True``, strings ``"NCHW"``, sequences ``[1, 1]``, maps
    ``{"key": value}``, ``None``.
    """
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_attr_text(value)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(attr_text(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{quote(str(k))}: {attr_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, np.generic):
        return attr_text(value.item())
    return quote(str(value))
