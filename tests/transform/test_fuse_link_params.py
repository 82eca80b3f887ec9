"""FuseOps with the ``relay.FuseOps.link_params`` option: a constant input of a fused
group stays inside its function instead of becoming a parameter; and ``tvm.tir.const``
dimensions, as TVM scripts write shapes."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import UsageError


def take_of_concat():
    x = relay.var("x", shape=(tvm.tir.const(10, "int64"), tvm.tir.const(1, "int64")))
    cat = relay.concatenate([x, x], axis=-1)
    out = relay.take(cat, indices=relay.const(np.array([0, 3], "int64")))
    return tvm.IRModule.from_expr(relay.Function([x], out))


def fused(link):
    with tvm.transform.PassContext(opt_level=2, config={"relay.FuseOps.link_params": link}):
        mod = relay.transform.InferType()(take_of_concat())
        return relay.transform.FuseOps()(mod)


@pytest.mark.parametrize("link", [False, True])
def test_a_constant_is_a_parameter_unless_params_are_linked(link):
    call = fused(link)["main"].body
    fn = call.op
    assert int(fn.attrs["Primitive"]) == 1
    if link:
        assert len(fn.params) == 1 and len(call.args) == 1
        assert isinstance(fn.body.args[1], relay.Constant)
    else:
        assert len(fn.params) == 2 and isinstance(call.args[1], relay.Constant)
        assert fn.body.args[1] is fn.params[1]


@pytest.mark.parametrize("link", [False, True])
def test_both_forms_compute_the_same(link):
    v = np.random.default_rng(0).standard_normal((10, 1)).astype("float32")
    got = relay.create_executor("graph", mod=fused(link)).evaluate()(v).numpy()
    np.testing.assert_array_equal(got, np.concatenate([v, v], axis=-1).reshape(-1)[[0, 3]])


def test_tir_const_makes_typed_immediates():
    ten = tvm.tir.const(10, "int64")
    assert ten == 10 and ten.dtype == "int64"
    assert tvm.tir.const(3).dtype == "int32" and tvm.tir.const(True).dtype == "bool"
    half = tvm.tir.const(0.5)
    assert half == 0.5 and half.dtype == "float32"
    assert tvm.tir.const(2, "float16").dtype == "float16"
    with pytest.raises(UsageError, match="fraction"):
        tvm.tir.const(2.5, "int32")
