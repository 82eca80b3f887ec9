"""``memory.*``: the explicit-memory dialect (TVM's ``relay.op.memory``).

``memory.alloc_storage(size, shape, alignment)`` allocates a block (of the
``Storage`` type ``core.rly`` declares) on its ``virtual_device``,
``memory.alloc_tensor(storage, offset, shape)`` views a tensor in it, and
``memory.kill(x)`` releases it. These are what memory planning writes; relaykit's
executors allocate by themselves, so the operators exist for the IR (type checking,
printing, device planning and dead-code elimination, which keeps ``memory.kill``:
it is stateful); ``memory.kill`` runs as a no-op (``relay.transform.ManifestLifetimes``
inserts it), the allocations have no kernels.

>>> from relaykit import relay
>>> size = relay.var("size", shape=(), dtype="int64")
>>> call = alloc_storage(size, relay.const([2, 3], "int64"), relay.const(64, "int64"))
>>> call.op.name, call.attrs.dtype_hint
('memory.alloc_storage', 'float32')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaykit.ir.adt import GlobalTypeVar, TypeCall
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant, Expr
from relaykit.ir.op import register_op_attr
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.target.virtual_device import FULLY_UNCONSTRAINED

from .define import OpPattern, TypeRelError, define_op, make_call
from .device import as_virtual_device
from .op import register_stateful

__all__ = ["alloc_storage", "alloc_tensor", "kill", "STORAGE"]

#: The type ``core.rly`` declares as ``extern type Storage`` (type equality of global
#: type variables goes by name, so this one matches the module's).
STORAGE = GlobalTypeVar("Storage")


def _scalar(t: Type, what: str, op: str) -> None:
    if isinstance(t, TensorType) and (len(t.shape) != 0 or t.dtype != "int64"):
        raise TypeRelError(f"{op}: {what} must be an int64 scalar, got {t}")


def _alloc_storage_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    if len(arg_types) != 3:
        raise TypeRelError(f"memory.alloc_storage takes 3 inputs, got {len(arg_types)}")
    _scalar(arg_types[0], "the size", "memory.alloc_storage")
    _scalar(arg_types[2], "the alignment", "memory.alloc_storage")
    return TypeCall(STORAGE, ())


def _alloc_tensor_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    if len(arg_types) != 3:
        raise TypeRelError(f"memory.alloc_tensor takes 3 inputs, got {len(arg_types)}")
    dtype = attrs.get("dtype", "float32")
    const_shape = attrs.get("const_shape")
    if isinstance(const_shape, Constant):
        return TensorType(tuple(int(d) for d in const_shape.data.numpy().reshape(-1)), dtype)
    assert_shape = attrs.get("assert_shape") or ()
    if assert_shape:
        return TensorType(tuple(assert_shape), dtype)
    shape_t = arg_types[2]
    if not isinstance(shape_t, TensorType) or len(shape_t.shape) > 1:
        raise TypeRelError(f"memory.alloc_tensor: the shape must be a 1-d tensor, got {shape_t}")
    rank = shape_t.shape[0] if shape_t.shape else 0
    if not isinstance(rank, int):
        raise TypeRelError("memory.alloc_tensor: the shape's length must be static")
    return TensorType(tuple(AnyDim() for _ in range(rank)), dtype)


def _kill_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    if len(arg_types) != 1:
        raise TypeRelError(f"memory.kill takes 1 input, got {len(arg_types)}")
    return TupleType([])


define_op(
    "memory.alloc_storage",
    num_inputs=3,
    attrs={"virtual_device": FULLY_UNCONSTRAINED, "dtype_hint": "float32"},
    attrs_type_key="relay.attrs.AllocStorageAttrs",
    type_rel=_alloc_storage_rel,
    compute=None,
    pattern=OpPattern.OPAQUE,
    doc="A block of memory on a virtual device.",
)
define_op(
    "memory.alloc_tensor",
    num_inputs=3,
    attrs={"dtype": "float32", "const_shape": None, "assert_shape": ()},
    attrs_type_key="relay.attrs.AllocTensorAttrs",
    type_rel=_alloc_tensor_rel,
    compute=None,
    pattern=OpPattern.OPAQUE,
    doc="A tensor at an offset of a storage block.",
)
define_op(
    "memory.kill",
    num_inputs=1,
    type_rel=_kill_rel,
    compute=lambda args, attrs: (),  # computes nothing: the executors free by themselves
    pattern=OpPattern.OPAQUE,
    doc="Release a storage block or tensor to the allocator.",
)
register_stateful("memory.kill", True)
register_op_attr("memory.kill", "TNonComputational", True)


def alloc_storage(
    size: Expr,
    shape: Expr,
    alignment: Expr,
    virtual_device: Any = None,
    dtype_hint: str = "float32",
) -> Call:
    """``memory.alloc_storage``: ``size`` bytes aligned to ``alignment`` on ``virtual_device``."""
    vd = FULLY_UNCONSTRAINED if virtual_device is None else as_virtual_device(virtual_device)
    return make_call(
        "memory.alloc_storage", [size, shape, alignment], virtual_device=vd, dtype_hint=dtype_hint
    )


def alloc_tensor(
    storage: Expr,
    offset: Expr,
    shape: Expr,
    dtype: str = "float32",
    assert_shape: Sequence[int] | None = None,
) -> Call:
    """``memory.alloc_tensor``: a ``dtype`` tensor of ``shape`` at ``offset`` of ``storage``
    (a constant ``shape``, possibly under ``on_device``, fixes the type's shape)."""
    const_shape = None
    inner = shape
    while isinstance(inner, Call) and getattr(inner.op, "name", "") == "on_device":
        inner = inner.args[0]
    if assert_shape is None and isinstance(inner, Constant):
        const_shape = inner
    return make_call(
        "memory.alloc_tensor",
        [storage, offset, shape],
        dtype=dtype,
        const_shape=const_shape,
        assert_shape=tuple(int(d) for d in (assert_shape or ())),
    )


def kill(x: Expr) -> Call:
    """``memory.kill``: release ``x``."""
    return make_call("memory.kill", [x])
