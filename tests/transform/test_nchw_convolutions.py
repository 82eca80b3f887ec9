"""ConvolutionsToNCHW: NHWC convolutions (float and quantized) built for the host take the
NCHW layout of the native kernels, with weights folded, and compute what NumPy does."""

from __future__ import annotations

import numpy as np

import relaykit as tvm
from relaykit import relay
from relaykit.contrib import graph_executor
from relaykit.ir import IRModule
from relaykit.transform.nchw_convolutions import ConvolutionsToNCHW


def _conv_nhwc(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """NHWC x HWIO in float64, stride 1."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    kh, kw, _, o = w.shape
    n, h, wd, _ = x.shape
    out = np.zeros((n, h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1, o))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, i : i + out.shape[1], j : j + out.shape[2], :]
            out += patch @ w[i, j].astype(np.float64)
    return out


def _run(mod: IRModule, x: np.ndarray) -> np.ndarray:
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x)
    m.run()
    return m.get_output(0).numpy()


def test_float_nhwc_convolution_becomes_nchw_and_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 7, 6, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 5)).astype(np.float32)
    xv = relay.var("x", shape=x.shape)
    y = relay.nn.conv2d(
        xv, relay.const(w), padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO"
    )
    mod = IRModule.from_expr(relay.Function([xv], relay.nn.relu(y)))
    with tvm.transform.PassContext(opt_level=3):
        body = ConvolutionsToNCHW()(mod)["main"].body
    assert body.op.name == "layout_transform"
    conv = body.args[0].args[0]
    assert conv.attrs.data_layout == "NCHW" and isinstance(conv.args[1], relay.Constant)
    np.testing.assert_allclose(
        _run(mod, x), np.maximum(_conv_nhwc(x, w, 1), 0), rtol=1e-5, atol=1e-5
    )


def test_quantized_nhwc_convolution_matches_integer_numpy():
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (1, 6, 6, 4)).astype(np.int8)
    w = rng.integers(-127, 128, (1, 1, 4, 3)).astype(np.int8)
    xv = relay.var("x", shape=x.shape, dtype="int8")
    acc = relay.qnn.op.conv2d(
        xv, relay.const(w), relay.const(3), relay.const(0), relay.const(0.5), relay.const(0.25),
        kernel_size=(1, 1), channels=3, data_layout="NHWC", kernel_layout="HWIO",
    )  # fmt: skip
    mod = IRModule.from_expr(relay.Function([xv], acc))
    want = (x.astype(np.int64) - 3) @ w[0, 0].astype(np.int64)
    np.testing.assert_array_equal(_run(mod, x), want)


def test_functions_without_nhwc_convolutions_are_returned_as_they_are():
    xv = relay.var("x", shape=(1, 3, 4, 4))
    fn = relay.Function([xv], relay.nn.relu(xv))
    mod = IRModule.from_expr(fn)
    with tvm.transform.PassContext(opt_level=3):
        assert ConvolutionsToNCHW()(mod)["main"].body is mod["main"].body
