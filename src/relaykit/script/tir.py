"""``tvm.script.tir``: TVMScript's TIR dialect, which relaykit does not have.

Only its dtype constructors are here, as Relay code uses them for immediates
(``T.int32(10)`` is ``tir.IntImm("int32", 10)``); every other name raises
:class:`~relaykit.errors.UnsupportedFeatureError`.

>>> from relaykit.script import tir as T
>>> T.int32(10) == 10, T.int32(10).dtype, T.float32(0.5).dtype
(True, 'int32', 'float32')
>>> T.prim_func  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
relaykit.errors.UnsupportedFeatureError: relaykit has no tvm.script.tir ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from relaykit.errors import UnsupportedFeatureError
from relaykit.tir import FloatImm, IntImm

__all__ = [
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "float16",
    "float32",
    "float64",
    "bfloat16",
]


def _int_ctor(dtype: str) -> Callable[[Any], IntImm]:
    def make(value: Any = 0) -> IntImm:
        return IntImm(dtype, int(value))

    make.__name__ = make.__qualname__ = dtype
    make.__doc__ = f"An immediate of dtype {dtype} (TVMScript's ``T.{dtype}(value)``)."
    return make


def _float_ctor(dtype: str) -> Callable[[Any], FloatImm]:
    def make(value: Any = 0.0) -> FloatImm:
        return FloatImm(dtype, float(value))

    make.__name__ = make.__qualname__ = dtype
    make.__doc__ = f"An immediate of dtype {dtype} (TVMScript's ``T.{dtype}(value)``)."
    return make


int8 = _int_ctor("int8")
int16 = _int_ctor("int16")
int32 = _int_ctor("int32")
int64 = _int_ctor("int64")
uint8 = _int_ctor("uint8")
uint16 = _int_ctor("uint16")
uint32 = _int_ctor("uint32")
uint64 = _int_ctor("uint64")
bool = _int_ctor("bool")
float16 = _float_ctor("float16")
float32 = _float_ctor("float32")
float64 = _float_ctor("float64")
bfloat16 = _float_ctor("bfloat16")

INSTEAD = "relaykit has no tensor-level IR; dtypes are strings ('int32'), shapes are integers"


def __getattr__(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.script.tir", name, INSTEAD)
