"""``tvm.relay.op.transform``: :mod:`relaykit.op.transform` under TVM's module path, with
the shape-following operators TVM files there too (:mod:`relaykit.op.shape_like`:
``slice_like``, ``reshape_like``, ``broadcast_to_like``...)."""

from typing import Any

import relaykit.op.shape_like as _like
import relaykit.op.transform as _impl
from relaykit.relay._facade import forward

_names, _getattr, _dir = forward(_impl)
__all__ = [*_names, *(n for n in _like.__all__ if n not in _names)]


def __getattr__(name: str) -> Any:
    if name in _like.__all__:
        return getattr(_like, name)
    return _getattr(name)


def __dir__() -> list[str]:
    return sorted(set(_dir()) | set(_like.__all__))
