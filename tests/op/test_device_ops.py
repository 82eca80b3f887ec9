"""on_device / device_copy: placement records on identities (relay.annotation.on_device,
relay.op.device_copy)."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.target import VirtualDevice


def test_on_device_constraints_and_devices():
    x = relay.var("x", shape=(2,))
    fixed = relay.annotation.on_device(x, tvm.device("cuda", 1), constrain_result=True)
    vd = fixed.attrs.virtual_device
    assert (vd.device_type_int, vd.virtual_device_id, vd.memory_scope) == (2, 1, "")
    assert fixed.attrs.constrain_body and fixed.attrs.constrain_result
    free = relay.annotation.on_device(x, "opencl", constrain_body=False)
    assert free.attrs.virtual_device.device_type_int == -1
    given = VirtualDevice(tvm.cpu(), "llvm")
    assert relay.annotation.on_device(x, given).attrs.virtual_device is given
    with pytest.raises(ValueError, match="unknown device type"):
        relay.annotation.on_device(x, "bogus")


def test_placement_markers_keep_values_and_types():
    x = relay.var("x", shape=(3,))
    body = relay.op.device_copy(relay.annotation.on_device(x * x, "cpu"), "cpu", tvm.cpu())
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    mod = relay.transform.InferType()(mod)
    assert str(mod["main"].checked_type.ret_type) == "Tensor[(3), float32]"
    xd = np.array([1.0, -2.0, 3.0], "float32")
    for kind in ("debug", "vm", "graph"):
        out = relay.create_executor(kind, mod=mod).evaluate()(xd)
        np.testing.assert_array_equal(out.numpy(), xd * xd)


def test_a_placed_function_value_takes_its_type_from_its_use():
    # the if's functions have untyped parameters: only the call %h(%z) says what they are
    mod = tvm.relay.parse(
        """
        #[version = "0.0.5"]
        def @main(%c: bool, %y: Tensor[(2), float32], %z: Tensor[(2), float32]) {
          let %f = fn (%a) { add(%a, %y) };
          let %g = fn (%b) { subtract(%b, %y) };
          let %h = on_device(if (%c) { %f } else { %g }, virtual_device=meta[VirtualDevice][0]);
          %h(%z)
        }""",
        "from_string",
        None,
        {"VirtualDevice": [VirtualDevice(tvm.cpu())]},
    )
    assert str(mod["main"].body.var.checked_type) == (
        "fn (Tensor[(2), float32]) -> Tensor[(2), float32]"
    )
    y = np.array([1.0, 2.0], "float32")
    z = np.array([5.0, 7.0], "float32")
    run = relay.create_executor("debug", mod=mod).evaluate()
    np.testing.assert_array_equal(run(np.bool_(True), y, z).numpy(), z.astype("float64") + y)
    np.testing.assert_array_equal(run(np.bool_(False), y, z).numpy(), z.astype("float64") - y)
