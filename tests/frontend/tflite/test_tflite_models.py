"""TFLite models made by TensorFlow's converter (float, and full-integer quantized with
int8 and uint8 inputs and outputs) import with from_tflite, build for the host and match
TensorFlow's TFLite interpreter: float ones closely, quantized ones on at least 99% of
the elements and within one quantization step elsewhere, as QNN operators."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from relaykit import relay
from relaykit.ir.expr import Call
from relaykit.ir.functor import post_order

MODELS = ["cnn", "shapes", "deconv", "matmul"]


def _op_counts(mod) -> Counter:
    return Counter(
        n.op.name
        for n in post_order(mod["main"].body)
        if isinstance(n, Call) and hasattr(n.op, "name")
    )


@pytest.mark.parametrize("name", [*MODELS, "misc"])
def test_float_model_matches_the_interpreter(name, tfl, tflite_model, relay_build_run):
    buf = tflite_model(name, None)
    input_name, x = tfl.example_input(buf)
    want = tfl.tflite_run(buf, x)
    mod, params = relay.frontend.from_tflite(buf, {input_name: x.shape}, {input_name: "float32"})
    assert mod["main"].params[0].name_hint == input_name
    got = relay_build_run(mod, params, input_name, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def _check_quantized(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert diff.max() <= 1, f"{int((diff > 1).sum())} elements differ by more than one step"
    assert (diff == 0).mean() >= 0.99, f"only {(diff == 0).mean():.2%} equal"


@pytest.mark.parametrize("quantized", ["int8", "uint8"])
@pytest.mark.parametrize("name", MODELS)
def test_quantized_model_matches_the_interpreter(
    name, quantized, tfl, tflite_model, relay_build_run
):
    if name != "cnn" and quantized == "uint8":
        pytest.skip("uint8 input and output are checked on one model (the cnn) to keep it fast")
    buf = tflite_model(name, quantized)
    input_name, x = tfl.example_input(buf)
    # TFLite's optimized int8 BATCH_MATMUL drops the right operand's zero point; its
    # reference kernel (the operator's definition) applies it, as relaykit does
    want = tfl.tflite_run(buf, x, reference=name == "matmul")
    mod, params = relay.frontend.from_tflite(buf, {input_name: x.shape}, {input_name: quantized})
    counts = _op_counts(mod)
    used = tfl.operators(buf)
    if "CONV_2D" in used or "DEPTHWISE_CONV_2D" in used:
        assert counts["qnn.conv2d"] >= 1
    if "FULLY_CONNECTED" in used:
        assert counts["qnn.dense"] >= 1
    if "TRANSPOSE_CONV" in used:
        assert counts["qnn.conv2d_transpose"] >= 1
    if "BATCH_MATMUL" in used:
        assert counts["qnn.batch_matmul"] >= 1
    assert counts["qnn.requantize"] >= 1
    assert counts["nn.conv2d"] == 0 and counts["nn.dense"] == 0, "no float convolution"
    got = relay_build_run(mod, params, input_name, x)
    _check_quantized(got, want)


def test_uint8_quantization_aware_model_matches_the_interpreter(tfl, tflite_model, relay_build_run):
    buf = tflite_model("uint8_qat", None)
    assert 9 not in tfl.constant_dtypes(buf) and 3 in tfl.constant_dtypes(buf), "uint8 weights"
    input_name, x = tfl.example_input(buf)
    assert x.dtype == np.uint8
    want = tfl.tflite_run(buf, x)
    mod, params = relay.frontend.from_tflite(buf, {input_name: x.shape}, {input_name: "uint8"})
    counts = _op_counts(mod)
    assert counts["qnn.conv2d"] == 2 and counts["nn.conv2d"] == 0
    _check_quantized(relay_build_run(mod, params, input_name, x), want)


def test_quantized_model_runs_with_dnnl(tfl, tflite_model, relay_build_run, dnnl_available):
    if not dnnl_available:
        pytest.skip("oneDNN is not installed")
    from relaykit.relay.op.contrib.dnnl import partition_for_dnnl

    buf = tflite_model("cnn", "int8")
    input_name, x = tfl.example_input(buf)
    want = tfl.tflite_run(buf, x)
    mod, params = relay.frontend.from_tflite(buf, {input_name: x.shape}, {input_name: "int8"})
    part = partition_for_dnnl(mod, params)
    assert "dnnl" in part.astext(show_meta_data=False)
    _check_quantized(relay_build_run(part, params, input_name, x), want)


@pytest.mark.parametrize("variant", ["int8-float", "float16"])
def test_float_io_variants_match_the_interpreter(variant, tfl, tflite_model, relay_build_run):
    """Full-integer quantized with float input and output (QUANTIZE and DEQUANTIZE at
    the edges), and float16 weights (DEQUANTIZE of constants, widened at import)."""
    buf = tflite_model("cnn", variant)
    assert "DEQUANTIZE" in tfl.operators(buf)
    input_name, x = tfl.example_input(buf)
    want = tfl.tflite_run(buf, x)
    mod, params = relay.frontend.from_tflite(buf, {input_name: x.shape}, {input_name: "float32"})
    got = relay_build_run(mod, params, input_name, x)
    if variant == "float16":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    else:  # the output's quantization step
        assert _op_counts(mod)["qnn.conv2d"] >= 1
        step = float(np.abs(np.diff(np.unique(want))).min())
        assert np.abs(got - want).max() <= step * 1.01


def test_dynamic_range_quantized_model_runs_in_float(tfl, tflite_model, relay_build_run):
    """int8 weights on float activations: the weights are dequantized at import and the
    model runs in float; TFLite's hybrid kernels quantize the activations on the fly, so
    they agree to within that quantization (a few percent of the output's range)."""
    name = "cnn"  # (TFLite leaves weights under 1024 elements in float)
    buf = tflite_model(name, "dynamic")
    assert 9 in tfl.constant_dtypes(buf), "the model holds int8 weights"
    input_name, x = tfl.example_input(buf)
    want = tfl.tflite_run(buf, x)
    mod, params = relay.frontend.from_tflite(buf, {input_name: x.shape}, {input_name: "float32"})
    got = relay_build_run(mod, params, input_name, x)
    float_buf = tflite_model(name, None)
    exact = tfl.tflite_run(float_buf, x)
    scale = float(np.abs(exact).max())
    assert np.abs(got - want).max() <= 0.05 * scale
    assert np.abs(got - exact).max() <= 0.05 * scale


def test_the_models_cover_the_converters(tfl, tflite_model):
    used: set[str] = set()
    for name in MODELS:
        used |= tfl.operators(tflite_model(name, None)) | tfl.operators(tflite_model(name, "int8"))
    used |= tfl.operators(tflite_model("cnn", "uint8")) | tfl.operators(tflite_model("misc"))
    used |= tfl.operators(tflite_model("cnn", "int8-float"))
    wanted = {
        "CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED", "AVERAGE_POOL_2D",
        "MAX_POOL_2D", "MEAN", "RESHAPE", "SOFTMAX", "LOGISTIC", "TANH", "RELU6", "LEAKY_RELU",
        "HARD_SWISH", "PRELU", "ADD", "SUB", "MUL", "CONCATENATION", "PAD", "RESIZE_BILINEAR",
        "RESIZE_NEAREST_NEIGHBOR", "TRANSPOSE", "STRIDED_SLICE", "SLICE", "SPLIT", "GATHER",
        "BATCH_MATMUL", "QUANTIZE", "DEQUANTIZE", "MIRROR_PAD", "SPLIT_V", "PACK", "UNPACK",
        "TILE", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "ARG_MAX", "MAXIMUM", "MINIMUM", "GREATER",
        "CAST",
    }  # fmt: skip
    assert not wanted - used, sorted(wanted - used)
