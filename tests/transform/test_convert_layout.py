"""ConvertLayout: layouts move, numbers stay (checked against NumPy float64)."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ArgumentError
from relaykit.ir.layout import Layout
from relaykit.transform.layout.infer import try_transform_like


def _conv_nhwc_ref(x: np.ndarray, w_hwio: np.ndarray) -> np.ndarray:
    """3x3 convolution, padding 1, NHWC data, HWIO kernel, float64."""
    n, h, wd, _c = x.shape
    kh, kw, _, o = w_hwio.shape
    xp = np.pad(x.astype("float64"), ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((n, h, wd, o))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nhwc,co->nhwo", xp[:, i : i + h, j : j + wd, :], w_hwio[i, j])
    return out


def _run(mod: tvm.IRModule, *args: np.ndarray) -> np.ndarray:
    return relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()


def _model() -> tvm.IRModule:
    x = relay.var("x", shape=(1, 6, 5, 4))
    w = relay.var("w", shape=(3, 3, 4, 8))
    b = relay.var("b", shape=(8,))
    y = relay.nn.conv2d(x, w, padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO")
    y = relay.nn.bias_add(y, b, axis=3)
    y = relay.nn.relu(y)
    y = relay.sum(y, axis=[3], keepdims=True)
    y = relay.concatenate([y, y * relay.const(2.0)], axis=3)
    return tvm.IRModule.from_expr(relay.Function([x, w, b], y))


def test_nhwc_model_in_nchw_computes_the_same() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 6, 5, 4)).astype("float32")
    w = rng.standard_normal((3, 3, 4, 8)).astype("float32")
    b = rng.standard_normal(8).astype("float32")
    mod = _model()
    with relay.transform.PassContext(opt_level=3):
        out = relay.transform.ConvertLayout({"nn.conv2d": ["NCHW", "default"]})(mod)
    text = str(out)
    assert 'data_layout="NHWC"' not in text  # the convolution moved to NCHW
    conv = (
        [
            n
            for n in relay.analysis.post_order_list(out["main"].body)
            if getattr(getattr(n, "op", None), "name", "") == "nn.conv2d"
        ]
        if hasattr(relay.analysis, "post_order_list")
        else []
    )
    for c in conv:
        assert c.attrs.data_layout == "NCHW" and c.attrs.kernel_layout == "OIHW"
    ref = np.maximum(_conv_nhwc_ref(x, w) + b, 0).sum(axis=3, keepdims=True)
    ref = np.concatenate([ref, ref * 2], axis=3)
    np.testing.assert_allclose(_run(out, x, w, b), ref, rtol=1e-4, atol=1e-4)


def test_reduction_follows_the_new_layout() -> None:
    x = relay.var("x", shape=(1, 4, 4, 3))
    w = relay.var("w", shape=(3, 3, 3, 2))
    y = relay.nn.conv2d(x, w, padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO")
    y = relay.mean(y, axis=[1, 2])
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    with relay.transform.PassContext(opt_level=3):
        out = relay.transform.ConvertLayout({"nn.conv2d": ["NCHW", "default"]})(mod)
    body = out["main"].body
    assert body.op.name == "mean" and list(body.attrs.axis) == [2, 3]
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((1, 4, 4, 3)).astype("float32")
    wv = rng.standard_normal((3, 3, 3, 2)).astype("float32")
    ref = _conv_nhwc_ref(xv, wv).mean(axis=(1, 2))
    np.testing.assert_allclose(_run(out, xv, wv), ref, rtol=1e-4, atol=1e-4)


def test_default_data_layout_is_rejected() -> None:
    x = relay.var("x", shape=(1, 4, 4, 3))
    w = relay.var("w", shape=(3, 3, 3, 2))
    y = relay.nn.conv2d(x, w, data_layout="NHWC", kernel_layout="HWIO")
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    with (
        pytest.raises(ArgumentError, match="cannot be 'default'"),
        relay.transform.PassContext(opt_level=3),
    ):
        relay.transform.ConvertLayout({"nn.conv2d": ["default", "default"]})(mod)


def test_broadcast_operand_layout_follows_the_larger_one() -> None:
    assert try_transform_like(Layout("C"), Layout("NHWC"), Layout("NCHW")).name == "NCHW"
    assert try_transform_like(Layout("HW"), Layout("NCHW"), Layout("NHWC")).name == "NHWC"
    # a blocked operand does not line up with a plain one
    assert not try_transform_like(Layout("NCHW16c"), Layout("NCHW"), Layout("NHWC")).defined


def test_blocked_layout_computes_the_same() -> None:
    rng = np.random.default_rng(2)
    x = relay.var("x", shape=(1, 6, 5, 8))
    w = relay.var("w", shape=(3, 3, 8, 8))
    b = relay.var("b", shape=(8,))
    y = relay.nn.conv2d(x, w, padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO")
    y = relay.nn.relu(relay.nn.bias_add(y, b, axis=3))
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), layout="NHWC")
    mod = tvm.IRModule.from_expr(relay.Function([x, w, b], y))
    with relay.transform.PassContext(opt_level=3):
        out = relay.transform.ConvertLayout({"nn.conv2d": ["NCHW4c", "OIHW4i4o"]})(mod)
    text = str(out)
    assert "nn.contrib_conv2d_NCHWc" in text and 'layout="NCHW4c"' in text
    xv = rng.standard_normal((1, 6, 5, 8)).astype("float32")
    wv = rng.standard_normal((3, 3, 8, 8)).astype("float32")
    bv = rng.standard_normal(8).astype("float32")
    conv = np.maximum(_conv_nhwc_ref(xv, wv) + bv, 0)
    # 2x2 windows, stride 1
    ref = np.maximum.reduce([conv[:, i : i + 5, j : j + 4, :] for i in (0, 1) for j in (0, 1)])
    np.testing.assert_allclose(_run(out, xv, wv, bv), ref, rtol=1e-4, atol=1e-4)
