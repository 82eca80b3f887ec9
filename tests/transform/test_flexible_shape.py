"""FlexibleShapeDispatch: one main serving several sizes of an axis, with and without
padding to the buckets; values checked against NumPy."""

from __future__ import annotations

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.ir import IRModule


def _vm(mod):
    exe = relay.vm.compile(mod, "llvm")
    return tvm.runtime.vm.VirtualMachine(exe, tvm.cpu())


def test_two_inputs_dispatch_on_axis_1():
    x, w = relay.var("x", shape=(3, 4)), relay.var("w", shape=(3, 4))
    mod = IRModule.from_expr(relay.Function([x, w], x * w + x))
    mod = relay.transform.FlexibleShapeDispatch(buckets=[4, 2], axis=1, input_indices=[0, 1])(mod)
    assert str(mod["main_2"].params[0].type_annotation) == "Tensor[(3, 2), float32]"
    vm = _vm(mod)
    rng = np.random.RandomState(0)
    for width in (2, 4, 7):  # 7: no bucket, the dynamic copy
        a, b = rng.rand(3, width).astype("float32"), rng.rand(3, width).astype("float32")
        np.testing.assert_allclose(vm.invoke("main", a, b).numpy(), a * b + a, rtol=1e-6)


def test_auto_pad_pads_to_the_next_bucket_and_cuts_back():
    x = relay.var("x", shape=(4, 3))
    # the row sums see the padding rows only through their own rows: cutting restores them
    body = relay.add(relay.exp(x), relay.const(1.0))
    mod = relay.transform.FlexibleShapeDispatch(buckets=[2, 4], auto_pad=True, pad_value=5.0)(
        IRModule.from_expr(relay.Function([x], body))
    )
    vm = _vm(mod)
    for rows in (1, 2, 3, 4, 6):
        a = np.random.RandomState(rows).rand(rows, 3).astype("float32")
        out = vm.invoke("main", a).numpy()
        assert out.shape == (rows, 3)
        np.testing.assert_allclose(out, np.exp(a) + 1.0, rtol=1e-6)
