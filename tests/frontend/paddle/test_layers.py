"""``from_paddle`` on layers saved by ``paddle.jit.save`` and loaded by
``paddle.jit.load`` (Paddle 3's PIR programs), compared with the loaded layer's own
output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

paddle = pytest.importorskip("paddle", reason="the PaddlePaddle frontend tests need paddle")
nn, F = paddle.nn, paddle.nn.functional

RNG = np.random.default_rng(0)


def _image(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


class _ConvNet(nn.Layer):
    """ResNet / MobileNet building blocks: conv + BN + ReLU, max pool, a residual add,
    depthwise conv, ReLU6, hardswish, avg pools, flatten, linear, softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2D(3, 8, 3, stride=2, padding=1, bias_attr=False)
        self.bn = nn.BatchNorm2D(8)
        self.conv = nn.Conv2D(8, 8, 3, padding=1)
        self.dw = nn.Conv2D(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2D(8, 16, 1)
        self.bn2 = nn.BatchNorm2D(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):  # type: ignore[no-untyped-def]
        x = F.relu(self.bn(self.stem(x)))
        x = F.max_pool2d(x, 3, stride=2, padding=1)
        x = x + F.relu(self.conv(x))
        x = F.relu6(self.dw(x))
        x = F.hardswish(self.bn2(self.pw(x)))
        x = F.avg_pool2d(x, 2, stride=1, padding=1, exclusive=True)
        x = F.adaptive_avg_pool2d(x, 1)
        x = paddle.flatten(x, 1)
        return F.softmax(self.fc(x), axis=-1)


def test_convnet_operators(tmp_path: Path, check: Any) -> None:
    layer = _ConvNet()
    for bn in (layer.bn, layer.bn2):  # running statistics that are not the defaults
        bn._mean.set_value(paddle.rand(bn._mean.shape))
        bn._variance.set_value(paddle.rand(bn._variance.shape) + 0.5)
    mod, params = check(layer, {"x": _image(2, 3, 16, 16)}, tmp_path)
    assert params and all(isinstance(k, str) for k in params)
    assert "nn.conv2d" in mod.astext()


def test_weights_are_constants_and_params_name_them(
    tmp_path: Path, relay_run: Any, saved: Any
) -> None:
    """As TVM's importer: main takes the inputs only; params maps Paddle's parameter
    names to their values, and building with or without them gives the same result."""
    from relaykit import relay

    loaded = saved(nn.Linear(4, 3), [("x", [2, 4], "float32")], tmp_path)
    mod, params = relay.frontend.from_paddle(loaded)
    weight = {p.name: p.numpy() for p in loaded.parameters()}
    assert sorted(params) == sorted(weight)
    for name, value in weight.items():
        np.testing.assert_array_equal(params[name].numpy(), value)
    x = _image(2, 4)
    want = x.astype("float64") @ next(v for v in weight.values() if v.ndim == 2)
    want += next(v for v in weight.values() if v.ndim == 1)
    for given in (params, {}):
        (got,) = relay_run(mod, given, {"x": x})
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_resnet18_from_the_model_zoo(tmp_path: Path, check: Any) -> None:
    layer = paddle.vision.models.resnet18(num_classes=10)
    check(layer, {"inputs": _image(1, 3, 64, 64)}, tmp_path, rtol=1e-4)


def test_mobilenet_v2_from_the_model_zoo(tmp_path: Path, check: Any) -> None:
    """Depthwise convolutions, ReLU6, dropout before the classifier."""
    layer = paddle.vision.models.mobilenet_v2(scale=0.25, num_classes=7)
    check(layer, {"inputs": _image(1, 3, 32, 32)}, tmp_path, rtol=1e-4)


class _Encoder(nn.Layer):
    """A transformer-ish block: layer norm, matmuls with transposes, reshape/transpose,
    split, concat, gelu, sigmoid, scale, mean, dropout in eval mode."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.qkv = nn.Linear(16, 48)
        self.out = nn.Linear(16, 16)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):  # type: ignore[no-untyped-def]
        b, t = x.shape[0], x.shape[1]
        h = self.norm(x)
        q, k, v = paddle.split(self.qkv(h), 3, axis=-1)
        q = q.reshape([b, t, 2, 8]).transpose([0, 2, 1, 3])
        k = k.reshape([b, t, 2, 8]).transpose([0, 2, 1, 3])
        v = v.reshape([b, t, 2, 8]).transpose([0, 2, 1, 3])
        att = F.softmax(paddle.matmul(q, k, transpose_y=True) * 0.35, axis=-1)
        o = paddle.matmul(att, v).transpose([0, 2, 1, 3]).reshape([b, t, 16])
        y = x + self.drop(self.out(o))
        y = F.gelu(y) + F.gelu(y, approximate=True) * F.sigmoid(y)
        return paddle.concat([y, y.mean(axis=1, keepdim=True)], axis=1)


def test_encoder_operators(tmp_path: Path, check: Any) -> None:
    check(_Encoder(), {"x": _image(2, 5, 16)}, tmp_path)


class _Indexing(nn.Layer):
    def forward(self, x, idx):  # type: ignore[no-untyped-def]
        a = x[:, 1:3, ::2]  # slice / strided_slice
        b = paddle.gather(x, idx, axis=1)
        c = paddle.unsqueeze(paddle.squeeze(x[:, :1], axis=1), axis=[0, 3])
        d = paddle.cast(paddle.sum(x, axis=[1, 2]), "float64")
        e = paddle.stack([x[:, 0], x[:, 1]], axis=1).max(axis=-1)
        return a, b, c, d, paddle.clip(e, -0.5, 0.5), x[:, -1]


def test_indexing_and_reductions(tmp_path: Path, check: Any) -> None:
    feeds = {"x": _image(2, 4, 6), "idx": np.array([3, 0, 2], dtype="int64")}
    check(_Indexing(), feeds, tmp_path)


class _Resize(nn.Layer):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return (
            F.interpolate(x, scale_factor=2, mode="nearest"),
            F.interpolate(x, size=[7, 9], mode="bilinear", align_corners=False),
            F.interpolate(x, size=[7, 9], mode="bilinear", align_corners=True),
            F.interpolate(x, size=[3, 4], mode="bilinear", align_corners=False, align_mode=1),
            F.interpolate(x, size=[9, 11], mode="bicubic", align_corners=False),
        )


def test_interpolate_modes(tmp_path: Path, check: Any) -> None:
    check(_Resize(), {"x": _image(1, 2, 5, 6)}, tmp_path)


class _Activations(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.prelu = nn.PReLU(3, 0.2)

    def forward(self, x):  # type: ignore[no-untyped-def]
        return paddle.concat(
            [
                F.leaky_relu(x, 0.1), F.elu(x), F.silu(x), F.hardsigmoid(x), F.softplus(x),
                F.mish(x), self.prelu(x), paddle.tanh(x), paddle.exp(x) - paddle.abs(x),
                paddle.sqrt(paddle.abs(x) + 1) * paddle.rsqrt(paddle.abs(x) + 1),
                paddle.pow(x, 2.0), F.log_softmax(x, axis=1),
            ],
            axis=1,
        )  # fmt: skip


def test_activations(tmp_path: Path, check: Any) -> None:
    check(_Activations(), {"x": _image(2, 3, 4, 4)}, tmp_path)


class _Shapes(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.convt = nn.Conv2DTranspose(3, 2, 3, stride=2, padding=1, output_padding=1)
        self.same = nn.Conv2D(3, 4, 3, stride=2, padding="SAME")
        self.nhwc = nn.Conv2D(3, 4, 3, padding=1, data_format="NHWC")
        self.emb = nn.Embedding(10, 4, padding_idx=0)

    def forward(self, x, ids):  # type: ignore[no-untyped-def]
        t = self.convt(x)
        s = self.same(x)
        h = self.nhwc(x.transpose([0, 2, 3, 1]))
        e = self.emb(ids)
        big = paddle.expand(x[:, :1], [2, 3, 5, 5]) + paddle.tile(x[:, 1:2], [1, 3, 1, 1])
        return t, s, h, e, big, paddle.flatten(x, 2, 3)


def test_transposed_same_nhwc_embedding(tmp_path: Path, check: Any) -> None:
    feeds = {"x": _image(2, 3, 5, 5), "ids": np.array([[0, 3, 9]], dtype="int64")}
    check(_Shapes(), feeds, tmp_path)


class _DynamicBatch(nn.Layer):
    """Saved with unknown sizes: shapes read with ``x.shape`` become ``shape64`` /
    ``slice`` / ``stack`` ops, which fold to constants once ``shape_dict`` fixes them."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):  # type: ignore[no-untyped-def]
        b, t = x.shape[0], x.shape[1]
        y = self.fc(x).reshape([b, t, 2, 8]).transpose([0, 2, 1, 3]).reshape([b, 2, -1])
        z = paddle.zeros([b, 3]) + paddle.ones_like(x[:, 0, :3])
        values, indices = paddle.topk(x, 2)
        smallest = paddle.topk(x, 3, axis=1, largest=False)[0]
        return y, z, paddle.arange(0, t, 1, dtype="int64"), values, indices, smallest


def test_unknown_sizes_fixed_by_shape_dict(tmp_path: Path, relay_run: Any, saved: Any) -> None:
    from relaykit import relay

    loaded = saved(_DynamicBatch(), [("x", [None, None, 16], "float32")], tmp_path)
    x = _image(2, 5, 16)
    want = loaded(paddle.to_tensor(x))
    mod, params = relay.frontend.from_paddle(loaded, {"x": x.shape})
    got = relay_run(mod, params, {"x": x})
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)
        assert g.dtype == w.numpy().dtype


