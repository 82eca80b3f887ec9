"""nn.instance_norm and nn.group_norm against loops written here (and torch when it is
installed), their relations, and ConvertLayout moving instance_norm's axis."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import RelayTypeError

RNG = np.random.default_rng(7)


def run(expr, params, *values):
    mod = tvm.IRModule.from_expr(relay.Function(list(params), expr))
    return relay.create_executor("graph", mod=mod).evaluate()(*values).numpy()


def norm_groups(x, groups, axis, eps):
    """Normalise every (sample, group) block by explicit loops (channels on ``axis``)."""
    x = np.moveaxis(x.astype(np.float64), axis, 1)
    out = np.empty_like(x)
    per = x.shape[1] // groups
    for n, g in itertools.product(range(x.shape[0]), range(groups)):
        block = x[n, g * per : (g + 1) * per]
        m = sum(block.flat) / block.size
        v = sum((b - m) ** 2 for b in block.flat) / block.size
        out[n, g * per : (g + 1) * per] = (block - m) / np.sqrt(v + eps)
    return np.moveaxis(out, 1, axis)


@pytest.mark.parametrize(("shape", "axis"), [((2, 3, 4, 5), 1), ((2, 4, 5, 3), 3), ((3, 4, 6), 1)])
def test_instance_norm(shape, axis):
    c = shape[axis]
    xv = RNG.standard_normal(shape).astype("float32")
    gv, bv = RNG.standard_normal(c).astype("float32"), RNG.standard_normal(c).astype("float32")
    x = relay.var("x", shape=shape)
    g, b = relay.var("g", shape=(c,)), relay.var("b", shape=(c,))
    got = run(relay.nn.instance_norm(x, g, b, axis=axis, epsilon=1e-3), [x, g, b], xv, gv, bv)
    bshape = [1] * len(shape)
    bshape[axis] = c
    want = norm_groups(xv, c, axis, 1e-3) * gv.reshape(bshape) + bv.reshape(bshape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("groups", "center", "scale"), [(2, True, True), (4, False, True),
                                                         (1, True, False)])  # fmt: skip
def test_group_norm(groups, center, scale):
    xv = RNG.standard_normal((2, 4, 3, 5)).astype("float32")
    gv, bv = RNG.standard_normal(4).astype("float32"), RNG.standard_normal(4).astype("float32")
    x, g, b = relay.var("x", shape=xv.shape), relay.var("g", shape=(4,)), relay.var("b", shape=(4,))
    y = relay.nn.group_norm(x, g, b, num_groups=groups, center=center, scale=scale)
    got = run(y, [x, g, b], xv, gv, bv)
    want = norm_groups(xv, groups, 1, 1e-5)
    want = want * gv.reshape(1, 4, 1, 1) if scale else want
    want = want + bv.reshape(1, 4, 1, 1) if center else want
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    torch = pytest.importorskip("torch", reason="cross-check with torch.nn.functional")
    if center and scale:
        ref = torch.nn.functional.group_norm(
            torch.tensor(xv), groups, torch.tensor(gv), torch.tensor(bv), eps=1e-5
        )
        np.testing.assert_allclose(got, ref.numpy(), rtol=1e-4, atol=1e-5)


def test_relations_deduce_and_check_the_vectors():
    x = relay.var("x", shape=(2, 6, 4))
    g, b = relay.var("g"), relay.var("b")
    mod = relay.transform.InferType()(
        tvm.IRModule.from_expr(relay.Function([x, g, b], relay.nn.group_norm(x, g, b, 3)))
    )
    assert mod["main"].params[1].checked_type == relay.TensorType((6,), "float32")
    with pytest.raises(RelayTypeError, match="num_groups=4 must be a positive divisor"):
        relay.transform.InferType()(
            tvm.IRModule.from_expr(relay.Function([x, g, b], relay.nn.group_norm(x, g, b, 4)))
        )
    bad = relay.var("bad", shape=(5,))
    with pytest.raises(RelayTypeError, match="gamma"):
        fn = relay.Function([x, bad, b], relay.nn.instance_norm(x, bad, b))
        relay.transform.InferType()(tvm.IRModule.from_expr(fn))


def test_convert_layout_moves_the_instance_norm_axis():
    x = relay.var("x", shape=(1, 6, 6, 4))
    w = relay.var("w", shape=(3, 3, 4, 4))
    g, b = relay.var("g", shape=(4,)), relay.var("b", shape=(4,))
    y = relay.nn.conv2d(x, w, channels=4, kernel_size=3, padding=1, data_layout="NHWC",
                        kernel_layout="HWIO")  # fmt: skip
    fn = relay.Function([x, w, g, b], relay.nn.instance_norm(y, g, b, axis=3))
    mod = tvm.IRModule.from_expr(fn)
    out = relay.transform.ConvertLayout({"nn.conv2d": ["NCHW", "default"]})(mod)
    norm = out["main"].body.args[0]
    assert norm.op.name == "nn.instance_norm" and norm.attrs.axis == 1
    vals = [RNG.standard_normal(t.checked_type.concrete_shape).astype("float32")
            for t in mod["main"].params]  # fmt: skip
    a = relay.create_executor("graph", mod=mod).evaluate()(*vals).numpy()
    c = relay.create_executor("graph", mod=out).evaluate()(*vals).numpy()
    np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-5)
