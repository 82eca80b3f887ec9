"""``tvm.relay.transform.flexible_shape``: :mod:`relaykit.transform.flexible_shape`."""

from relaykit.transform.flexible_shape import (
    FlexibleShapeDispatch,
    flexible_dispatch,
    override_shape,
    specialize_body,
)

__all__ = ["FlexibleShapeDispatch", "flexible_dispatch", "override_shape", "specialize_body"]
