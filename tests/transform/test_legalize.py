"""Legalize and AlterOpLayout call the per-operator hooks and substitute their results."""

from __future__ import annotations

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.testing.temp_op_attr import TempOpAttr


def _run(mod, *arrays):
    return relay.create_executor("debug", mod=mod).evaluate()(*arrays).numpy()


def test_legalize_replaces_calls_by_what_the_hook_returns():
    x = relay.var("x", shape=(2, 3))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
    seen = []

    def legalize(attrs, inputs, types):
        seen.append([str(t) for t in types])
        return relay.maximum(inputs[0], relay.const(1.0))  # a visibly different op

    with TempOpAttr("nn.relu", "FTVMLegalize", legalize):
        out = relay.transform.Legalize()(mod)
    assert seen == [["Tensor[(2, 3), float32]", "Tensor[(2, 3), float32]"]]
    assert out["main"].body.op.name == "maximum"
    data = np.array([[-1.0, 0.5, 2.0], [3.0, -4.0, 1.5]], "float32")
    np.testing.assert_array_equal(_run(out, data), np.maximum(data, 1.0))


def test_alter_op_layout_without_hooks_changes_nothing_and_with_one_substitutes():
    x = relay.var("x", shape=(1, 2, 3, 3))
    w = relay.var("w", shape=(2, 2, 1, 1))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.conv2d(x, w)))
    with tvm.transform.PassContext(opt_level=3):
        same = relay.transform.AlterOpLayout()(mod)
    assert tvm.ir.structural_equal(same["main"], mod["main"])

    def alter(attrs, inputs, tinfos, out_type):
        assert [tuple(t.shape) for t in tinfos] == [(1, 2, 3, 3), (2, 2, 1, 1)]
        assert tuple(out_type.shape) == (1, 2, 3, 3)
        return relay.nn.conv2d(inputs[0], relay.multiply(inputs[1], relay.const(-1.0)), **attrs)

    with TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", alter), tvm.transform.PassContext(3):
        out = relay.transform.AlterOpLayout()(mod)
    assert out["main"].body.args[1].op.name == "multiply"
    data = np.arange(18, dtype="float32").reshape(1, 2, 3, 3)
    weight = np.array([[1.0, 2.0], [3.0, -1.0]], "float32").reshape(2, 2, 1, 1)
    want = -np.einsum("oi,nihw->nohw", weight[:, :, 0, 0].astype("float64"), data)
    np.testing.assert_allclose(_run(out, data, weight), want, rtol=1e-6)
