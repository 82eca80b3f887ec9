"""torch.ao-quantized models through ``from_pytorch``: eager-mode (QuantStub / fuse /
prepare / convert) and FX (prepare_fx / convert_fx) models, traced, imported to QNN,
built and run; the integers are compared with torch's own quantized kernels."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.ao.quantization import (  # noqa: E402
    DeQuantStub,
    QuantStub,
    fuse_modules,
    get_default_qconfig,
    get_default_qconfig_mapping,
)
from torch.ao.quantization import convert as ao_convert  # noqa: E402
from torch.ao.quantization import prepare as ao_prepare  # noqa: E402
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx  # noqa: E402

import relaykit as tvm  # noqa: E402
from relaykit import relay  # noqa: E402
from relaykit.contrib import graph_executor  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")


def quantize_eager(model: nn.Module, x: Any, fuse: list[list[str]] | None = None,
                   engine: str = "x86", per_channel: bool = True) -> nn.Module:  # fmt: skip
    model.eval()
    if fuse:
        fuse_modules(model, fuse, inplace=True)
    if per_channel:
        model.qconfig = get_default_qconfig(engine)
    else:
        from torch.ao.quantization.observer import (
            MovingAverageMinMaxObserver,
            default_weight_observer,
        )

        act = MovingAverageMinMaxObserver.with_args(reduce_range=False)
        model.qconfig = torch.ao.quantization.QConfig(
            activation=act, weight=default_weight_observer
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ao_prepare(model, inplace=True)
        for _ in range(3):
            model(x * 1.5)  # calibrate on a wider range than the test input
        ao_convert(model, inplace=True)
    return model


def quantize_fx(model: nn.Module, x: Any) -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = prepare_fx(model.eval(), get_default_qconfig_mapping("x86"), (x,))
        prepared(x * 1.5)
        return convert_fx(prepared)


def run_all(script: Any, x: np.ndarray, keep: bool = False, dnnl: bool = False) -> list[np.ndarray]:
    mod, params = relay.frontend.from_pytorch(script, [("x", x.shape)], keep_quantized_weight=keep)
    if dnnl:
        mod = relay.op.contrib.dnnl.partition_for_dnnl(mod, params)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x)
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


def run(script: Any, x: np.ndarray, keep: bool = False, dnnl: bool = False) -> np.ndarray:
    return run_all(script, x, keep, dnnl)[0]


def assert_ints_match(got: np.ndarray, want: Any) -> None:
    """torch's quantized output ``want``: the integers equal on >= 99% of elements and
    one step off elsewhere."""
    ref = want.int_repr().numpy()
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, got.shape, ref.shape)
    diff = np.abs(got.astype(np.int64) - ref.astype(np.int64))
    assert diff.max() <= 1, f"off by {diff.max()} steps"
    assert (diff == 0).mean() >= 0.99, f"only {(diff == 0).mean():.4f} equal"


def assert_floats_close(got: np.ndarray, want: Any, rtol: float = 2e-2) -> None:
    ref = want.detach().numpy()
    assert got.shape == ref.shape
    err = np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-6)
    assert err <= rtol, f"relative error {err:.3e}"


def trace(model: nn.Module, x: Any) -> Any:
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.trace(model, x).eval()


# -- eager-mode models with a quantized output (the integers compared) -----------------------
class QResBlock(nn.Module):
    """A ResNet basic block as torch.ao eager mode wants it (FloatFunctional add)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )
        self.add = nn.quantized.FloatFunctional()

    def forward(self, x: Any) -> Any:
        y = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        short = x if self.down is None else self.down(x)
        return self.add.add_relu(y, short)

    def fuse(self) -> None:
        fuse_modules(self, [["conv1", "bn1", "relu1"], ["conv2", "bn2"]], inplace=True)
        if self.down is not None:
            fuse_modules(self.down, [["0", "1"]], inplace=True)


