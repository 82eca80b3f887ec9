"""Attributes without a default of the ``nn.*`` operators whose definitions do not yet
mark them with :func:`relaykit.op.define.no_default`.

Every other operator declares such fields in its schema (``attrs={"units":
no_default()}``) and :func:`~relaykit.op.define.define_op` derives the op attribute
``"attrs_without_default"`` from it. The rows below go once ``op/nn``'s definitions
(reorganised separately, issue 24) use ``no_default`` for these fields.

>>> from relaykit import op
>>> op.get("nn.dense").get_attr("attrs_without_default")
('units',)
"""

from __future__ import annotations

from relaykit.ir.op import default_registry

__all__ = ["register_attrs_without_default"]

_NN_ATTRS_WITHOUT_DEFAULT: dict[str, tuple[str, ...]] = {
    "nn.dense": ("units",),
    "nn.max_pool2d": ("pool_size",),
    "nn.avg_pool2d": ("pool_size",),
    "nn.pad": ("pad_width",),
}


def register_attrs_without_default() -> None:
    """Record the rows above in the registry (called once all ops are defined), unless
    the op's own schema declared them."""
    for name, fields in _NN_ATTRS_WITHOUT_DEFAULT.items():
        if default_registry.get_attr(name, "attrs_without_default") is None:
            default_registry.register(name, attrs_without_default=fields)
