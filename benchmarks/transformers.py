"""Transformers on relaykit's host path and relaykit + oneDNN, against onnxruntime.

    python benchmarks/transformers.py                       # every model
    python benchmarks/transformers.py --models bert_issue --runs 20 --threads 2
    python benchmarks/transformers.py --engines host,ort    # skip relaykit + dnnl

Models (batch 1, fp32, random weights):

- ``bert_tiny``: BERT-tiny-like encoder: 2 layers, hidden 128, 2 heads, FFN 512, seq 128;
- ``bert_issue``: the BERT-like encoder of issue 13: 4 layers, hidden 256, 4 heads,
  FFN 1024, GELU (erf), seq 128;
- ``bert_base``: BERT-base-like encoder: 12 layers, hidden 768, 12 heads, FFN 3072, seq 128;
- ``gpt2_block``: one GPT-2-small-like decoder block: hidden 768, 12 heads, FFN 3072,
  GELU (tanh form), causal mask, pre-layer-norm, seq 128;
- ``gpt2_block_s256``: the same block on 256 tokens; ``gpt2_medium_block``: a
  GPT-2-medium-like block (hidden 1024, 16 heads, FFN 4096, seq 128);
- ``vit_tiny``: a ViT-tiny-like image encoder (torch only): 16x16 patch embedding
  (a strided convolution) of a 224x224 image, 196 tokens, 4 pre-LN layers, hidden 192,
  3 heads, FFN 768, GELU (erf), no mask.

The tests use none of these models.

Each encoder is the whole BERT stack: word + position + token-type embeddings
(gathers), embedding layer norm, then per layer Q/K/V projections, attention
``softmax(QKᵀ/√d + mask)·V`` with an additive padding mask, output projection,
residual + layer norm, FFN with GELU, residual + layer norm. They are written
in plain PyTorch and exported to ONNX (opset 17) when torch is importable
(``pip install 'relaykit[torch]'``); otherwise the same graphs are built with
``onnx.helper`` (same operators the exporter emits: MatMul/Add, Reshape,
Transpose, Softmax, LayerNormalization, Erf or Tanh GELU).

All engines run in this one process on the same ONNX model and inputs with
the same thread count, timed in interleaved bursts with a pause before each
(see ``_bench.py``); medians and ``engine / onnxruntime`` ratios are printed,
and each engine's outputs are checked against onnxruntime's (largest
difference relative to the output's largest magnitude, must be <= 1e-4).
"""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
import warnings
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _bench


@dataclass(frozen=True)
class Config:
    layers: int
    hidden: int
    heads: int
    ffn: int
    seq: int = 128
    vocab: int = 1000
    causal: bool = False  # a GPT-2 block (pre-LN, tanh GELU, causal mask) instead of BERT
    embeddings: bool = True
    vit: bool = False  # a ViT: patch embedding of an image, pre-LN, erf GELU, no mask


MODELS = {
    "bert_tiny": Config(2, 128, 2, 512),
    "bert_issue": Config(4, 256, 4, 1024),
    "bert_base": Config(12, 768, 12, 3072),
    "gpt2_block": Config(1, 768, 12, 3072, causal=True, embeddings=False),
    "gpt2_block_s256": Config(1, 768, 12, 3072, seq=256, causal=True, embeddings=False),
    "gpt2_medium_block": Config(1, 1024, 16, 4096, causal=True, embeddings=False),
    "vit_tiny": Config(4, 192, 3, 768, seq=196, embeddings=False, vit=True),
}
#: The models run when --models is not given.
DEFAULT_MODELS = ("bert_tiny", "bert_issue", "bert_base", "gpt2_block")


