"""A BERT-like encoder block (nn.GELU, erf form, and nn.LayerNorm) from plain PyTorch,
through ``from_onnx`` (torch.onnx.export at opsets 14 and 17: the GELU written out as
Erf, the layer norms too at 14), ``from_pytorch`` (TorchScript) and
``from_exported_program`` (torch.export): each frontend's module holds ``nn.gelu`` and
``nn.layer_norm`` calls and no ``erf``, before any pass; outputs match torch within 1e-5."""

from __future__ import annotations

import io
import warnings
from collections import Counter

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")

import relaykit as tvm  # noqa: E402
from relaykit import relay  # noqa: E402
from relaykit.contrib import graph_executor  # noqa: E402
from relaykit.frontend import from_exported_program, from_onnx, from_pytorch  # noqa: E402
from relaykit.ir.expr import Call  # noqa: E402
from relaykit.ir.functor import post_order  # noqa: E402
from relaykit.ir.op import Op  # noqa: E402

SHAPE = (2, 5, 32)


class Block(torch.nn.Module):
    """Self-attention, residual + LayerNorm, FFN with GELU, residual + LayerNorm."""

    def __init__(self, d: int = 32, heads: int = 4, ff: int = 64) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln1 = torch.nn.LayerNorm(d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.ff1 = torch.nn.Linear(d, ff)
        self.act = torch.nn.GELU()
        self.ff2 = torch.nn.Linear(ff, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        h = self.heads
        q, k, v = (t.reshape(b, s, h, d // h).transpose(1, 2) for t in self.qkv(x).split(d, dim=-1))
        a = torch.softmax(q @ k.transpose(-1, -2) / (d // h) ** 0.5, dim=-1) @ v
        x = self.ln1(x + self.proj(a.transpose(1, 2).reshape(b, s, d)))
        return self.ln2(x + self.ff2(self.act(self.ff1(x))))


@pytest.fixture(scope="module")
def model() -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    block = Block().eval()
    for ln in (block.ln1, block.ln2):  # parameters other than the initial ones
        torch.nn.init.normal_(ln.weight)
        torch.nn.init.normal_(ln.bias)
    x = torch.randn(*SHAPE) * 3
    with torch.no_grad():
        return block, x, block(x)


def op_counts(mod: tvm.IRModule) -> Counter[str]:
    return Counter(
        n.op.name for n in post_order(mod["main"].body) if type(n) is Call and type(n.op) is Op
    )


def check(mod: tvm.IRModule, params: dict, name: str, x: torch.Tensor, want: torch.Tensor):
    ops = op_counts(mod)
    assert ops["nn.gelu"] == 1 and ops["nn.layer_norm"] == 2, ops
    assert "erf" not in ops and "sqrt" not in ops and "rsqrt" not in ops, ops
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input(name, x.numpy())
    m.run()
    got, ref = m.get_output(0).numpy(), want.numpy()
    err = float(np.abs(got.astype(np.float64) - ref).max()) / float(np.abs(ref).max())
    assert err <= 1e-5, f"relative error {err:.2e}"


@pytest.mark.parametrize("opset", [14, 17])
def test_from_onnx_of_the_exported_encoder(model, opset):
    block, x, want = model
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(block, (x,), buf, opset_version=opset, dynamo=False)
    proto = onnx.load_from_string(buf.getvalue())
    exported = Counter(n.op_type for n in proto.graph.node)
    assert exported["Erf"] == 1  # torch writes GELU out below opset 20
    assert exported["LayerNormalization"] == (2 if opset >= 17 else 0)
    name = proto.graph.input[0].name
    mod, params = from_onnx(proto, {name: SHAPE})
    check(mod, params, name, x, want)


def test_from_pytorch_of_the_traced_encoder(model):
    block, x, want = model
    mod, params = from_pytorch(torch.jit.trace(block, (x,)), [("x", SHAPE)])
    check(mod, params, "x", x, want)


def test_from_exported_program_of_the_encoder(model):
    block, x, want = model
    mod, params = from_exported_program(torch.export.export(block, (x,)))
    name = mod["main"].params[0].name_hint
    check(mod, params, name, x, want)


@pytest.mark.parametrize("frontend", ["onnx", "pytorch"])
def test_tanh_gelu_stays_written_out(frontend):
    """``nn.gelu`` is the exact form only: the tanh approximation is not made one."""

    class Tanh(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.gelu(x, approximate="tanh")

    x = torch.randn(3, 8)
    if frontend == "pytorch":
        mod, _ = from_pytorch(torch.jit.trace(Tanh(), (x,)), [("x", (3, 8))])
    else:
        buf = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Tanh(), (x,), buf, opset_version=17, dynamo=False)
        proto = onnx.load_from_string(buf.getvalue())
        mod, _ = from_onnx(proto, {proto.graph.input[0].name: (3, 8)})
    ops = op_counts(mod)
    assert "tanh" in ops and "nn.gelu" not in ops, ops
