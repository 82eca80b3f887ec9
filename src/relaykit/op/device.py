"""Device placement: ``on_device`` (an expression's value lives on a device) and
``device_copy`` (a value copied between devices), TVM's heterogeneous-execution markers.

Both are identities on values; their attributes carry
:class:`~relaykit.target.VirtualDevice` records (``device_type_int`` is DLPack's code: 1
for cpu, 2 for cuda). relaykit runs on the host CPU, so evaluation ignores the
placement; passes and printers see it. A device is given as a name (``"cuda"``), a
``tvm.device(...)`` or a ``VirtualDevice``; an unknown name raises.

>>> from relaykit import relay
>>> call = on_device(relay.var("x"), "cuda")
>>> call.attrs.virtual_device.device_type_int, call.attrs.constrain_body
(2, True)
>>> device_copy(relay.var("y"), "cuda", "cpu").attrs.dst_virtual_device.device_type_int
1
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.errors import IRError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, Function
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.op import register_op_attr
from relaykit.ir.types import Type
from relaykit.runtime.ndarray import Device, device
from relaykit.target import Target, VirtualDevice

from .define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["on_device", "device_copy", "as_virtual_device", "function_on_device"]


def as_virtual_device(where: Any) -> VirtualDevice:
    """A :class:`VirtualDevice` from a device name, a ``Device``, a ``Target`` or itself."""
    if isinstance(where, VirtualDevice):
        return where
    if isinstance(where, Device):
        return VirtualDevice(where)
    if isinstance(where, Target):
        return VirtualDevice(device(where.kind.name), where)
    return VirtualDevice(device(str(where)))  # an unknown name raises IRError (a ValueError)


def _identity_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    if len(arg_types) != 1:
        raise TypeRelError(f"expected 1 input, got {len(arg_types)}")
    return arg_types[0]


def _identity(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    return inputs[0]


_UNCONSTRAINED = VirtualDevice()

define_op(
    "on_device",
    num_inputs=1,
    attrs={"virtual_device": _UNCONSTRAINED, "constrain_result": False, "constrain_body": True},
    attrs_type_key="relay.attrs.OnDeviceAttrs",
    type_rel=_identity_rel,
    compute=_identity,
    pattern=OpPattern.OPAQUE,
    doc="The body's value, placed on a virtual device.",
)
define_op(
    "device_copy",
    num_inputs=1,
    attrs={"src_virtual_device": _UNCONSTRAINED, "dst_virtual_device": _UNCONSTRAINED},
    attrs_type_key="relay.attrs.DeviceCopyAttrs",
    type_rel=_identity_rel,
    compute=_identity,
    pattern=OpPattern.OPAQUE,
    doc="The value copied from one virtual device to another.",
)


for _name in ("on_device", "device_copy"):
    # the type is the body's, known or not yet (a function-typed body of an ``if``)
    register_op_attr(_name, "TTypeIdentity", True)
del _name


def on_device(
    body: Expr, virtual_device: Any, constrain_result: bool = False, constrain_body: bool = True
) -> Call:
    """``body`` placed on ``virtual_device``: ``constrain_body`` says the body is computed
    there, ``constrain_result`` that its value stays there. With neither, the placement
    is left free (an unconstrained virtual device, ``device_type_int`` -1)."""
    vd = as_virtual_device(virtual_device)
    if not constrain_body and not constrain_result:
        vd = _UNCONSTRAINED
    return make_call(
        "on_device",
        [body],
        virtual_device=vd,
        constrain_result=bool(constrain_result),
        constrain_body=bool(constrain_body),
    )


def device_copy(data: Expr, src_device: Any, dst_device: Any) -> Call:
    """``data`` copied from ``src_device`` to ``dst_device`` (names, devices or virtual
    devices)."""
    return make_call(
        "device_copy",
        [data],
        src_virtual_device=as_virtual_device(src_device),
        dst_virtual_device=as_virtual_device(dst_device),
    )


def function_on_device(
    function: Function, param_devices: Sequence[Any], result_device: Any
) -> Function:
    """``function`` with its parameters on ``param_devices`` and its result on
    ``result_device`` (names, devices or virtual devices), TVM's
    ``relay.annotation.function_on_device``; ``PlanDevices`` takes them as constraints.

    >>> from relaykit import relay
    >>> x = relay.var("x", shape=(2,))
    >>> f = function_on_device(relay.Function([x], x + x), ["cpu"], "cpu")
    >>> f.params[0].virtual_device_.device_type, f.body.args[0] is f.params[0]
    (1, True)
    """
    if not isinstance(function, Function):
        raise IRError(f"function_on_device takes a relay Function, got {type(function).__name__}")
    devices = list(param_devices)
    if len(devices) != len(function.params):
        raise IRError(
            f"function_on_device: {len(devices)} devices for {len(function.params)} parameters; "
            "give one device per parameter"
        )
    mapping: dict[Expr, Expr] = {}
    params = []
    for p, d in zip(function.params, devices, strict=True):
        q = p.with_fields(virtual_device_=as_virtual_device(d))
        if q is not p:
            mapping[p] = q
        params.append(q)
    body = rewrite_post_order(function.body, lambda new, old: None, memo=dict(mapping))
    return function.with_fields(
        params=params, body=body, virtual_device_=as_virtual_device(result_device)
    )