def _inputs(cfg: Config, rng: np.random.Generator) -> dict[str, np.ndarray]:
    if cfg.vit:
        side = 16 * math.isqrt(cfg.seq)
        return {"pixels": rng.standard_normal((1, 3, side, side), dtype=np.float32)}
    if cfg.embeddings:
        ids = rng.integers(0, cfg.vocab, size=(1, cfg.seq), dtype=np.int64)
        mask = np.ones((1, cfg.seq), np.int64)
        mask[0, cfg.seq - cfg.seq // 8 :] = 0  # padded tail
        return {"input_ids": ids, "attention_mask": mask}
    return {"hidden": rng.standard_normal((1, cfg.seq, cfg.hidden), dtype=np.float32)}


# -- PyTorch definitions ------------------------------------------------------------------------


def torch_model(cfg: Config):  # noqa: C901 - one nested class per model part
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(cfg.hidden, cfg.hidden)
            self.k = nn.Linear(cfg.hidden, cfg.hidden)
            self.v = nn.Linear(cfg.hidden, cfg.hidden)
            self.o = nn.Linear(cfg.hidden, cfg.hidden)
            self.d = cfg.hidden // cfg.heads

        def split(self, t):
            return t.view(1, cfg.seq, cfg.heads, self.d).transpose(1, 2)

        def forward(self, x, bias):
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
            if bias is not None:
                scores = scores + bias
            ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
            return self.o(ctx.transpose(1, 2).reshape(1, cfg.seq, cfg.hidden))

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = Attention()
            self.ln1 = nn.LayerNorm(cfg.hidden, eps=1e-12 if not cfg.causal else 1e-5)
            self.ln2 = nn.LayerNorm(cfg.hidden, eps=1e-12 if not cfg.causal else 1e-5)
            self.fc1 = nn.Linear(cfg.hidden, cfg.ffn)
            self.fc2 = nn.Linear(cfg.ffn, cfg.hidden)
            self.act = nn.GELU(approximate="tanh" if cfg.causal else "none")

        def forward(self, x, bias):
            if cfg.causal or cfg.vit:  # GPT-2 and ViT: pre-LN
                x = x + self.attn(self.ln1(x), bias)
                return x + self.fc2(self.act(self.fc1(self.ln2(x))))
            x = self.ln1(x + self.attn(x, bias))
            return self.ln2(x + self.fc2(self.act(self.fc1(x))))

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word = nn.Embedding(cfg.vocab, cfg.hidden)
            self.pos = nn.Embedding(cfg.seq, cfg.hidden)
            self.typ = nn.Embedding(2, cfg.hidden)
            self.ln = nn.LayerNorm(cfg.hidden, eps=1e-12)
            self.layers = nn.ModuleList(Layer() for _ in range(cfg.layers))

        def forward(self, input_ids, attention_mask):
            pos = torch.arange(cfg.seq).unsqueeze(0)
            x = self.word(input_ids) + self.pos(pos) + self.typ(torch.zeros_like(input_ids))
            x = self.ln(x)
            bias = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
            for layer in self.layers:
                x = layer(x, bias)
            return x

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = Layer()
            causal = torch.triu(torch.full((cfg.seq, cfg.seq), -10000.0), diagonal=1)
            self.register_buffer("bias", causal[None, None])

        def forward(self, hidden):
            return self.layer(hidden, self.bias)

    class ViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patch = nn.Conv2d(3, cfg.hidden, 16, stride=16)
            self.pos = nn.Parameter(torch.zeros(1, cfg.seq, cfg.hidden))
            self.layers = nn.ModuleList(Layer() for _ in range(cfg.layers))
            self.ln = nn.LayerNorm(cfg.hidden, eps=1e-6)

        def forward(self, pixels):
            x = self.patch(pixels).flatten(2).transpose(1, 2) + self.pos
            for layer in self.layers:
                x = layer(x, None)
            return self.ln(x)

    torch.manual_seed(0)
    model = ViT() if cfg.vit else Encoder() if cfg.embeddings else Block()
    with torch.no_grad():  # BERT-like init scale, so the outputs are not saturated
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.02 if cfg.embeddings else 0.05)
    return model.eval()


