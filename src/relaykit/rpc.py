"""``tvm.rpc``: TVM's remote-device sessions, which relaykit does not have.

The module imports; using it raises :class:`~relaykit.errors.UnsupportedFeatureError`.
relaykit runs models in the calling process; to run on another machine, copy the
single-file artifact (``lib.export_library(path)``) there and ``load_module`` it.

>>> from relaykit import rpc
>>> hasattr(rpc, "LocalSession")
False
"""

from __future__ import annotations

from typing import NoReturn

from relaykit.errors import UnsupportedFeatureError

__all__: list[str] = []

INSTEAD = (
    "relaykit runs in the calling process; export the model with lib.export_library(path), "
    "copy the file to the other machine and load it there with relaykit.runtime.load_module"
)


def __getattr__(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.rpc", name, INSTEAD)