class QResNet18(nn.Module):
    """ResNet-18 (narrow) for eager-mode quantization; returns quantized logits."""

    def __init__(self, width: int = 8, classes: int = 10) -> None:
        super().__init__()
        self.quant = QuantStub()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(3, 2, 1)
        blocks, cin = [], width
        for i, n in enumerate([2, 2, 2, 2]):
            cout = width * 2**i
            for j in range(n):
                blocks.append(QResBlock(cin, cout, 2 if (j == 0 and i > 0) else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: Any) -> Any:
        x = self.pool(self.relu(self.bn1(self.conv1(self.quant(x)))))
        features = self.blocks(x)
        return features, self.fc(self.avg(features).flatten(1))

    def fuse(self) -> None:
        fuse_modules(self, [["conv1", "bn1", "relu"]], inplace=True)
        for b in self.blocks:
            b.fuse()


class QInverted(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hid = cin * expand
        self.res = stride == 1 and cin == cout
        self.conv = nn.Sequential(
            nn.Conv2d(cin, hid, 1, bias=False),
            nn.BatchNorm2d(hid),
            nn.ReLU(),
            nn.Conv2d(hid, hid, 3, stride, 1, groups=hid, bias=False),
            nn.BatchNorm2d(hid),
            nn.ReLU(),
            nn.Conv2d(hid, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.add = nn.quantized.FloatFunctional()

    def forward(self, x: Any) -> Any:
        return self.add.add(x, self.conv(x)) if self.res else self.conv(x)

    def fuse(self) -> None:
        fuse_modules(self.conv, [["0", "1", "2"], ["3", "4", "5"], ["6", "7"]], inplace=True)


class QMobileNetV2(nn.Module):
    """MobileNetV2 (width 1/4) for eager-mode quantization, with a hardswish head."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.quant = QuantStub()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU()
        )
        cfg = [(1, 8, 1, 1), (6, 8, 2, 2), (6, 16, 3, 2), (6, 24, 2, 2), (6, 32, 1, 1)]
        layers, cin = [], 8
        for t, c, n, s in cfg:
            for i in range(n):
                layers.append(QInverted(cin, c, s if i == 0 else 1, t))
                cin = c
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(
            nn.Conv2d(cin, 64, 1, bias=False), nn.BatchNorm2d(64), nn.Hardswish()
        )
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(64, classes)
        self.dequant = DeQuantStub()

    def forward(self, x: Any) -> Any:
        x = self.head(self.features(self.stem(self.quant(x))))
        return self.dequant(self.fc(self.drop(torch.flatten(self.avg(x), 1))))

    def fuse(self) -> None:
        fuse_modules(self.stem, [["0", "1", "2"]], inplace=True)
        fuse_modules(self.head, [["0", "1"]], inplace=True)
        for m in self.features:
            m.fuse()


@pytest.fixture(scope="module")
def image() -> Any:
    torch.manual_seed(0)
    return torch.rand(1, 3, 64, 64)


@pytest.mark.parametrize("engine", ["x86", "fbgemm"])
def test_eager_resnet18_integers_match_torch(image: Any, engine: str) -> None:
    torch.manual_seed(1)
    model = QResNet18()
    model.eval()
    model.fuse()
    q = quantize_eager(model, image, engine=engine)
    script = trace(q, image)
    features, logits = run_all(script, image.numpy())
    want_features, want_logits = script(image)
    assert_ints_match(features, want_features)
    assert np.abs(logits.astype(np.int64) - want_logits.int_repr().numpy()).max() <= 1


def test_eager_mobilenet_v2_matches_torch(image: Any) -> None:
    torch.manual_seed(2)
    model = QMobileNetV2()
    model.eval()
    model.fuse()
    q = quantize_eager(model, image)
    script = trace(q, image)
    got = run(script, image.numpy())
    assert_floats_close(got, script(image))


def test_fx_resnet18_and_mobilenet_v2(zoo: Any, image: Any) -> None:
    torch.manual_seed(3)
    for model in (zoo.resnet18(num_classes=10, width=8), zoo.mobilenet_v2(10, width_mult=0.25)):
        q = quantize_fx(model, image)
        script = trace(q, image)
        mod, _ = relay.frontend.from_pytorch(script, [("x", image.shape)])
        text = mod.astext(show_meta_data=False)
        assert "qnn.conv2d" in text and "qnn.dense" in text
        assert_floats_close(run(script, image.numpy()), script(image))


@pytest.mark.parametrize("which", ["resnet18", "mobilenet_v2"])
def test_fx_models_with_dnnl(zoo: Any, image: Any, dnnl_available: bool, which: str) -> None:
    if not dnnl_available:
        pytest.skip("oneDNN is not installed: pip install relaykit[dnnl]")
    torch.manual_seed(4)
    model = (
        zoo.resnet18(num_classes=10, width=8)
        if which == "resnet18"
        else zoo.mobilenet_v2(10, width_mult=0.25)
    )
    script = trace(quantize_fx(model, image), image)
    want = script(image)
    dnnl = run(script, image.numpy(), dnnl=True)
    assert_floats_close(dnnl, want)
    np.testing.assert_allclose(dnnl, run(script, image.numpy()), rtol=0, atol=1e-6)


def test_eager_resnet18_integers_with_dnnl(image: Any, dnnl_available: bool) -> None:
    if not dnnl_available:
        pytest.skip("oneDNN is not installed: pip install relaykit[dnnl]")
    torch.manual_seed(1)
    model = QResNet18()
    model.eval()
    model.fuse()
    script = trace(quantize_eager(model, image), image)
    features, _ = run_all(script, image.numpy(), dnnl=True)
    assert_ints_match(features, script(image)[0])


# -- single quantized modules (each returns its quantized output: integers compared) ----------
class Wrapped(nn.Module):
    """``QuantStub -> body`` with the quantized result returned as it is."""

    def __init__(self, body: nn.Module, fuse: list[str] | None = None) -> None:
        super().__init__()
        self.quant = QuantStub()
        self.body = body
        self.fuse = fuse

    def forward(self, x: Any) -> Any:
        return self.body(self.quant(x))


class Functional(nn.Module):
    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.ff = nn.quantized.FloatFunctional()
        self.fn = fn

    def forward(self, x: Any) -> Any:
        return self.fn(self.ff, x)


class TwoBranch(nn.Module):
    """Two convolutions (different output scales) concatenated and multiplied."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, padding=1)
        self.b = nn.Conv2d(3, 4, 1)
        self.cat = nn.quantized.FloatFunctional()
        self.mul = nn.quantized.FloatFunctional()

    def forward(self, x: Any) -> Any:
        a, b = self.a(x), self.b(x)
        return self.mul.mul(self.cat.cat([a, b], 1), self.cat.cat([b, a], 1))


def _affine_layer_norm(width: int) -> nn.LayerNorm:
    ln = nn.LayerNorm(width)
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.5, 0.5)
    return ln


def _seq(*mods: nn.Module) -> nn.Sequential:
    return nn.Sequential(*mods)


MODULES = {
    "conv_bn": (
        lambda: _seq(nn.Conv2d(3, 16, 3, bias=True), nn.BatchNorm2d(16)),
        ["0", "1"],
        (1, 3, 32, 32),
    ),
    "conv_bn_relu": (
        lambda: _seq(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU()),
        ["0", "1", "2"],
        (1, 3, 32, 32),
    ),
    "conv_strided_grouped": (
        lambda: _seq(nn.Conv2d(4, 8, 3, 2, 2, dilation=2, groups=2)),
        None,
        (1, 4, 32, 32),
    ),
    "conv1d_relu": (
        lambda: _seq(nn.Conv1d(4, 8, 3, stride=2, padding=1), nn.ReLU()),
        ["0", "1"],
        (1, 4, 32),
    ),
    "linear": (lambda: _seq(nn.Linear(16, 32)), None, (16, 16)),
    "linear_relu": (lambda: _seq(nn.Linear(16, 32), nn.ReLU()), ["0", "1"], (16, 16)),
    "linear_3d": (lambda: _seq(nn.Linear(16, 8)), None, (2, 5, 16)),
    "conv_transpose": (lambda: _seq(nn.ConvTranspose2d(3, 8, 3, stride=2)), None, (1, 3, 16, 16)),
    "relu": (lambda: _seq(nn.ReLU()), None, (1, 3, 16, 16)),
    "relu6": (lambda: _seq(nn.ReLU6()), None, (1, 3, 16, 16)),
    "leaky_relu": (lambda: _seq(nn.LeakyReLU(0.1)), None, (1, 3, 16, 16)),
    "hardswish": (lambda: _seq(nn.Hardswish()), None, (1, 3, 16, 16)),
    "hardsigmoid": (lambda: _seq(nn.Hardsigmoid()), None, (1, 3, 16, 16)),
    "sigmoid": (lambda: _seq(nn.Sigmoid()), None, (1, 3, 16, 16)),
    "batch_norm": (lambda: _seq(nn.BatchNorm2d(3)), None, (1, 3, 16, 16)),
    "avgpool": (lambda: _seq(nn.AvgPool2d(2)), None, (1, 3, 16, 16)),
    "maxpool_flatten": (lambda: _seq(nn.MaxPool2d(2), nn.Flatten()), None, (1, 3, 16, 16)),
    "upsample_bilinear": (
        lambda: _seq(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)),
        None,
        (1, 3, 8, 8),
    ),
    "mul_scalar_negative": (
        lambda: Functional(lambda f, x: f.mul_scalar(x, -0.3)),
        None,
        (1, 3, 16, 16),
    ),
    "mul_scalar": (lambda: Functional(lambda f, x: f.mul_scalar(x, 2.5)), None, (1, 3, 16, 16)),
    "add_scalar": (lambda: Functional(lambda f, x: f.add_scalar(x, 0.25)), None, (1, 3, 16, 16)),
    "add_scalar_large": (
        lambda: Functional(lambda f, x: f.add_scalar(x, 3.0)),
        None,
        (1, 3, 16, 16),
    ),
    "cat_mul": (TwoBranch, None, (1, 3, 16, 16)),
    "layer_norm": (lambda: _seq(_affine_layer_norm(16)), None, (2, 5, 16)),
    "matmul": (
        lambda: Functional(lambda f, x: f.matmul(x, x.transpose(-1, -2))),
        None,
        (2, 6, 16),
    ),
}


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("name", sorted(MODULES))
def test_quantized_module_integers_match_torch(name: str, per_channel: bool) -> None:
    make, fuse, shape = MODULES[name]
    torch.manual_seed(5)
    body = make()
    if per_channel and name == "conv_transpose":
        pytest.skip("torch.ao quantizes transposed convolutions per tensor")
    model = Wrapped(body).eval()
    if fuse:
        fuse_modules(body, fuse, inplace=True)
    x = torch.rand(shape) * 2 - 0.5
    engine = torch.backends.quantized.engine
    if name == "conv_transpose":
        # torch's x86 engine computes quantized conv_transpose2d unlike its own float
        # definition (dequantize -> conv_transpose2d -> quantize); fbgemm agrees with it
        torch.backends.quantized.engine = "fbgemm"
    try:
        q = quantize_eager(model, x, per_channel=per_channel)
        script = trace(q, x)
        want = script(x)
    finally:
        torch.backends.quantized.engine = engine
    assert_ints_match(run(script, x.numpy()), want)


def test_keep_quantized_weight_gives_int_params_and_the_same_result() -> None:
    torch.manual_seed(6)
    body = _seq(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()).eval()
    fuse_modules(body, ["0", "1", "2"], inplace=True)
    x = torch.rand(1, 3, 16, 16)
    script = trace(quantize_eager(Wrapped(body).eval(), x), x)
    _, params = relay.frontend.from_pytorch(script, [("x", x.shape)], keep_quantized_weight=True)
    assert sorted(p.dtype for p in params.values()) == ["int32", "int8"]
    _, float_params = relay.frontend.from_pytorch(script, [("x", x.shape)])
    assert sorted(p.dtype for p in float_params.values()) == ["float32", "float32"]
    kept = run(script, x.numpy(), keep=True)
    np.testing.assert_array_equal(kept, run(script, x.numpy()))
    assert_ints_match(kept, script(x))


@pytest.mark.parametrize("shape", [(16, 16), (10, 16, 16)])
@pytest.mark.parametrize("per_channel", [False, True])
def test_dynamic_linear_matches_torch(shape: tuple[int, ...], per_channel: bool) -> None:
    torch.manual_seed(7)
    model = _seq(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).eval()
    qconfig = (torch.ao.quantization.per_channel_dynamic_qconfig if per_channel
               else torch.ao.quantization.default_dynamic_qconfig)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.ao.quantization.quantize_dynamic(model, {nn.Linear: qconfig}, dtype=torch.qint8)
    x = torch.randn(*shape)
    script = trace(q, x)
    got = run(script, x.numpy())
    np.testing.assert_allclose(got, script(x).numpy(), rtol=1e-4, atol=1e-4)


def test_saved_and_loaded_script(tmp_path: Any) -> None:
    torch.manual_seed(8)
    model = Wrapped(_seq(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d((1, 1)))).eval()
    x = torch.rand(1, 3, 16, 16)
    script = trace(quantize_eager(model, x), x)
    path = tmp_path / "q.pt"
    torch.jit.save(script, str(path))
    loaded = torch.jit.load(str(path))
    assert_ints_match(run(loaded, x.numpy()), loaded(x))


# -- exported programs: quantized_decomposed quantize / dequantize ------------------------------
class DecomposedQDQ(nn.Module):
    """The QDQ form torch.export gives quantized models: integer weights, quantize /
    dequantize pairs (per tensor and per channel, a narrowed int8 range) around float ops."""

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(9)
        w = torch.randint(-127, 128, (8, 3, 3, 3), dtype=torch.int8, generator=gen)
        self.register_buffer("w", w)
        self.register_buffer("w_scale", torch.rand(8, generator=gen) * 0.01 + 1e-3)

    def forward(self, x: Any) -> Any:
        qd = torch.ops.quantized_decomposed
        q = qd.quantize_per_tensor(x, 0.02, 3, 0, 255, torch.uint8)
        xd = qd.dequantize_per_tensor(q, 0.02, 3, 0, 255, torch.uint8)
        zps = torch.zeros(8, dtype=torch.int64)
        wd = qd.dequantize_per_channel(self.w, self.w_scale, zps, 0, -127, 127, torch.int8)
        y = torch.relu(torch.nn.functional.conv2d(xd, wd, padding=1))
        return qd.quantize_per_tensor(y, 0.05, -128, -127, 127, torch.int8)


def test_exported_program_with_decomposed_quantize_dequantize() -> None:
    importlib.import_module("torch.ao.quantization.fx._decomposed")  # registers the ops

    model = DecomposedQDQ().eval()
    x = torch.rand(1, 3, 16, 16) * 2 - 0.5
    ep = torch.export.export(model, (x,))
    mod, params = relay.frontend.from_exported_program(ep)
    text = mod.astext(show_meta_data=False)
    assert text.count("qnn.quantize") == 2 and text.count("qnn.dequantize") == 2
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input(0, x.numpy())
    m.run()
    got = m.get_output(0).numpy()
    want = model(x).numpy()
    assert got.dtype == np.int8 and got.min() >= -127
    diff = np.abs(got.astype(np.int64) - want)
    assert diff.max() <= 1 and (diff == 0).mean() >= 0.99


# -- errors -----------------------------------------------------------------------------------


def test_a_quantized_tensor_where_relaykit_has_no_rule_names_the_op() -> None:
    class TopK(nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.topk(torch.quantize_per_tensor(x, 0.1, 0, torch.quint8), 2)[0]

    x = torch.rand(1, 8)
    script = trace(TopK(), x)
    with pytest.raises(tvm.errors.FrontendError, match=r"aten::topk on a quantized tensor"):
        relay.frontend.from_pytorch(script, [("x", x.shape)])


def test_zero_point_out_of_range_is_refused_naming_the_node() -> None:
    class BadZeroPoint(nn.Module):
        def forward(self, x: Any) -> Any:
            q = torch.ops.quantized_decomposed.quantize_per_tensor(x, 0.1, 300, 0, 255, torch.uint8)
            return q

    importlib.import_module("torch.ao.quantization.fx._decomposed")

    x = torch.rand(1, 8)
    ep = torch.export.export(BadZeroPoint(), (x,))
    with pytest.raises(tvm.errors.RelayKitError, match=r"quantize_per_tensor.*zero.point"):
        relay.frontend.from_exported_program(ep)


class DirectOps(nn.Module):
    """torch's quantized operators called directly: weights prepacked in the graph from
    quantized tensor attributes, and the fused ``_relu`` forms."""

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(10)
        w = torch.randn(6, 3, 3, 3, generator=gen) * 0.3
        self.register_buffer(
            "wq", torch.quantize_per_channel(w, w.abs().amax((1, 2, 3)) / 127,
                                             torch.zeros(6, dtype=torch.long), 0, torch.qint8)
        )  # fmt: skip
        self.register_buffer("b", torch.randn(6, generator=gen) * 0.1)
        lw = torch.randn(5, 12 * 4 * 4, generator=gen) * 0.05
        self.register_buffer("lwq", torch.quantize_per_tensor(lw, 0.002, 0, torch.qint8))
        self.register_buffer("lb", torch.randn(5, generator=gen) * 0.1)
        for name in ("gamma", "beta", "mean"):
            self.register_buffer(name, torch.randn(6, generator=gen) * 0.2 + (name == "gamma"))
        self.register_buffer("var", torch.rand(6, generator=gen) + 0.5)

    def forward(self, x: Any) -> Any:
        ops = torch.ops.quantized
        q = torch.quantize_per_tensor(x, 0.02, 10, torch.quint8)
        packed = ops.conv2d_prepack(self.wq, self.b, [2, 2], [1, 1], [1, 1], 1)
        c = ops.conv2d(q, packed, 0.05, 60)
        bn = ops.batch_norm2d_relu(c, self.gamma, self.beta, self.mean, self.var, 1e-5, 0.04, 0)
        s = ops.sigmoid(c, 1.0 / 256, 0)
        a = ops.add_relu(bn, s, 0.05, 5)
        m = ops.mul_relu(a, c, 0.1, 50)
        k = ops.cat_relu([m, a], 1, 0.08, 70)
        k = ops.add_scalar_relu(k, -0.5)
        k = ops.mul_scalar_relu(k, 0.7)
        pooled = torch.nn.functional.max_pool2d(k, 2).flatten(1)
        return k, ops.linear_relu(pooled, ops.linear_prepack(self.lwq, self.lb), 0.02, 0)


def test_direct_quantized_ops_with_prepacked_weights() -> None:
    model = DirectOps().eval()
    x = torch.rand(1, 3, 16, 16) * 2 - 0.5
    script = trace(model, x)
    kinds = {n.kind() for n in script.inlined_graph.nodes()}
    assert {"quantized::conv2d_prepack", "quantized::linear_prepack"} <= kinds
    features, out = run_all(script, x.numpy())
    want_features, want_out = script(x)
    assert_ints_match(features, want_features)
    assert np.abs(out.astype(np.int64) - want_out.int_repr().numpy()).max() <= 1


class Averages(nn.Module):
    """Averages of a quantized tensor with an odd zero point: torch rounds ``zp + mean``
    half to even, and the ties are common."""

    def forward(self, x: Any) -> Any:
        q = torch.quantize_per_tensor(x, 0.05, 7, torch.quint8)
        return (
            q.mean((2, 3), keepdim=True),
            torch.nn.functional.adaptive_avg_pool2d(q, (3, 3)),
            torch.nn.functional.avg_pool2d(q, 3, 2, 1),
            torch.nn.functional.adaptive_avg_pool2d(q, 1),
        )


def test_averages_of_quantized_tensors_round_as_torch() -> None:
    torch.manual_seed(11)
    x = torch.rand(2, 16, 10, 10) * 3
    script = trace(Averages(), x)
    for got, want in zip(run_all(script, x.numpy()), script(x), strict=True):
        assert_ints_match(got, want)