def export_torch(cfg: Config, feeds: dict[str, np.ndarray]) -> bytes:
    import torch

    model = torch_model(cfg)
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy exporter's deprecation notice
        torch.onnx.export(
            model, args, buf, input_names=list(feeds), output_names=["out"],
            opset_version=17, dynamo=False,
        )  # fmt: skip
    return buf.getvalue()


# -- the same graphs with onnx.helper ------------------------------------------------------------


class _Graph:
    def __init__(self, rng: np.random.Generator) -> None:
        self.nodes: list = []
        self.inits: list = []
        self.rng = rng
        self.n = 0

    def name(self, hint: str) -> str:
        self.n += 1
        return f"{hint}_{self.n}"

    def const(self, value: np.ndarray, hint: str = "c") -> str:
        from onnx import numpy_helper

        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs) -> str:
        from onnx import helper

        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def linear(self, x: str, n_in: int, n_out: int, scale: float) -> str:
        w = self.const(self.rng.normal(0, scale, (n_in, n_out)).astype(np.float32), "w")
        b = self.const(self.rng.normal(0, scale, n_out).astype(np.float32), "b")
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x: str, n: int, eps: float) -> str:
        g = self.const(np.ones(n, np.float32), "gamma")
        b = self.const(np.zeros(n, np.float32), "beta")
        return self.op("LayerNormalization", [x, g, b], axis=-1, epsilon=eps)


def _helper_layer(g: _Graph, cfg: Config, x: str, bias: str, scale: float) -> str:
    h, d = cfg.hidden, cfg.hidden // cfg.heads
    eps = 1e-5 if cfg.causal else 1e-12
    inp = g.layer_norm(x, h, eps) if cfg.causal else x
    split = g.const(np.array([1, cfg.seq, cfg.heads, d], np.int64), "shape")

    def heads(t: str, perm: list[int]) -> str:
        return g.op("Transpose", [g.op("Reshape", [t, split])], perm=perm)

    q = heads(g.linear(inp, h, h, scale), [0, 2, 1, 3])
    k = heads(g.linear(inp, h, h, scale), [0, 2, 3, 1])
    v = heads(g.linear(inp, h, h, scale), [0, 2, 1, 3])
    s = g.op("Div", [g.op("MatMul", [q, k]), g.const(np.array(math.sqrt(d), np.float32))])
    p = g.op("Softmax", [g.op("Add", [s, bias])], axis=-1)
    ctx = g.op("Transpose", [g.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.const(np.array([1, cfg.seq, h], np.int64), "shape")])
    attn = g.linear(ctx, h, h, scale)
    x = g.op("Add", [x, attn])
    x = x if cfg.causal else g.layer_norm(x, h, eps)
    f = g.linear(g.layer_norm(x, h, eps) if cfg.causal else x, h, cfg.ffn, scale)
    if cfg.causal:  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = g.op("Mul", [g.op("Pow", [f, g.const(np.array(3.0, np.float32))]),
                            g.const(np.array(0.044715, np.float32))])  # fmt: skip
        inner = g.op("Mul", [g.op("Add", [f, cube]),
                             g.const(np.array(math.sqrt(2 / math.pi), np.float32))])  # fmt: skip
        t = g.op("Add", [g.op("Tanh", [inner]), g.const(np.array(1.0, np.float32))])
    else:  # 0.5 x (1 + erf(x / sqrt(2)))
        e = g.op("Erf", [g.op("Div", [f, g.const(np.array(math.sqrt(2), np.float32))])])
        t = g.op("Add", [e, g.const(np.array(1.0, np.float32))])
    f = g.op("Mul", [g.op("Mul", [f, t]), g.const(np.array(0.5, np.float32))])
    y = g.op("Add", [x, g.linear(f, cfg.ffn, h, scale)])
    return y if cfg.causal else g.layer_norm(y, h, eps)


