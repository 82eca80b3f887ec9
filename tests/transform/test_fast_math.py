"""FastMath rewrites to the fast forms (same values here); relay.optimize runs it on request."""

from __future__ import annotations

import numpy as np
from scipy import special

import relaykit as tvm
from relaykit import relay
from relaykit.ir import IRModule
from relaykit.testing import count_ops
from relaykit.transform import FastMath


def test_fast_forms_replace_and_compute_the_same_values():
    x = relay.var("x", shape=(2, 5))
    body = relay.Tuple([relay.exp(x), relay.tanh(x), relay.erf(x), relay.nn.softmax(x)])
    mod = FastMath()(IRModule.from_expr(relay.Function([x], body)))
    ops = count_ops(mod["main"])
    assert ops["fast_exp"] == ops["fast_tanh"] == ops["fast_erf"] == ops["nn.fast_softmax"] == 1
    assert ops["exp"] == ops["tanh"] == ops["erf"] == ops["nn.softmax"] == 0
    xd = np.linspace(-3, 3, 10).reshape(2, 5).astype("float32")
    e, t, f, s = relay.create_executor("debug", mod=mod).evaluate()(xd)
    np.testing.assert_allclose(e.numpy(), np.exp(xd), rtol=1e-6)
    np.testing.assert_allclose(t.numpy(), np.tanh(xd), rtol=1e-6)
    np.testing.assert_allclose(f.numpy(), special.erf(xd), rtol=1e-6, atol=1e-7)
    want = np.exp(xd) / np.exp(xd).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(s.numpy(), want, rtol=1e-6)


def test_optimize_runs_fast_math_only_when_asked():
    x = relay.var("x", shape=(3,))
    mod = IRModule.from_expr(relay.Function([x], relay.exp(x)))
    plain, _ = relay.optimize(mod, target="llvm")
    assert count_ops(plain["main"])["exp"] == 1
    with tvm.transform.PassContext(opt_level=3, required_pass=["FastMath"]):
        fast, params = relay.optimize(mod, target="llvm", params=None)
    assert count_ops(fast["main"])["fast_exp"] == 1 and params == {}
