"""``tvm.relay.op.transform``: :mod:`relaykit.op.transform` under TVM's module path, with
the shape-following operators TVM files there too (:mod:`relaykit.op.shape_like`:
``slice_like``, ``reshape_like``, ``broadcast_to_like``...)."""

import relaykit.op.transform as _impl
from relaykit.op.shape_like import *  # noqa: F403
from relaykit.op.shape_like import __all__ as _like_all
from relaykit.relay._facade import forward

_names, __getattr__, _dir = forward(_impl)
__all__ = [*_names, *(n for n in _like_all if n not in _names)]


def __dir__() -> list[str]:
    return sorted(set(_dir()) | set(_like_all))
