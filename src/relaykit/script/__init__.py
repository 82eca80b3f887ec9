"""``tvm.script``: TVMScript, which relaykit does not have.

``from tvm.script import tir as T`` imports; using ``T`` raises
:class:`~relaykit.errors.UnsupportedFeatureError`. Relay programs are written in
Python with ``relaykit.relay`` or in Relay's text format (``relaykit.parse``).

>>> from relaykit.script import tir as T
>>> hasattr(T, "prim_func")
False
"""

from __future__ import annotations

from typing import NoReturn

from relaykit.errors import UnsupportedFeatureError

from . import tir

__all__ = ["tir"]

INSTEAD = "write Relay with relaykit.relay in Python, or in Relay's text format (relaykit.parse)"


def __getattr__(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.script", name, INSTEAD)
