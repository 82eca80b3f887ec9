"""An ONNX encoder (embedding, attention, GELU feed-forward, layer norms) exported by
torch, imported, built as ahead-of-time C, and compared with onnxruntime."""

from __future__ import annotations

import io

import numpy as np
import pytest

from relaykit import relay

torch = pytest.importorskip("torch", reason="torch exports the ONNX model")
onnx = pytest.importorskip("onnx", reason="the ONNX frontend needs onnx")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")


class _Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(50, 32)
        self.pos = torch.nn.Parameter(torch.randn(1, 8, 32))
        self.enc = torch.nn.TransformerEncoderLayer(
            32, 4, 64, dropout=0.0, activation="gelu", batch_first=True
        )
        self.ln = torch.nn.LayerNorm(32)
        self.head = torch.nn.Linear(32, 3)

    def forward(self, ids):
        x = self.enc(self.ln(self.emb(ids) + self.pos))
        return self.head(x[:, 0])


def test_onnx_encoder_matches_onnxruntime(aot, tmp_path):
    torch.manual_seed(0)
    model = _Encoder().eval()
    ids = torch.randint(0, 50, (1, 8))
    buf = io.BytesIO()
    torch.onnx.export(
        model, (ids,), buf, input_names=["input_ids"], output_names=["logits"],
        opset_version=17, dynamo=False,
    )  # fmt: skip
    want = ort.InferenceSession(buf.getvalue()).run(None, {"input_ids": ids.numpy()})[0]
    mod, params = relay.frontend.from_onnx(
        onnx.load_from_string(buf.getvalue()), {"input_ids": (1, 8)}
    )
    (got,), _, lib, _ = aot(mod, params, [ids.numpy()], [(want.shape, "float32")], tmp_path)
    err = np.max(np.abs(got - want)) / np.max(np.abs(want))
    assert err < 1e-4
    assert "void *input_ids;" in lib.header


def _inverted_residual(cin: int, cout: int, stride: int, expand: int = 6):
    hid = cin * expand
    return torch.nn.Sequential(
        torch.nn.Conv2d(cin, hid, 1, bias=False), torch.nn.BatchNorm2d(hid), torch.nn.ReLU6(),
        torch.nn.Conv2d(hid, hid, 3, stride, 1, groups=hid, bias=False),
        torch.nn.BatchNorm2d(hid), torch.nn.ReLU6(),
        torch.nn.Conv2d(hid, cout, 1, bias=False), torch.nn.BatchNorm2d(cout),
    )  # fmt: skip


class _Residual(torch.nn.Module):
    def __init__(self, body) -> None:
        super().__init__()
        self.body = body

    def forward(self, x):
        return x + self.body(x)


def test_onnx_mobilenet_v2_blocks_match_onnxruntime(aot, tmp_path):
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, 2, 1), torch.nn.ReLU6(),
        _inverted_residual(16, 24, 2), _Residual(_inverted_residual(24, 24, 1)),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(24, 10),
    ).eval()  # fmt: skip
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):  # statistics that are not the identity
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
            m.weight.data.uniform_(0.5, 1.5)
    x = torch.randn(1, 3, 32, 32)
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, input_names=["x"], opset_version=17, dynamo=False)
    want = ort.InferenceSession(buf.getvalue()).run(None, {"x": x.numpy()})[0]
    mod, params = relay.frontend.from_onnx(
        onnx.load_from_string(buf.getvalue()), {"x": (1, 3, 32, 32)}
    )
    (got,), *_ = aot(mod, params, [x.numpy()], [(want.shape, "float32")], tmp_path)
    assert np.max(np.abs(got - want)) / np.max(np.abs(want)) < 1e-4
