"""PyTorch models converted by coremltools to NeuralNetwork models (the rank-N layers
of spec version 4+), imported with from_coreml and compared with torch on the same
weights."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import ct, run_coreml

torch = pytest.importorskip("torch", reason="these models are converted from PyTorch")
nn = torch.nn


def _convert_and_check(model, *examples, atol=1e-5):
    model = model.eval()
    traced = torch.jit.trace(model, examples)
    inputs = [ct.TensorType(name=f"x{i}", shape=x.shape) for i, x in enumerate(examples)]
    mlmodel = ct.convert(traced, inputs=inputs, convert_to="neuralnetwork")
    feeds = {f"x{i}": x.numpy() for i, x in enumerate(examples)}
    with torch.no_grad():
        want = model(*examples)
    wants = list(want) if isinstance(want, tuple) else [want]
    got = run_coreml(mlmodel, feeds)
    assert len(got) == len(wants)
    for g, w in zip(got, wants, strict=True):
        np.testing.assert_allclose(g.reshape(w.shape), w.numpy(), rtol=1e-4, atol=atol)
    return mlmodel


def test_cnn():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, groups=8, padding=1), nn.Hardsigmoid(), nn.Upsample(scale_factor=2),
        nn.ConvTranspose2d(8, 4, 2, stride=2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(4, 5), nn.Softmax(-1),
    )  # fmt: skip
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    spec = _convert_and_check(model, torch.randn(1, 3, 16, 16)).get_spec()
    kinds = {layer.WhichOneof("layer") for layer in spec.neuralNetwork.layers}
    assert {"convolution", "pooling", "upsample", "innerProduct"} <= kinds


class _Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.qkv = nn.Linear(16, 48)
        self.out = nn.Linear(16, 16)

    def forward(self, x, mask):
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        q = q.reshape(2, 5, 2, 8).transpose(1, 2)
        k = k.reshape(2, 5, 2, 8).transpose(1, 2)
        v = v.reshape(2, 5, 2, 8).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / 8**0.5 + mask
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(2, 5, 16)
        y = torch.nn.functional.gelu(self.out(y))
        return x + y, y.mean(dim=1).clamp(-0.1, 0.1)


def test_attention_block():
    torch.manual_seed(1)
    mask = torch.zeros(2, 1, 5, 5)
    mask[..., 3:] = -1e4
    spec = _convert_and_check(_Attention(), torch.randn(2, 5, 16), mask, atol=1e-4).get_spec()
    kinds = {layer.WhichOneof("layer") for layer in spec.neuralNetwork.layers}
    assert {"batchedMatmul", "gelu", "softmaxND", "splitND", "transpose", "mvn"} <= kinds


class _Tensors(nn.Module):
    def forward(self, x, y):
        a = x[:, 1:4, ::2]  # static slice
        b = torch.cat([a, a * 2], dim=1).unsqueeze(1).squeeze(1)
        c = torch.nn.functional.pad(b, (1, 2), value=0.5)
        d = torch.where(c > 0.2, c, -c)
        e = torch.stack([d, d + 1], dim=0).sum(0)
        f = e.repeat(1, 2, 1)
        g = torch.index_select(y, 1, torch.tensor([2, 0, 1]))
        h = torch.argmax(y, dim=-1).float()
        return f, g, h, (x >= 0).float() * (y.max(dim=1, keepdim=True)[0] < 1).float()


def test_tensor_layers():
    torch.manual_seed(2)
    model = _convert_and_check(_Tensors(), torch.randn(2, 6, 7), torch.randn(2, 3, 7))
    kinds = {layer.WhichOneof("layer") for layer in model.get_spec().neuralNetwork.layers}
    assert {"slice", "concatND", "stack", "tile", "gather", "argMax", "whereBroadcastable"} <= kinds


class _Resample(nn.Module):
    def forward(self, x):
        f = torch.nn.functional
        return (
            f.pixel_shuffle(x, 2),
            f.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True),
            f.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False),
            torch.topk(x.reshape(1, -1), 3)[0],
        )


def test_pixel_shuffle_fractional_bilinear_topk():
    torch.manual_seed(3)
    model = _convert_and_check(_Resample(), torch.randn(1, 8, 4, 6))
    kinds = {layer.WhichOneof("layer") for layer in model.get_spec().neuralNetwork.layers}
    assert {"reorganizeData", "upsample", "topK"} <= kinds


def test_space_to_depth_and_resize_bilinear(rng):
    from .conftest import check, network

    def add(b):
        b.add_reorganize_data("s2d", "data", "s2d", mode="SPACE_TO_DEPTH", block_size=2)
        b.add_reorganize_data("d2s", "data", "d2s", mode="DEPTH_TO_SPACE", block_size=2)
        b.add_resize_bilinear("rb", "data", "rb", 3, 9, mode="ALIGN_ENDPOINTS_MODE")

    x = rng.standard_normal((1, 4, 4, 6)).astype(np.float32)
    # TensorFlow's order: output channel (row offset * 2 + column offset) * C + c
    s2d = x.reshape(1, 4, 2, 2, 3, 2).transpose(0, 3, 5, 1, 2, 4).reshape(1, 16, 2, 3)
    d2s = x.reshape(1, 2, 2, 1, 4, 6).transpose(0, 3, 4, 1, 5, 2).reshape(1, 1, 8, 12)
    ys, xs = np.linspace(0, 3, 3), np.linspace(0, 5, 9)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, 3), np.minimum(x0 + 1, 5)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    xd = x.astype(np.float64)
    rows = xd[:, :, y0] * (1 - fy) + xd[:, :, y1] * fy
    rb = rows[..., x0] * (1 - fx) + rows[..., x1] * fx
    builder = network([("data", (4, 4, 6))], ["s2d", "d2s", "rb"], add)
    check(builder, {"data": x}, [s2d.astype(np.float64), d2s.astype(np.float64), rb])


class _Lstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 5)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y, h, c


def test_lstm():
    torch.manual_seed(4)
    model = _convert_and_check(_Lstm(), torch.randn(6, 2, 4))
    kinds = {layer.WhichOneof("layer") for layer in model.get_spec().neuralNetwork.layers}
    assert "uniDirectionalLSTM" in kinds


class _BiLstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 5, bidirectional=True)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y, h, c


def test_bidirectional_lstm():
    torch.manual_seed(5)
    model = _convert_and_check(_BiLstm(), torch.randn(6, 2, 4))
    kinds = {layer.WhichOneof("layer") for layer in model.get_spec().neuralNetwork.layers}
    assert "biDirectionalLSTM" in kinds
