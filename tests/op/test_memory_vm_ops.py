"""The memory dialect (memory.alloc_storage, alloc_tensor, kill) and the VM shape
operators (vm.shape_of, vm.reshape_tensor): types, text and kernels."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import RelayTypeError
from relaykit.op import memory, vm


def _core_module(text, meta=None):
    core = tvm.IRModule()
    core.import_from_std("core.rly")
    return tvm.relay.parse(text, "from_string", core, meta)


def test_storage_and_tensor_allocation_type_check_with_core_rly():
    shape = relay.const(np.array([3, 2]), "int64")
    mod = _core_module(
        """
        def @main(%size: int64, %alignment: int64) {
          let %s = memory.alloc_storage(%size, meta[relay.Constant][0], %alignment);
          let %t = memory.alloc_tensor(%s, 0i64, meta[relay.Constant][0],
                                       const_shape=meta[relay.Constant][0], assert_shape=[]);
          let %k = memory.kill(%s);
          %t
        }""",
        {"relay.Constant": [shape]},
    )
    mod = relay.transform.InferType()(mod)
    assert str(mod["main"].checked_type.ret_type) == "Tensor[(3, 2), float32]"
    assert str(mod["main"].body.var.checked_type) in ("Storage[]", "Storage")
    assert mod["main"].body.value.attrs.virtual_device.is_fully_unconstrained
    assert relay.op.get("memory.kill").get_attr("TOpIsStateful")


def test_alloc_storage_checks_its_scalars():
    size = relay.var("size", shape=(2,), dtype="int64")
    call = memory.alloc_storage(size, relay.const([1], "int64"), relay.const(8, "int64"))
    with pytest.raises(RelayTypeError, match="the size must be an int64 scalar"):
        relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([size], call)))


def test_vm_shape_of_and_reshape_tensor_compute_shapes():
    x = relay.var("x", shape=(2, 6))
    shape = relay.const(np.array([3, 4]), "int64")
    f = relay.Function([x], relay.Tuple([vm.shape_of(x), vm.reshape_tensor(x, shape, [3, 4])]))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    assert str(mod["main"].checked_type.ret_type) == (
        "(Tensor[(2), int64], Tensor[(3, 4), float32])"
    )
    data = np.arange(12, dtype="float32").reshape(2, 6)
    got = relay.create_executor("debug", mod=mod).evaluate()(data)
    np.testing.assert_array_equal(got[0].numpy(), np.array([2, 6], dtype=np.int64))
    np.testing.assert_array_equal(got[1].numpy(), data.reshape(3, 4))
