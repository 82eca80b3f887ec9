"""``tvm.script.tir``: TVMScript's TIR dialect, which relaykit does not have.

>>> from relaykit.script import tir as T
>>> T.prim_func  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
relaykit.errors.UnsupportedFeatureError: relaykit has no tvm.script.tir ...
"""

from __future__ import annotations

from typing import NoReturn

from relaykit.errors import UnsupportedFeatureError

__all__: list[str] = []

INSTEAD = "relaykit has no tensor-level IR; dtypes are strings ('int32'), shapes are integers"


def __getattr__(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.script.tir", name, INSTEAD)
