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
