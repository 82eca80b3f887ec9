"""relay.quantize on a ResNet-18 (random weights, random calibration data): where
annotation.stop_fusion goes, printing and parsing back, every executor, accuracy
against the float model, and multi-layer regions for an int8 backend."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import configure_target, partition_for, scoped_registries

SHAPE = (1, 3, 32, 32)


@pytest.fixture(scope="module")
def resnet():
    mod, params = relay.testing.resnet.get_workload(
        num_layers=18, batch_size=1, image_shape=SHAPE[1:], num_classes=10
    )
    return mod, params


@pytest.fixture(scope="module")
def quantized(resnet):
    mod, params = resnet
    cfg = relay.quantize.qconfig(calibrate_mode="global_scale", global_scale=8.0)
    with tvm.transform.PassContext(opt_level=3), cfg:
        return relay.quantize.quantize(mod, params)


def _calls(func):
    out = []
    relay.analysis.post_order_visit(
        func, lambda n: out.append(n) if isinstance(n, relay.Call) else None
    )
    return [c for c in out if isinstance(c.op, tvm.ir.Op)]


def test_stop_fusion_sits_where_tvm_puts_it(quantized):
    calls = _calls(quantized["main"])
    stops = [c for c in calls if c.op.name == "annotation.stop_fusion"]
    assert stops
    for s in stops:
        arg = s.args[0]
        if isinstance(arg, relay.Constant):
            continue  # a rescaled bias of an integer add (TVM's AddRealize)
        # a section's exit: its int8 cast, or the float value entering quantization
        # (the skipped first conv's output, as skip_conv_layers=[0] leaves it)
        assert isinstance(arg, relay.Call)
        is_exit = arg.op.name == "cast" and arg.attrs.dtype == "int8"
        is_entry = arg.checked_type.dtype == "float32"
        assert is_exit or is_entry, arg
    convs = [c for c in calls if c.op.name == "nn.conv2d"]
    int8_convs = [c for c in convs if c.args[0].checked_type.dtype == "int8"]
    assert len(convs) == 21 and len(int8_convs) == 20  # the first conv stays in float
    # every int8 conv reads a section exit (behind stop_fusion) or the input quantization
    assert "annotation.stop_fusion" in quantized.astext()


def test_prints_parses_back_and_runs_on_every_executor(quantized):
    text = quantized.astext(show_meta_data=True)
    back = tvm.relay.parse(text)
    assert tvm.ir.structural_equal(back, quantized)
    data = np.random.default_rng(0).uniform(-1, 1, SHAPE).astype("float32")
    results = [
        relay.create_executor(kind, mod=m).evaluate()(data).numpy()
        for kind in ("graph", "vm", "debug")
        for m in (quantized, back)
    ]
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], rtol=1e-6, atol=1e-7)


def _logits(mod):
    body = mod["main"].body
    assert body.op.name == "nn.softmax"
    return tvm.IRModule.from_expr(
        relay.Function(relay.analysis.free_vars(body.args[0]), body.args[0])
    )


def test_quantized_logits_are_close_to_float(resnet):
    """Each int8 quantization of a value clipped at threshold t adds an error of RMS
    t / (127 * sqrt(12)), about 1% of a value whose RMS is t / 4 (percentile thresholds
    sit near 4 sigma); some twenty quantization points in series add up in quadrature to
    about 5%. 10% relative error is the 8-bit bound with a margin of two; 4-bit inputs
    (16x coarser steps) must do worse."""
    mod, params = resnet
    lmod = _logits(mod)
    rng = np.random.default_rng(1)
    dataset = [{"data": rng.uniform(-1, 1, SHAPE).astype("float32")} for _ in range(4)]
    data = rng.uniform(-1, 1, SHAPE).astype("float32")
    ref = relay.create_executor("graph", mod=lmod).evaluate()(data, **params).numpy()

    def error(**cfg):
        qcfg = relay.quantize.qconfig(calibrate_mode="percentile", **cfg)
        with tvm.transform.PassContext(opt_level=3), qcfg:
            q = relay.quantize.quantize(lmod, params, dataset)
        got = relay.create_executor("graph", mod=q).evaluate()(data).numpy()
        return np.linalg.norm(got - ref) / np.linalg.norm(ref)

    err8 = error()
    assert err8 < 0.10
    assert error(nbit_input=4, nbit_weight=4) > 2 * err8


INTEGER_OPS = [
    "nn.conv2d",
    "add",
    "multiply",
    "right_shift",
    "left_shift",
    "clip",
    "cast",
    "nn.relu",
]


def _integers_only(call):
    types = [a.checked_type for a in call.args] + [call.checked_type]
    return all(getattr(t, "dtype", "") in ("int8", "int32") for t in types)


def _regions(mod, transparent=None):
    with scoped_registries():
        for op in INTEGER_OPS:  # no rule for annotation.stop_fusion
            tvm.ir.register_op_attr(op, "target.int8lib", _integers_only)
        if transparent is not None:
            configure_target("int8lib", transparent_ops=transparent)
        part = partition_for(mod, "int8lib")
    return part, [gv for gv, f in part.items() if f.attrs.get("Compiler") == "int8lib"]


def test_int8_backend_gets_multi_layer_regions(quantized):
    part, regions = _regions(quantized)
    assert len(regions) == 1  # every integer layer of the network, in one region
    inner = _calls(part[regions[0]])
    assert sum(c.op.name == "nn.conv2d" for c in inner) == 20
    assert sum(c.op.name == "annotation.stop_fusion" for c in inner) > 20
    # with stop_fusion opaque (TVM's behaviour), the regions fall apart layer by layer
    _, split = _regions(quantized, transparent=[])
    assert len(split) > 20
    # running such a region with exact integer kernels: docs/int8-backend.md (its example
    # runs in tests/test_docs.py and checks the offloaded model bit for bit)