def export_helper(cfg: Config, feeds: dict[str, np.ndarray]) -> bytes:
    from onnx import TensorProto, helper

    if cfg.vit:
        raise ImportError("the ViT model is defined in PyTorch only: pip install 'relaykit[torch]'")

    g = _Graph(np.random.default_rng(1))
    scale = 0.02 if cfg.embeddings else 0.05
    if cfg.embeddings:
        inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, [1, cfg.seq]) for n in feeds]
        table = g.const(g.rng.normal(0, scale, (cfg.vocab, cfg.hidden)).astype(np.float32))
        pos = g.const(g.rng.normal(0, scale, (1, cfg.seq, cfg.hidden)).astype(np.float32))
        x = g.op("Add", [g.op("Gather", [table, "input_ids"], axis=0), pos])
        x = g.layer_norm(x, cfg.hidden, 1e-12)
        m = g.op("Cast", [g.op("Unsqueeze", ["attention_mask",
                                             g.const(np.array([1, 2], np.int64))])],
                 to=TensorProto.FLOAT)  # fmt: skip
        one = g.const(np.array(1.0, np.float32))
        bias = g.op("Mul", [g.op("Sub", [one, m]), g.const(np.array(-10000.0, np.float32))])
    else:
        inputs = [helper.make_tensor_value_info("hidden", TensorProto.FLOAT,
                                                [1, cfg.seq, cfg.hidden])]  # fmt: skip
        x = "hidden"
        causal = np.triu(np.full((cfg.seq, cfg.seq), -10000.0, np.float32), k=1)
        bias = g.const(causal[None, None], "causal")
    for _ in range(cfg.layers):
        x = _helper_layer(g, cfg, x, bias, scale)
    g.nodes.append(helper.make_node("Identity", [x], ["out"]))
    graph = helper.make_graph(
        g.nodes, "model", inputs,
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, cfg.seq, cfg.hidden])],
        initializer=g.inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


def export(cfg: Config, feeds: dict[str, np.ndarray], how: str) -> tuple[bytes, str]:
    if how in ("auto", "torch"):
        try:
            import torch  # noqa: F401
        except ImportError:
            if how == "torch":
                raise
        else:
            return export_torch(cfg, feeds), "torch"
    return export_helper(cfg, feeds), "onnx.helper"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--models", default=",".join(DEFAULT_MODELS), help=f"comma-separated: {', '.join(MODELS)}"
    )
    parser.add_argument("--engines", default="host,dnnl,ort", help="host, dnnl, ort")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per engine")
    parser.add_argument("--burst", type=int, default=5, help="timed runs per burst")
    parser.add_argument("--gap", type=float, default=0.3, help="pause before each burst (s)")
    parser.add_argument("--threads", type=int, default=None, help="threads (default: all)")
    parser.add_argument("--export", default="auto", choices=["auto", "torch", "helper"])
    args = parser.parse_args(argv)

    threads = _bench.num_threads(args.threads)
    wanted = set(args.engines.split(","))
    print(
        f"batch 1, fp32, {threads} threads, median of {args.runs} runs in interleaved bursts of "
        f"{args.burst}, {args.gap:g} s apart; ratio = engine / onnxruntime"
    )
    _bench.header()
    for name in args.models.split(","):
        cfg = MODELS[name.strip()]
        feeds = _inputs(cfg, np.random.default_rng(0))
        model, how = export(cfg, feeds, args.export)
        engines = [_bench.ort_engine(model, feeds, threads)]
        if "host" in wanted:
            engines.append(_bench.relaykit_engine(model, feeds, threads))
        if "dnnl" in wanted:
            engines.append(_bench.relaykit_engine(model, feeds, threads, dnnl=True))
        want = engines[0].run()
        errors = {e.name: _bench.rel_error(e.run(), want) for e in engines[1:]}
        _bench.time_engines(engines, args.runs, args.burst, args.gap)
        _bench.report(f"{name} ({how[:5]})", engines, errors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
