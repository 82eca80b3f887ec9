"""Which attributes have no default in TVM's C++ attrs structs.

TVM's text printer prints an attribute when its value differs from the
default, and *always* when the field has no default (``units=None``,
``axes=None``, ``pool_size=[2, 2]``). The schema given to ``define_op`` holds
a placeholder value for such fields; this table says which they are, under
the op attribute ``"attrs_without_default"`` (a tuple of names).

>>> from relaykit import op
>>> op.get("nn.dense").get_attr("attrs_without_default")
('units',)
"""

from __future__ import annotations

from relaykit.ir.op import default_registry

__all__ = ["ATTRS_WITHOUT_DEFAULT", "register_attrs_without_default"]

ATTRS_WITHOUT_DEFAULT: dict[str, tuple[str, ...]] = {
    "clip": ("a_min", "a_max"),
    "cast": ("dtype",),
    "zeros": ("shape",),
    "ones": ("shape",),
    "full": ("shape",),
    "broadcast_to": ("shape",),
    "reshape": ("newshape",),
    "transpose": ("axes",),
    "expand_dims": ("axis",),
    "split": ("indices_or_sections",),
    "strided_slice": ("begin", "end", "strides", "axes"),
    "tile": ("reps",),
    "repeat": ("repeats",),
    "nn.dense": ("units",),
    "nn.max_pool2d": ("pool_size",),
    "nn.avg_pool2d": ("pool_size",),
    "nn.pad": ("pad_width",),
    "annotation.compiler_begin": ("compiler",),
    "annotation.compiler_end": ("compiler",),
}


def register_attrs_without_default() -> None:
    """Record the table above in the registry (called once all ops are defined)."""
    for name, fields in ATTRS_WITHOUT_DEFAULT.items():
        default_registry.register(name, attrs_without_default=fields)
