"""The deployment flow on one small model per family (an MLP, a ResNet, a MobileNetV2,
a BERT-like encoder with an embedding gather, a CNN partitioned into ccompiler regions):
torch -> ONNX -> relaykit -> Model Library Format, untarred, compiled with exactly
``cc -O2 -std=c99 -I codegen/host/include codegen/host/src/*.c main.c -lm`` and a
``main.c`` written here that prints the outputs; compared with onnxruntime; the binary
holds no Python or relaykit symbol; the metadata's workspace is the one static array.
(``benchmarks/aot_models.py`` runs the same flow on the full-size models.)"""

from __future__ import annotations

import io
import json
import re
import subprocess
import tarfile

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import partition_for

from .conftest import CC, aot_build

torch = pytest.importorskip("torch", reason="torch writes the ONNX models")
onnx = pytest.importorskip("onnx", reason="the ONNX frontend needs onnx")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
nn = torch.nn

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (gcc or cc) on PATH")

_MAIN = r"""
#include <stdio.h>
#include <stdint.h>
#include "tvmgen_default.h"
%(buffers)s
int main(void) {
  struct tvmgen_default_inputs in;
  struct tvmgen_default_outputs out;
  FILE *f;
%(fill)s
  if (tvmgen_default_run(&in, &out) != 0) return 3;
%(print)s
  return 0;
}
"""


def _cbr(cin, cout, k, s, groups=1):
    return [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout),
            nn.ReLU6()]  # fmt: skip


class _Inverted(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hid = cin * expand
        layers = _cbr(cin, hid, 1, 1) if expand != 1 else []
        layers += [*_cbr(hid, hid, 3, stride, hid), nn.Conv2d(hid, cout, 1, bias=False),
                   nn.BatchNorm2d(cout)]  # fmt: skip
        self.conv = nn.Sequential(*layers)
        self.res = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.res else self.conv(x)


class _MobileNetV2(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = [(1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2)]
        layers, cin = _cbr(3, 8, 3, 2), 8
        for t, c, n, s in cfg:
            for i in range(n):
                layers.append(_Inverted(cin, c, s if i == 0 else 1, t))
                cin = c
        self.features = nn.Sequential(*layers, *_cbr(cin, 64, 1, 1))
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


class _Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class _ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))  # fmt: skip
        self.layers = nn.Sequential(_Block(8, 8, 1), _Block(8, 16, 2), _Block(16, 16, 1))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        y = nn.functional.adaptive_avg_pool2d(self.layers(self.stem(x)), 1)
        return self.fc(torch.flatten(y, 1))


class _Bert(nn.Module):
    def __init__(self, vocab=60, d=32, seq=10):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.ln = nn.LayerNorm(d)
        self.enc = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, activation="gelu", batch_first=True),
            num_layers=2, enable_nested_tensor=False,
        )  # fmt: skip
        self.pool = nn.Linear(d, d)
        self.register_buffer("ids", torch.arange(seq)[None])

    def forward(self, x):
        h = self.enc(self.ln(self.tok(x) + self.pos(self.ids)))
        return torch.tanh(self.pool(h[:, 0])), h


class _PartCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, 1, 1), nn.Conv2d(8, 8, 3, 1, 1)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        y = nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
        y = nn.functional.max_pool2d(torch.tanh(self.c2(y)), 2)
        return torch.softmax(self.fc(torch.flatten(y, 1)), -1)


def _mlp():
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 16), nn.GELU(),
                         nn.Linear(16, 4))  # fmt: skip


FAMILIES = {
    "mlp": (_mlp, (3, 20), False),
    "resnet": (_ResNet, (1, 3, 32, 32), False),
    "mobilenet_v2": (_MobileNetV2, (1, 3, 32, 32), False),
    "bert_like": (_Bert, (1, 10), True),
    "ccompiler": (_PartCNN, (1, 3, 16, 16), False),
}


