"""ToMixedPrecision's rules: follow operators over variables and constants, clip bounds per
mixed type, let-bound variables retyped, calls of local functions keep their signature;
results checked against NumPy float64."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.ir import IRModule
from relaykit.transform.mixed_precision import ToMixedPrecision


def _convert(expr, dtype="float16"):
    mod = relay.transform.InferType()(IRModule.from_expr(expr))
    return mod, ToMixedPrecision(dtype)(mod)


def _run(mod, **inputs):
    return relay.create_executor("debug", mod=mod).evaluate()(**inputs)


def test_follow_op_over_a_variable_and_an_integer_index_converts():
    data = relay.var("data", shape=(3, 4))
    idx = relay.add(relay.var("idx", shape=(2,), dtype="int32"), relay.const(0, "int32"))
    _, out = _convert(relay.take(data, idx, axis=0))
    assert out["main"].ret_type.dtype == "float16"
    d = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    got = _run(out, data=d, idx=np.array([2, 0], "int32")).numpy()
    np.testing.assert_allclose(got, d.astype(np.float64)[[2, 0]], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype,converted", [("float16", False), ("bfloat16", True)])
def test_clip_bounds_beyond_the_mixed_range_stay_float32(dtype, converted):
    data = relay.var("data", shape=(4,))
    _, out = _convert(relay.clip(data, a_min=-1e5, a_max=1e5), dtype)
    assert (out["main"].ret_type.dtype == dtype) is converted
    _, small = _convert(relay.clip(data, a_min=-10.0, a_max=10.0), dtype)
    assert small["main"].ret_type.dtype == dtype


def test_let_bound_variables_take_the_converted_type():
    v = relay.var("v", shape=(1, 8))
    x, w = relay.var("x", shape=(1, 8)), relay.var("w", shape=(8, 8))
    expr = relay.Let(v, relay.nn.dense(x, w), relay.add(v, v))
    _, out = _convert(expr)
    let = out["main"].body
    assert let.var.type_annotation.dtype == "float16"
    assert let.body.checked_type.dtype == "float16"
    rng = np.random.default_rng(1)
    xd, wd = (
        rng.standard_normal((1, 8)).astype("float32"),
        rng.standard_normal((8, 8)).astype("float32"),
    )
    want = 2 * (xd.astype(np.float64) @ wd.astype(np.float64).T)
    np.testing.assert_allclose(_run(out, x=xd, w=wd).numpy(), want, rtol=2e-2, atol=2e-2)


def test_calls_of_local_functions_keep_their_float32_signature():
    p = relay.var("p", shape=(2, 4))
    q = relay.var("q", shape=(4, 4))
    inner = relay.Function([p], relay.nn.dense(p, q), ret_type=relay.TensorType((2, 4)))
    x = relay.var("x", shape=(2, 4))
    y = relay.var("y", shape=(4, 4))
    outer = relay.nn.dense(x, y)
    expr = relay.Function([x, y, q], relay.Call(inner, [outer]))
    _, out = _convert(expr)
    call = out["main"].body
    assert call.args[0].checked_type.dtype == "float32"  # cast back for the call
    assert call.op.ret_type is None or call.op.ret_type.dtype == "float16"
    rng = np.random.default_rng(2)
    xd, yd, qd = (rng.standard_normal(s).astype("float32") for s in [(2, 4), (4, 4), (4, 4)])
    want = (xd.astype(np.float64) @ yd.T.astype(np.float64)) @ qd.T.astype(np.float64)
    np.testing.assert_allclose(_run(out, x=xd, y=yd, q=qd).numpy(), want, rtol=2e-2, atol=2e-2)


def test_where_takes_a_float_condition_as_nonzero():
    c = relay.var("c", shape=(4,))
    a, b = relay.var("a", shape=(4,)), relay.var("b", shape=(4,))
    mod = IRModule.from_expr(relay.Function([c, a, b], relay.where(c, a, b)))
    cd = np.array([0.0, 2.5, -1.0, 0.0], "float32")
    ad, bd = np.arange(4, dtype="float32"), -np.arange(4, dtype="float32")
    got = relay.create_executor("debug", mod=mod).evaluate()(cd, ad, bd).numpy()
    np.testing.assert_array_equal(got, [-0.0, 1.0, 2.0, -3.0])


def test_keywords_bind_every_parameter_of_that_name():
    a1, a2 = relay.var("a", shape=(2,)), relay.var("a", shape=(2,))
    mod = IRModule.from_expr(relay.Function([a1, a2], relay.subtract(a1, relay.multiply(a2, a2))))
    v = np.array([3.0, 4.0], "float32")
    got = relay.create_executor("debug", mod=mod).evaluate()(a=v).numpy()
    np.testing.assert_array_equal(got, v - v * v)