class _Norms(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.gn = nn.GroupNorm(2, 4)
        self.inorm = nn.InstanceNorm2D(4)
        self.shuffle = nn.PixelShuffle(2)

    def forward(self, x, a, b):  # type: ignore[no-untyped-def]
        return (
            self.gn(x),
            self.inorm(x),
            self.shuffle(x),
            F.pad(x, [1, 2, 0, 1], mode="constant", value=0.5),
            F.pad(x, [1, 1, 2, 0], mode="reflect"),
            F.pad(x, [0, 1, 1, 0], mode="replicate"),
            paddle.logsumexp(x, axis=[2, 3]),
            paddle.norm(x, p=2, axis=1),
            paddle.bmm(a, b),
            paddle.addmm(a[0], a[1], b[1], beta=0.5, alpha=2.0),
            paddle.log1p(paddle.abs(x)) + paddle.tan(x * 0.1),
        )


def test_group_instance_norm_padding_and_more_math(tmp_path: Path, check: Any) -> None:
    feeds = {"x": _image(2, 4, 4, 5), "a": _image(2, 3, 3), "b": _image(2, 3, 3)}
    check(_Norms(), feeds, tmp_path)


class _PaddingRules(nn.Layer):
    """Paddle's own rules: ``SAME`` ignores the dilation; a transposed ``SAME``
    convolution; 3-d convolution and pooling; the dropout probability of
    ``downscale_in_infer``; clip bounds given as tensors."""

    def __init__(self) -> None:
        super().__init__()
        self.same = nn.Conv2D(3, 4, 3, stride=2, padding="SAME", dilation=3)
        self.convt = nn.Conv2DTranspose(3, 2, 3, stride=3, padding="SAME")
        self.conv3d = nn.Conv3D(3, 2, 2, padding=1)

    def forward(self, x, lo):  # type: ignore[no-untyped-def]
        v = x.unsqueeze(2)
        return (
            self.same(x),
            self.convt(x),
            F.avg_pool3d(self.conv3d(v), 2, stride=1, padding=1),
            F.max_pool3d(v, 1),
            F.dropout(x, 0.1, training=False, mode="downscale_in_infer"),
            paddle.clip(x, min=lo, max=0.5),
        )


def test_paddle_padding_rules_and_tensor_bounds(tmp_path: Path, check: Any) -> None:
    feeds = {"x": _image(1, 3, 7, 7), "lo": np.array([-0.3], dtype="float32")}
    check(_PaddingRules(), feeds, tmp_path)


class _Assignments(nn.Layer):
    """``x[...] = v`` (set_value with numbers and with a tensor), linspace, flip,
    argsort, one_hot, take_along_axis, scatter, meshgrid, eye, unstack of one."""

    def forward(self, x, u, idx):  # type: ignore[no-untyped-def]
        y = x + 1
        y[3:] = 3.0
        y[1:4] = u
        y[0] = -1.0
        y[:, 1:2] = y[:, 0:1] * 2
        order = paddle.argsort(x, axis=1, descending=True)
        return (
            y,
            paddle.linspace(-2.5, 31.6, 13, "int32"),
            paddle.linspace(0.5, 2.0, 4, "float32"),
            paddle.flip(x, [0, 1]),
            order,
            paddle.take_along_axis(x, order, 1),
            F.one_hot(idx, 4),
            paddle.scatter(x, idx[:2], u[:2]),
            paddle.scatter(x, paddle.to_tensor([1, 1]), u[:2], overwrite=False),
            paddle.meshgrid(x[0], x[1, :2])[1],
            paddle.eye(3, 2),
            paddle.unstack(x[:1], axis=0)[0],
        )


def test_assignments_and_constant_makers(tmp_path: Path, check: Any) -> None:
    feeds = {
        "x": _image(5, 3),
        "u": _image(3, 3),
        "idx": np.array([2, 0, 3], dtype="int64"),
    }
    check(_Assignments(), feeds, tmp_path)


class _MoreActivations(nn.Layer):
    def forward(self, x, label):  # type: ignore[no-untyped-def]
        loss = F.softmax_with_cross_entropy(x, label)
        return (
            F.hardshrink(x, 0.3), F.softshrink(x, 0.2), F.tanhshrink(x),
            F.thresholded_relu(x, 0.4), F.selu(x), F.softsign(x), F.hardtanh(x, -0.5, 0.6),
            F.log_sigmoid(x), paddle.expm1(x), paddle.trunc(x * 3), loss,
        )  # fmt: skip


def test_more_activations_and_softmax_cross_entropy(tmp_path: Path, check: Any) -> None:
    feeds = {"x": _image(4, 5), "label": np.array([[1], [4], [0], [2]], dtype="int64")}
    check(_MoreActivations(), feeds, tmp_path)


class _Recurrent(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 3, num_layers=2, direction="bidirect")
        self.gru = nn.GRU(6, 2)
        self.rnn = nn.SimpleRNN(2, 3, activation="relu")

    def forward(self, x):  # type: ignore[no-untyped-def]
        y, (h, c) = self.lstm(x)
        z, hg = self.gru(y)
        r, hr = self.rnn(z)
        return y, h, c, z, hg, r, hr


def test_lstm_gru_simple_rnn(tmp_path: Path, check: Any) -> None:
    check(_Recurrent(), {"x": _image(2, 5, 4)}, tmp_path)


class _RoiAlign(nn.Layer):
    def forward(self, x, boxes, boxes_num):  # type: ignore[no-untyped-def]
        ops = paddle.vision.ops
        return (
            ops.roi_align(x, boxes, boxes_num, 3, 1.0, -1, False),
            ops.roi_align(x, boxes, boxes_num, (2, 3), 0.5, 2, True),
        )


def test_roi_align_over_two_images(tmp_path: Path, check: Any) -> None:
    corner = RNG.uniform(0, 8, size=(4, 2))
    boxes = np.concatenate([corner, corner + RNG.uniform(2, 6, size=(4, 2))], 1)
    feeds = {
        "x": _image(2, 3, 12, 12),
        "boxes": boxes.astype("float32"),
        "boxes_num": np.array([1, 3], dtype="int32"),
    }
    check(_RoiAlign(), feeds, tmp_path)


class _GridSample(nn.Layer):
    def forward(self, x, grid, v, grid3):  # type: ignore[no-untyped-def]
        return (
            F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True),
            F.grid_sample(x, grid, mode="nearest", padding_mode="border", align_corners=False),
            F.grid_sample(v, grid3, mode="bilinear", align_corners=False),
        )


def test_grid_sample_4d_and_5d(tmp_path: Path, check: Any) -> None:
    feeds = {
        "x": _image(1, 2, 5, 6),
        "grid": RNG.uniform(-1.1, 1.1, size=(1, 3, 4, 2)).astype("float32"),
        "v": _image(1, 2, 3, 4, 5),
        "grid3": RNG.uniform(-1, 1, size=(1, 2, 3, 2, 3)).astype("float32"),
    }
    check(_GridSample(), feeds, tmp_path)
