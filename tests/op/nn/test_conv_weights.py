"""The weight of a convolution as TVM's relations see it: deduced for an unannotated
weight from channels= and kernel_size=, TVM's depthwise weight with a channel multiplier
(``(C, M, *K)``), mixed dtypes, and a transposed convolution's output padding beyond the
stride. Numbers are checked against loops written here."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.contrib import graph_executor
from relaykit.errors import RelayTypeError


def infer(expr, *params):
    mod = tvm.IRModule.from_expr(relay.Function(list(params), expr))
    return relay.transform.InferType()(mod)["main"]


def run(expr, params, *values, target="graph"):
    mod = tvm.IRModule.from_expr(relay.Function(list(params), expr))
    return relay.create_executor(target, mod=mod).evaluate()(*values).numpy()


@pytest.mark.parametrize(
    ("make", "dshape", "kwargs", "wshape", "oshape"),
    [
        (relay.nn.conv1d, (2, 10, 20), {"channels": 4, "kernel_size": 3}, (4, 10, 3), (2, 4, 18)),
        (relay.nn.conv1d, (2, 20, 10), {"channels": 4, "kernel_size": 3, "data_layout": "NWC",
                                        "kernel_layout": "WIO"}, (3, 10, 4), (2, 18, 4)),
        (relay.nn.conv1d, (1, 6, 9), {"channels": 4, "kernel_size": 3, "groups": 2},
         (4, 3, 3), (1, 4, 7)),
        (relay.nn.conv2d, (1, 8, 9, 9), {"channels": 4, "kernel_size": (3, 1), "groups": 4},
         (4, 2, 3, 1), (1, 4, 7, 9)),
        (relay.nn.conv3d, (1, 3, 5, 6, 7), {"channels": 2, "kernel_size": 3, "padding": 1},
         (2, 3, 3, 3, 3), (1, 2, 5, 6, 7)),
        (relay.nn.conv1d_transpose, (1, 3, 8), {"channels": 4, "kernel_size": 3},
         (3, 4, 3), (1, 4, 10)),
        (relay.nn.conv2d_transpose, (1, 4, 5, 5), {"channels": 6, "kernel_size": 3, "groups": 2},
         (4, 3, 3, 3), (1, 6, 7, 7)),
        (relay.nn.conv3d_transpose, (1, 3, 4, 4, 4),
         {"channels": 2, "kernel_size": 2, "strides": 2}, (3, 2, 2, 2, 2), (1, 2, 8, 8, 8)),
    ],
)  # fmt: skip
def test_an_unannotated_weight_is_deduced_from_channels_and_kernel_size(
    make, dshape, kwargs, wshape, oshape
):
    x = relay.var("x", shape=dshape, dtype="int8")
    w = relay.var("w")
    fn = infer(make(x, w, **kwargs), x, w)
    assert fn.params[1].checked_type == relay.TensorType(wshape, "int8")
    assert fn.ret_type == relay.TensorType(oshape, "int8")


def test_an_unannotated_weight_without_channels_is_reported():
    x, w = relay.var("x", shape=(1, 3, 5, 5, 5)), relay.var("w")
    with pytest.raises(RelayTypeError, match="channels= and kernel_size="):
        infer(relay.nn.conv3d(x, w, kernel_size=3), x, w)


def test_the_deduced_weight_runs():
    rng = np.random.default_rng(0)
    x, w = relay.var("x", shape=(2, 3, 9)), relay.var("w")
    xv = rng.standard_normal((2, 3, 9)).astype("float32")
    wv = rng.standard_normal((5, 3, 2)).astype("float32")
    got = run(relay.nn.conv1d(x, w, channels=5, kernel_size=2, strides=2), [x, w], xv, wv)
    want = np.zeros((2, 5, 4))
    for b, o, t in itertools.product(range(2), range(5), range(4)):
        want[b, o, t] = np.sum(xv[b, :, 2 * t : 2 * t + 2].astype(np.float64) * wv[o])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def depthwise_reference(x, w, mult):
    """Channel c*M + m of the result: channel c of x with w[c, m] (stride 1, no padding)."""
    c, k = x.shape[1], w.shape[2:]
    out_sp = tuple(s - kk + 1 for s, kk in zip(x.shape[2:], k, strict=True))
    out = np.zeros((x.shape[0], c * mult, *out_sp))
    for ch, m in itertools.product(range(c), range(mult)):
        for pos in itertools.product(*(range(s) for s in out_sp)):
            win = (slice(None), ch, *(slice(p, p + kk) for p, kk in zip(pos, k, strict=True)))
            out[(slice(None), ch * mult + m, *pos)] = np.sum(
                x[win].astype(np.float64) * w[ch, m], axis=tuple(range(1, 1 + len(k)))
            )
    return out


@pytest.mark.parametrize("target", ["graph", "debug"])
@pytest.mark.parametrize("dims", [2, 3])
def test_depthwise_weight_with_a_channel_multiplier(dims, target):
    rng = np.random.default_rng(1)
    c, mult = 4, 3
    dshape, wshape = (2, c, *(6,) * dims), (c, mult, *(3,) * dims)
    x, w = relay.var("x", shape=dshape), relay.var("w", shape=wshape)
    conv = relay.nn.conv2d if dims == 2 else relay.nn.conv3d
    y = conv(x, w, groups=c, channels=c * mult, kernel_size=(3,) * dims)
    assert infer(y, x, w).ret_type == relay.TensorType((2, c * mult, *(4,) * dims), "float32")
    xv = rng.standard_normal(dshape).astype("float32")
    wv = rng.standard_normal(wshape).astype("float32")
    got = run(y, [x, w], xv, wv, target=target)
    np.testing.assert_allclose(got, depthwise_reference(xv, wv, mult), rtol=1e-5, atol=1e-5)


def test_a_multiplier_weight_needs_channels():
    x, w = relay.var("x", shape=(1, 4, 6, 6)), relay.var("w", shape=(4, 2, 3, 3))
    with pytest.raises(RelayTypeError, match="input channels"):
        infer(relay.nn.conv2d(x, w, groups=4), x, w)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_quantized_depthwise_with_a_channel_multiplier(layout):
    rng = np.random.default_rng(2)
    c, mult = 4, 2
    xv = rng.integers(0, 255, (2, c, 7, 7)).astype("uint8")
    wv = rng.integers(0, 255, (c, mult, 3, 3)).astype("uint8")
    kzp = rng.integers(0, 10, c).astype("int32")  # one per input channel, as TVM
    kernel_layout = "OIHW" if layout == "NCHW" else "HWOI"
    xa = xv if layout == "NCHW" else xv.transpose(0, 2, 3, 1)
    wa = wv if layout == "NCHW" else wv.transpose(2, 3, 0, 1)
    x = relay.var("x", shape=xa.shape, dtype="uint8")
    w = relay.var("w", shape=wa.shape, dtype="uint8")
    y = relay.qnn.op.conv2d(
        x, w, relay.const(3), relay.const(kzp), relay.const(1.0), relay.const(1.0),
        kernel_size=(3, 3), channels=c * mult, groups=c, data_layout=layout,
        kernel_layout=kernel_layout,
    )  # fmt: skip
    got = run(y, [x, w], xa, wa)
    shifted_w = wv.astype(np.int64) - kzp.reshape(-1, 1, 1, 1)
    want = depthwise_reference(xv.astype(np.int64) - 3, shifted_w, mult)
    want = want if layout == "NCHW" else want.transpose(0, 2, 3, 1)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_quantized_depthwise_weight_far_from_its_zero_point_built_with_params():
    # uint8 taps minus their zero point do not fit int8, so setting the weight again
    # after the executor was made rebinds the host's other depthwise kernel
    rng = np.random.default_rng(3)
    xv = rng.integers(0, 255, (2, 4, 16, 16)).astype("uint8")
    wv = rng.integers(200, 255, (4, 1, 3, 3)).astype("uint8")
    x = relay.var("x", shape=xv.shape, dtype="uint8")
    w = relay.var("w", shape=wv.shape, dtype="uint8")
    y = relay.qnn.op.conv2d(
        x, w, relay.const(4), relay.const(np.arange(4, dtype="int32")), relay.const(1.0),
        relay.const(1.0), kernel_size=(3, 3), channels=4, groups=4,
    )  # fmt: skip
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    with tvm.transform.PassContext(opt_level=2):
        graph, lib, params = relay.build(mod, "llvm", params={"w": wv})
    gm = graph_executor.create(graph, lib, tvm.cpu())
    gm.set_input("x", xv)
    gm.set_input(**params)
    gm.run()
    shifted_w = wv.astype(np.int64) - np.arange(4).reshape(-1, 1, 1, 1)
    want = depthwise_reference(xv.astype(np.int64) - 4, shifted_w, 1)
    np.testing.assert_array_equal(gm.get_output(0).numpy(), want)


def test_mixed_dtype_convolution_with_out_dtype():
    rng = np.random.default_rng(4)
    xv = rng.integers(0, 255, (1, 3, 5)).astype("uint8")
    wv = rng.integers(-128, 127, (2, 3, 2)).astype("int8")
    x = relay.var("x", shape=xv.shape, dtype="uint8")
    w = relay.var("w", shape=wv.shape, dtype="int8")
    got = run(relay.nn.conv1d(x, w, out_dtype="int32"), [x, w], xv, wv)
    want = np.zeros((1, 2, 4), np.int64)
    for o, t in itertools.product(range(2), range(4)):
        want[0, o, t] = np.sum(xv[0, :, t : t + 2].astype(np.int64) * wv[o])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_transposed_output_padding_beyond_the_stride_adds_zeros():
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((1, 2, 4, 4)).astype("float32")
    wv = rng.standard_normal((2, 3, 3, 3)).astype("float32")
    x, w = relay.var("x", shape=xv.shape), relay.var("w", shape=wv.shape)
    y = relay.nn.conv2d_transpose(x, w, channels=3, kernel_size=3, output_padding=(2, 1))
    got = run(y, [x, w], xv, wv)
    want = np.zeros((1, 3, 8, 7))
    for c, i, j, o, a, e in itertools.product(*map(range, (2, 4, 4, 3, 3, 3))):
        want[0, o, i + a, j + e] += float(xv[0, c, i, j]) * float(wv[c, o, a, e])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