def _export(family):
    make, shape, ids = FAMILIES[family]
    torch.manual_seed(0)
    model = make().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    x = torch.randint(0, 60, shape) if ids else torch.randn(*shape)
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, input_names=["x"], opset_version=17, dynamo=False)
    return buf.getvalue(), x.numpy()


def _print_stmt(k, shape, dtype):
    n = int(np.prod(shape))
    fmt, ctype = ("%.9g", "float") if dtype == "float32" else ("%lld", "int64_t")
    return f'  for (int i = 0; i < {n}; ++i) printf("{fmt}\\n", (({ctype} *)ob{k})[i]);'


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_deploy_matches_onnxruntime(family, tmp_path):
    blob, x = _export(family)
    wants = ort.InferenceSession(blob).run(None, {"x": x})
    mod, params = relay.frontend.from_onnx(onnx.load_from_string(blob), {"x": x.shape})
    if family == "ccompiler":
        mod, params = partition_for(mod, "ccompiler", params), None
        assert 'Compiler="ccompiler"' in str(mod)
    lib = aot_build(mod, params)
    tvm.micro.export_model_library_format(lib, tmp_path / "model.tar")
    root = tmp_path / "mlf"
    with tarfile.open(tmp_path / "model.tar") as t:
        t.extractall(root, filter="data")
    if family == "ccompiler":
        assert (root / "codegen/host/src/default_lib2.c").exists()
    meta = json.loads((root / "metadata.json").read_text())["modules"]["default"]
    header = (root / "codegen/host/include/tvmgen_default.h").read_text()
    (in_name,) = re.findall(r"void \*(\w+);", header.split("_inputs {")[1].split("};")[0])
    out_names = re.findall(r"void \*(\w+);", header.split("_outputs {")[1].split("};")[0])
    assert len(out_names) == len(wants)
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    bufs = [f"static uint64_t ib[{x.nbytes // 8 + 1}];"]
    fill = [f"  in.{in_name} = ib;",
            f'  if (!(f = fopen("in.bin", "rb")) || fread(ib, 1, {x.nbytes}, f) != {x.nbytes}) '
            "return 1;", "  fclose(f);"]  # fmt: skip
    prints = []
    for k, (name, want) in enumerate(zip(out_names, wants, strict=True)):
        bufs.append(f"static uint64_t ob{k}[{want.nbytes // 8 + 1}];")
        fill.append(f"  out.{name} = ob{k};")
        prints.append(_print_stmt(k, want.shape, str(want.dtype)))
    (root / "main.c").write_text(_MAIN % {"buffers": "\n".join(bufs), "fill": "\n".join(fill),
                                          "print": "\n".join(prints)})  # fmt: skip
    cmd = f"{CC} -O2 -std=c99 -I codegen/host/include codegen/host/src/*.c main.c -lm -o model"
    res = subprocess.run(cmd, shell=True, cwd=root, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    run = subprocess.run(["./model"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         executable=str(root / "model"))  # fmt: skip
    assert run.returncode == 0, run.stderr
    values = np.array(run.stdout.split(), dtype=np.float64)
    assert values.size == sum(w.size for w in wants)
    pos = 0
    for want in wants:
        got = values[pos : pos + want.size].reshape(want.shape)
        pos += want.size
        err = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30)
        assert err < 1e-4, f"{family}: relative error {err}"

    symbols = subprocess.run(["nm", str(root / "model")], capture_output=True, text=True).stdout
    names = [line.split()[-1] for line in symbols.splitlines() if line.strip()]
    assert names and not [n for n in names if re.search(r"(?i)(^|_)(py|python|relaykit)", n)]

    src = "\n".join(p.read_text() for p in (root / "codegen/host/src").glob("*.c"))
    arrays = re.findall(r"^uint64_t (\w+)\[(\d+)\];", src, re.MULTILINE)
    assert [a for a, _ in arrays] == ["tvmgen_default_workspace"]
    assert meta["workspace_size_bytes"] == int(arrays[0][1]) * 8
    assert "malloc" not in src and "fopen" not in src
