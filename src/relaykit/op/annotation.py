"""Annotation operators: identities that carry information for passes.

``compiler_begin``/``compiler_end`` mark where a region for an external
compiler starts and ends (``AnnotateTarget`` inserts them, ``PartitionGraph``
consumes them); ``stop_fusion`` keeps operator fusion from crossing a point;
``cast_hint`` tells automatic quantization (``relay.quantize``) the dtype a value
will be cast to (quantization's realize step turns it into a ``cast``).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> compiler_begin(x, "dnnl").attrs.compiler
'dnnl'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.op import register_op_attr
from relaykit.ir.types import Type

from .define import OpPattern, TypeRelError, define_op, make_call, no_default
from .device import function_on_device, on_device

__all__ = [
    "stop_fusion",
    "compiler_begin",
    "compiler_end",
    "checkpoint",
    "cast_hint",
    "on_device",
    "function_on_device",
]


def _identity_any_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    """The input's type, whatever it is (tensor or tuple)."""
    if len(arg_types) != 1:
        raise TypeRelError(f"expected 1 input, got {len(arg_types)}")
    return arg_types[0]


def _identity(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    return inputs[0]


define_op(
    "annotation.stop_fusion",
    num_inputs=1,
    type_rel=_identity_any_rel,
    compute=_identity,
    pattern=OpPattern.OPAQUE,
    doc="Identity that stops operator fusion.",
)
define_op(
    "annotation.checkpoint",
    num_inputs=1,
    type_rel=_identity_any_rel,
    compute=_identity,
    pattern=OpPattern.OPAQUE,
    doc="Identity marking a value the gradient recomputes instead of keeping.",
)
for _name, _doc in (
    ("annotation.compiler_begin", "Start of a region offloaded to an external compiler."),
    ("annotation.compiler_end", "End of a region offloaded to an external compiler."),
):
    define_op(
        _name,
        num_inputs=1,
        attrs={"compiler": no_default("")},
        attrs_type_key="relay.attrs.CompilerAttrs",
        type_rel=_identity_any_rel,
        compute=_identity,
        pattern=OpPattern.OPAQUE,
        doc=_doc,
    )
del _name, _doc
define_op(
    "annotation.cast_hint",
    num_inputs=1,
    attrs={"dtype": no_default("int8")},
    attrs_type_key="relay.attrs.CastHintAttrs",
    type_rel=_identity_any_rel,
    compute=_identity,
    pattern=OpPattern.ELEMWISE,
    doc="Identity carrying the dtype quantization will cast the value to.",
)
# Their type is their input's, so type inference unifies the two (TVM's IdentityRel): an
# annotation around a value whose type only a later use determines still types.
for _name in (
    "annotation.stop_fusion",
    "annotation.checkpoint",
    "annotation.compiler_begin",
    "annotation.compiler_end",
    "annotation.cast_hint",
):
    register_op_attr(_name, "TTypeIdentity", True)
del _name


def stop_fusion(data: Expr) -> Call:
    """``data`` unchanged, but fusion will not cross this point."""
    return make_call("annotation.stop_fusion", [data])


def compiler_begin(data: Expr, compiler: str) -> Call:
    """Mark ``data`` as an input of a region for the external ``compiler``."""
    return make_call("annotation.compiler_begin", [data], compiler=str(compiler))


def compiler_end(data: Expr, compiler: str) -> Call:
    """Mark ``data`` as an output of a region for the external ``compiler``."""
    return make_call("annotation.compiler_end", [data], compiler=str(compiler))


def checkpoint(data: Expr) -> Call:
    """``data`` unchanged; a gradient recomputes the values it marks rather than keep them."""
    return make_call("annotation.checkpoint", [data])


def cast_hint(data: Expr, dtype: str) -> Call:
    """``data`` unchanged, marked to be cast to ``dtype`` when quantization is realized.

    >>> from relaykit import relay
    >>> cast_hint(relay.var("x", shape=(2,)), "int8").attrs.dtype
    'int8'
    """
    return make_call("annotation.cast_hint", [data], dtype=str(dtype))
