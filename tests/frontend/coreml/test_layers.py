"""Core ML layers, one NeuralNetworkBuilder model each, against NumPy float64."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import check, network, run_coreml
from .numpy_ref import (
    bilinear_align_corners,
    conv2d,
    deconv2d,
    lrn,
    pool2d,
    same_pads,
    softmax,
)

SHAPE = (4, 7, 6)


def _x(rng: np.random.Generator, shape=SHAPE) -> np.ndarray:
    return rng.standard_normal((1, *shape)).astype(np.float32)


def _one_layer(add, shape=SHAPE, out="out"):
    return network([("data", shape)], [out], add)


@pytest.mark.parametrize(
    ("groups", "out_ch", "stride", "dilation", "border"),
    [
        (1, 5, (1, 1), (1, 1), "valid"),
        (1, 6, (2, 2), (1, 1), "same"),
        (2, 6, (1, 2), (1, 1), "same"),
        (4, 4, (1, 1), (2, 2), "valid"),  # depthwise, dilated
        (4, 8, (2, 1), (1, 1), "same"),  # depthwise with a channel multiplier
    ],
)
def test_convolution(rng, groups, out_ch, stride, dilation, border):
    c, h, w = SHAPE
    weight = rng.standard_normal((out_ch, c // groups, 3, 2)).astype(np.float32)
    bias = rng.standard_normal(out_ch).astype(np.float32)

    def add(b):
        b.add_convolution(
            "conv", c // groups, out_ch, 3, 2, stride[0], stride[1], border, groups,
            weight.transpose(2, 3, 1, 0), bias, True, input_name="data", output_name="out",
            dilation_factors=list(dilation),
        )  # fmt: skip

    x = _x(rng)
    if border == "same":
        eff = [d * (k - 1) + 1 for d, k in zip(dilation, (3, 2), strict=True)]
        pads = (*same_pads(h, eff[0], stride[0]), *same_pads(w, eff[1], stride[1]))
    else:
        pads = (0, 0, 0, 0)
    want = conv2d(x, weight, bias, stride, pads, dilation, groups)
    check(_one_layer(add), {"data": x}, want)


def test_convolution_explicit_padding(rng):
    c = SHAPE[0]
    weight = rng.standard_normal((3, c, 3, 3)).astype(np.float32)

    def add(b):
        b.add_convolution(
            "conv", c, 3, 3, 3, 1, 1, "valid", 1, weight.transpose(2, 3, 1, 0), None, False,
            input_name="data", output_name="out", padding_top=1, padding_bottom=2,
            padding_left=0, padding_right=1,
        )  # fmt: skip

    x = _x(rng)
    check(_one_layer(add), {"data": x}, conv2d(x, weight, None, (1, 1), (1, 2, 0, 1)))


@pytest.mark.parametrize("groups", [1, 2])
def test_deconvolution(rng, groups):
    c, _h, _w = SHAPE
    out_ch = 6
    weight = rng.standard_normal((c, out_ch // groups, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(out_ch).astype(np.float32)

    def add(b):
        b.add_convolution(
            "deconv", c, out_ch, 3, 3, 2, 2, "valid", groups, weight.transpose(2, 3, 0, 1),
            bias, True, is_deconv=True, input_name="data", output_name="out",
        )  # fmt: skip

    x = _x(rng)
    check(_one_layer(add), {"data": x}, deconv2d(x, weight, bias, (2, 2), groups))


@pytest.mark.parametrize(
    ("kind", "padding", "exclude"),
    [("MAX", "VALID", True), ("MAX", "SAME", True), ("AVERAGE", "SAME", True),
     ("AVERAGE", "SAME", False), ("AVERAGE", "VALID", True)],
)  # fmt: skip
def test_pooling(rng, kind, padding, exclude):
    _, h, w = SHAPE

    def add(b):
        b.add_pooling("pool", 3, 2, 2, 2, kind, padding, "data", "out", exclude_pad_area=exclude)

    x = _x(rng)
    pads = (*same_pads(h, 3, 2), *same_pads(w, 2, 2)) if padding == "SAME" else (0, 0, 0, 0)
    want = pool2d(x, "max" if kind == "MAX" else "avg", (3, 2), (2, 2), pads, exclude)
    check(_one_layer(add), {"data": x}, want)


@pytest.mark.parametrize("kind", ["MAX", "AVERAGE"])
def test_global_pooling(rng, kind):
    def add(b):
        b.add_pooling("pool", 1, 1, 1, 1, kind, "VALID", "data", "out", is_global=True)

    x = _x(rng)
    want = x.max(axis=(2, 3), keepdims=True) if kind == "MAX" else x.mean((2, 3), keepdims=True)
    check(_one_layer(add), {"data": x}, want.astype(np.float64))


def _activations(x: np.ndarray, rng: np.random.Generator):
    c = x.shape[1]
    alpha_c = rng.uniform(0.1, 0.9, c).astype(np.float32)
    beta_c = rng.uniform(0.5, 1.5, c).astype(np.float32)
    xd = x.astype(np.float64)
    a, bc = alpha_c.reshape(1, -1, 1, 1), beta_c.reshape(1, -1, 1, 1)
    return [
        ("RELU", None, np.maximum(xd, 0)),
        ("LEAKYRELU", [0.2], np.where(xd > 0, xd, 0.2 * xd)),
        ("TANH", None, np.tanh(xd)),
        ("SIGMOID", None, 1 / (1 + np.exp(-xd))),
        ("SCALED_TANH", [1.5, 0.7], 1.5 * np.tanh(0.7 * xd)),
        ("SIGMOID_HARD", [0.3, 0.4], np.clip(0.3 * xd + 0.4, 0, 1)),
        ("ELU", 0.8, np.where(xd > 0, xd, 0.8 * (np.exp(xd) - 1))),
        ("SOFTSIGN", None, xd / (1 + np.abs(xd))),
        ("SOFTPLUS", None, np.log1p(np.exp(xd))),
        ("PARAMETRICSOFTPLUS", [alpha_c, beta_c], a * np.log1p(np.exp(bc * xd))),
        ("LINEAR", [2.0, -0.5], 2.0 * xd - 0.5),
        ("THRESHOLDEDRELU", 0.3, np.where(xd > 0.3, xd, 0.0)),
        ("PRELU", alpha_c, np.where(xd > 0, xd, a * xd)),
    ]


@pytest.mark.parametrize("index", range(13))
def test_activation(rng, index):
    x = _x(rng) * 2
    name, params, want = _activations(x, rng)[index]

    def add(b):
        b.add_activation("act", name, "data", "out", params=params)

    check(_one_layer(add), {"data": x}, want)


@pytest.mark.parametrize("mode", ["stored", "instance"])
def test_batchnorm(rng, mode):
    c = SHAPE[0]
    gamma, beta = rng.standard_normal(c), rng.standard_normal(c)
    mean, var = rng.standard_normal(c), rng.uniform(0.5, 2, c)
    x = _x(rng).astype(np.float64)

    def add(b):
        b.add_batchnorm(
            "bn", c, gamma.astype(np.float32), beta.astype(np.float32),
            mean.astype(np.float32), var.astype(np.float32), "data", "out",
            compute_mean_var=mode == "instance", instance_normalization=mode == "instance",
            epsilon=1e-3,
        )  # fmt: skip

    shape = (1, c, 1, 1)
    if mode == "instance":
        mean_x, var_x = x.mean((2, 3), keepdims=True), x.var((2, 3), keepdims=True)
    else:
        mean_x, var_x = mean.reshape(shape), var.reshape(shape)
    want = (x - mean_x) / np.sqrt(var_x + 1e-3) * gamma.reshape(shape) + beta.reshape(shape)
    check(_one_layer(add), {"data": x}, want)


def test_inner_product_softmax_flatten(rng):
    c, h, w = SHAPE
    weight = rng.standard_normal((10, c * h * w)).astype(np.float32)
    bias = rng.standard_normal(10).astype(np.float32)

    def add(b):
        b.add_flatten("flat", 1, "data", "flat")  # channel last
        b.add_inner_product("fc", weight, bias, c * h * w, 10, True, "flat", "fc")
        b.add_softmax("sm", "fc", "out")

    x = _x(rng)
    flat = x.transpose(0, 2, 3, 1).reshape(1, -1).astype(np.float64)
    check(_one_layer(add), {"data": x}, softmax(flat @ weight.T + bias))


def test_reshape_permute(rng):
    c, h, w = SHAPE

    def add(b):
        b.add_reshape("r1", "data", "r1", (h, c, w), 0)
        b.add_permute("p", (0, 3, 1, 2), "r1", "p")  # [Seq, C, H, W] -> [Seq, W, C, H]
        b.add_reshape("r2", "p", "out", (c * h, w, 1), 1)

    x = _x(rng)
    r1 = x.reshape(1, h, c, w)
    p = r1.transpose(0, 3, 1, 2)
    # channel last: flatten as H, W, C, read as [H_out, W_out, C_out], back to C, H, W
    want = p.transpose(0, 2, 3, 1).reshape(1, w, 1, c * h).transpose(0, 3, 1, 2)
    check(_one_layer(add), {"data": x}, want.astype(np.float64))


@pytest.mark.parametrize(
    ("mode", "fn"),
    [
        ("ADD", lambda a, b: a + b),
        ("MULTIPLY", lambda a, b: a * b),
        ("AVE", lambda a, b: (a + b) / 2),
        ("MAX", np.maximum),
        ("MIN", np.minimum),
        ("CONCAT", lambda a, b: np.concatenate([a, b], axis=1)),
        ("DOT", lambda a, b: (a * b).sum(1, keepdims=True)),
        ("COS", lambda a, b: (a * b).sum(1, keepdims=True)
         / np.sqrt((a * a).sum(1, keepdims=True) * (b * b).sum(1, keepdims=True))),
    ],
)  # fmt: skip
def test_elementwise(rng, mode, fn):
    def add(b):
        b.add_elementwise("e", ["a", "b"], "out", mode)

    a, b = _x(rng), _x(rng)
    builder = network([("a", SHAPE), ("b", SHAPE)], ["out"], add)
    check(builder, {"a": a, "b": b}, fn(a.astype(np.float64), b.astype(np.float64)))


@pytest.mark.parametrize(("mode", "alpha"), [("ADD", 1.5), ("MULTIPLY", -2.0)])
def test_elementwise_one_input(rng, mode, alpha):
    def add(b):
        b.add_elementwise("e", ["data"], "out", mode, alpha=alpha)

    x = _x(rng)
    want = x + alpha if mode == "ADD" else x * alpha
    check(_one_layer(add), {"data": x}, want.astype(np.float64))


@pytest.mark.parametrize(
    ("kind", "mode"), [("constant", "constant"), ("reflection", "reflect"), ("replication", "edge")]
)
def test_padding(rng, kind, mode):
    def add(b):
        b.add_padding("pad", 1, 2, 2, 0, value=0.5, input_name="data", output_name="out",
                      padding_type=kind)  # fmt: skip

    x = _x(rng)
    pads = ((0, 0), (0, 0), (2, 0), (1, 2))
    kwargs = {"constant_values": 0.5} if mode == "constant" else {}
    check(_one_layer(add), {"data": x}, np.pad(x, pads, mode=mode, **kwargs).astype(np.float64))


def test_upsample_nearest_and_bilinear(rng):
    def add(b):
        b.add_upsample("nn", 2, 3, "data", "up")
        b.add_upsample("bl", 2, 2, "data", "bl", mode="BILINEAR",
                       linear_upsample_mode="ALIGN_CORNERS_TRUE")  # fmt: skip

    x = _x(rng)
    builder = network([("data", SHAPE)], ["up", "bl"], add)
    nearest = x.repeat(2, axis=2).repeat(3, axis=3).astype(np.float64)
    bilinear = bilinear_align_corners(x.astype(np.float64), 14, 12)
    check(builder, {"data": x}, [nearest, bilinear])


def test_upsample_bilinear_default_is_asymmetric(rng):
    def add(b):
        b.add_upsample("bl", 2, 2, "data", "out", mode="BILINEAR")

    x = _x(rng).astype(np.float64)
    h, w = SHAPE[1:]
    # DEFAULT: grid point i / 2, clamped to the last pixel
    ys, xs = np.minimum(np.arange(2 * h) / 2, h - 1), np.minimum(np.arange(2 * w) / 2, w - 1)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    rows = x[:, :, y0] * (1 - fy[None, None]) + x[:, :, y1] * fy[None, None]
    want = rows[..., x0] * (1 - fx) + rows[..., x1] * fx
    check(_one_layer(add), {"data": x}, want)


def test_l2normalize_lrn_split(rng):
    def add(b):
        b.add_l2_normalize("l2", "data", "l2", epsilon=1e-6)
        b.add_lrn("lrn", "data", "lrn", alpha=1e-2, beta=0.75, local_size=3, k=2.0)
        b.add_split("split", "data", ["s0", "s1"])

    x = _x(rng).astype(np.float64)
    builder = network([("data", SHAPE)], ["l2", "lrn", "s0", "s1"], add)
    l2 = x / np.sqrt((x * x).sum(axis=(1, 2, 3), keepdims=True) + 1e-6)
    check(builder, {"data": x}, [l2, lrn(x, 3, 1e-2, 0.75, 2.0), x[:, :2], x[:, 2:]])


def test_embedding(rng):
    table = rng.standard_normal((5, 10)).astype(np.float32)  # [out channels, vocabulary]
    bias = rng.standard_normal(5).astype(np.float32)

    def add(b):
        b.add_embedding("emb", table, bias, 10, 5, True, "data", "out")

    builder = network([("data", (1, 1, 1))], ["out"], add)
    idx = np.array([[[[7.0]]], [[[2.0]]]], dtype=np.float32)
    want = (table[:, [7, 2]].T + bias).reshape(2, 5, 1, 1).astype(np.float64)
    out = run_coreml(builder.spec, {"data": idx}, shape={"data": (2, 1, 1, 1)})
    np.testing.assert_allclose(out[0], want, rtol=1e-5)


def test_crop_one_and_two_inputs(rng):
    def add(b):
        b.add_crop("c1", 1, 2, 2, 1, [0, 0], ["data"], "c1")
        b.add_crop("c2", 0, 0, 0, 0, [1, 2], ["data", "ref"], "c2")

    x, ref = _x(rng), _x(rng, (4, 3, 2))
    builder = network([("data", SHAPE), ("ref", (4, 3, 2))], ["c1", "c2"], add)
    want = [x[:, :, 2:-1, 1:-2], x[:, :, 1:4, 2:4]]
    check(builder, {"data": x, "ref": ref}, [w.astype(np.float64) for w in want])


def test_scale_and_bias(rng):
    c, h, w = SHAPE
    scale = rng.standard_normal(c).astype(np.float32)
    bias_hw = rng.standard_normal((c, h, w)).astype(np.float32)
    bias = rng.standard_normal(1).astype(np.float32)

    def add(b):
        b.add_scale("s", scale, bias_hw, True, "data", "s", shape_scale=[c], shape_bias=[c, h, w])
        b.add_bias("b", bias, "s", "out", shape_bias=[1])

    x = _x(rng).astype(np.float64)
    check(_one_layer(add), {"data": x}, x * scale.reshape(1, c, 1, 1) + bias_hw + bias[0])


@pytest.mark.parametrize(
    ("mode", "alpha", "fn"),
    [
        ("sqrt", 1.0, np.sqrt),
        ("rsqrt", 1.0, lambda v: 1 / np.sqrt(v + 1e-6)),
        ("inverse", 1.0, lambda v: 1 / (v + 1e-6)),
        ("power", 1.5, lambda v: v**1.5),
        ("exp", 1.0, np.exp),
        ("log", 1.0, np.log),
        ("abs", 1.0, np.abs),
        ("threshold", 1.2, lambda v: np.maximum(v, 1.2)),
    ],
)
def test_unary(rng, mode, alpha, fn):
    def add(b):
        b.add_unary("u", "data", "out", mode, alpha=alpha, shift=0.25, scale=2.0, epsilon=1e-6)

    x = np.abs(_x(rng)).astype(np.float64) + 0.1
    check(_one_layer(add), {"data": x}, fn(2.0 * x + 0.25))


@pytest.mark.parametrize(
    ("axis", "mode", "fn"),
    [
        ("CHW", "sum", lambda v, a: v.sum(a, keepdims=True)),
        ("HW", "avg", lambda v, a: v.mean(a, keepdims=True)),
        ("C", "max", lambda v, a: v.max(a, keepdims=True)),
        ("H", "L2", lambda v, a: np.sqrt((v * v).sum(a, keepdims=True))),
        ("W", "sumsquare", lambda v, a: (v * v).sum(a, keepdims=True)),
    ],
)
def test_reduce(rng, axis, mode, fn):
    axes = {"CHW": (1, 2, 3), "HW": (2, 3), "C": 1, "H": 2, "W": 3}[axis]

    def add(b):
        b.add_reduce("r", "data", "out", axis, mode)

    x = _x(rng).astype(np.float64)
    check(_one_layer(add), {"data": x}, fn(x, axes))


def test_mvn(rng):
    def add(b):
        b.add_mvn("m", "data", "out", across_channels=False, epsilon=1e-5)

    x = _x(rng).astype(np.float64)
    centred = x - x.mean((2, 3), keepdims=True)
    want = centred / (np.sqrt((centred**2).mean((2, 3), keepdims=True)) + 1e-5)
    check(_one_layer(add), {"data": x}, want)


def test_pooling_include_last_pixel(rng):
    def add(b):
        b.add_pooling("pool", 3, 3, 2, 2, "MAX", "INCLUDE_LAST_PIXEL", "data", "out")

    x = _x(rng)  # 7 x 6: the last column window is partial (Caffe's ceil rounding)
    check(_one_layer(add), {"data": x}, pool2d(x, "max", (3, 3), (2, 2), (0, 0, 0, 1)))


def test_slice_negative_end_and_stride(rng):
    def add(b):
        b.add_slice("s", "data", "s", "width", start_index=1, end_index=-1, stride=2)
        layer = b.add_slice("c", "s", "out", "channel", start_index=0, end_index=4)
        layer.slice.startIndex = -3  # the spec allows it, the builder does not

    x = _x(rng)
    check(_one_layer(add), {"data": x}, x[:, :, :, 1:-1:2][:, -3:4].astype(np.float64))


def test_channel_layers_on_an_unbatched_blob(rng):
    """Given a [C, H, W] shape, channel layers work on axis -3 (Core ML's channel)."""
    c = SHAPE[0]
    gamma, beta = rng.standard_normal(c), rng.standard_normal(c)

    def add(b):
        b.add_split("split", "data", ["s0", "s1"])
        b.add_elementwise("cat", ["s1", "s0"], "cat", "CONCAT")
        b.add_batchnorm("bn", c, gamma.astype(np.float32), beta.astype(np.float32),
                        np.zeros(c, np.float32), np.ones(c, np.float32), "cat", "bn",
                        epsilon=1e-5)  # fmt: skip
        b.add_softmax("sm", "bn", "out")

    x = rng.standard_normal(SHAPE).astype(np.float32)
    cat = np.concatenate([x[2:], x[:2]]).astype(np.float64)
    bn = cat / np.sqrt(1 + 1e-5) * gamma.reshape(c, 1, 1) + beta.reshape(c, 1, 1)
    (got,) = run_coreml(_one_layer(add).spec, {"data": x}, shape={"data": SHAPE})
    np.testing.assert_allclose(got, softmax(bn, axis=0), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("output_all", [True, False])
def test_simple_recurrent(rng, output_all):
    seq, size, hidden = 5, 3, 4
    w_x = rng.standard_normal((hidden, size)).astype(np.float32)
    w_h = rng.standard_normal((hidden, hidden)).astype(np.float32) * 0.5
    bias = rng.standard_normal(hidden).astype(np.float32)

    def add(b):
        b.add_simple_rnn("rnn", w_h, w_x, bias, hidden, size, "TANH", ["data", "h0"],
                         ["y", "h"], output_all=output_all)  # fmt: skip

    builder = network([("data", (size, 1, 1)), ("h0", (hidden, 1, 1))], ["y", "h"], add)
    x = rng.standard_normal((seq, size, 1, 1)).astype(np.float32)
    h0 = rng.standard_normal((1, hidden, 1, 1)).astype(np.float32)
    h, states = h0.reshape(1, hidden).astype(np.float64), []
    for t in range(seq):
        h = np.tanh(x[t].reshape(1, size) @ w_x.T + h @ w_h.T + bias)
        states.append(h)
    y = np.stack(states) if output_all else states[-1][None]
    got = run_coreml(builder.spec, {"data": x, "h0": h0}, shape={"data": x.shape, "h0": h0.shape})
    np.testing.assert_allclose(got[0], y.reshape(-1, hidden, 1, 1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], h.reshape(1, hidden, 1, 1), rtol=1e-4, atol=1e-5)
