"""``tvm.contrib.ndk``: the Android NDK compiler driver, which relaykit does not use.

The module imports (TVM scripts import it next to ``rpc``); compiling with the NDK
raises :class:`~relaykit.errors.UnsupportedFeatureError`: relaykit builds for the
host CPU, and ``lib.export_library(path)`` with no ``fcompile`` writes its artifact.

>>> try:
...     create_shared("net.so", ["net.o"])
... except Exception as err:
...     type(err).__name__
'UnsupportedFeatureError'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from relaykit.errors import UnsupportedFeatureError

__all__ = ["create_shared", "create_staticlib"]

_INSTEAD = (
    "relaykit builds for the host CPU and cross-compiles nothing: call "
    "lib.export_library(path) without fcompile and load the file with "
    "relaykit.runtime.load_module on the machine that runs it"
)


def create_shared(
    output: str, objects: str | Sequence[str], options: Sequence[str] | None = None
) -> NoReturn:
    """Link with the Android NDK (``$TVM_NDK_CC``): not available in relaykit."""
    raise UnsupportedFeatureError(f"tvm.contrib.ndk.create_shared({output!r}): {_INSTEAD}")


def create_staticlib(output: str, inputs: str | Sequence[str]) -> NoReturn:
    """Archive with the Android NDK: not available in relaykit."""
    raise UnsupportedFeatureError(f"tvm.contrib.ndk.create_staticlib({output!r}): {_INSTEAD}")
