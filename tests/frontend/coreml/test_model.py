"""Whole Core ML models: classifiers with image preprocessing, MLModel objects and
saved files, several outputs, and the errors of models relaykit cannot import."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.errors import FrontendError, UnsupportedOpError

from .conftest import ct, network, run_coreml
from .numpy_ref import softmax

C, H, W = 3, 6, 5


def _classifier(rng: np.random.Generator, bgr: bool):
    weight = rng.standard_normal((4, C * H * W)).astype(np.float32)

    def add(b):
        b.add_flatten("flat", 0, "image", "flat")
        b.add_inner_product("fc", weight, None, C * H * W, 4, False, "flat", "fc")
        b.add_softmax("prob", "fc", "probs")
        b.set_class_labels(list("abcd"), predicted_feature_name="label", prediction_blob="probs")
        b.set_pre_processing_parameters(
            image_input_names=["image"], is_bgr=bgr, red_bias=-1.0, green_bias=-2.0,
            blue_bias=-3.0, image_scale=0.5,
        )  # fmt: skip

    return network([("image", (C, H, W))], ["probs"], add, mode="classifier"), weight


@pytest.mark.parametrize("bgr", [True, False])
def test_classifier_with_image_scaler(rng, bgr):
    builder, weight = _classifier(rng, bgr)
    x = rng.uniform(0, 255, (1, C, H, W)).astype(np.float32)
    # the channel order of the image: B, G, R (or R, G, B)
    bias = np.array([-3.0, -2.0, -1.0] if bgr else [-1.0, -2.0, -3.0]).reshape(1, 3, 1, 1)
    pre = x.astype(np.float64) * 0.5 + bias
    want = softmax(pre.reshape(1, -1) @ weight.T)
    (got,) = run_coreml(ct.models.MLModel(builder.spec), {"image": x})  # the label is left out
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_model_from_a_file_with_a_batch(rng, tmp_path):
    builder, weight = _classifier(rng, True)
    path = str(tmp_path / "classifier.mlmodel")
    ct.models.utils.save_spec(builder.spec, path)
    x = rng.uniform(0, 255, (2, C, H, W)).astype(np.float32)
    bias = np.array([-3.0, -2.0, -1.0]).reshape(1, 3, 1, 1)
    want = softmax((x.astype(np.float64) * 0.5 + bias).reshape(2, -1) @ weight.T)
    (got,) = run_coreml(path, {"image": x}, shape={"image": (2, C, H, W)})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_mean_image_and_two_outputs(rng):
    mean = rng.standard_normal(C * H * W).astype(np.float32)

    def add(b):
        b.add_activation("relu", "RELU", "data", "relu")
        b.add_activation("neg", "LINEAR", "data", "neg", params=[-1.0, 0.0])

    builder = network([("data", (C, H, W))], ["relu", "neg"], add)
    step = builder.spec.neuralNetwork.preprocessing.add()
    step.featureName = "data"
    step.meanImage.meanImage.extend(mean.tolist())
    x = rng.standard_normal((1, C, H, W)).astype(np.float32)
    centred = x.astype(np.float64) - mean.reshape(1, C, H, W)
    relu, neg = run_coreml(builder.spec, {"data": x})
    np.testing.assert_allclose(relu, np.maximum(centred, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(neg, -centred, rtol=1e-5, atol=1e-6)


def test_params_are_the_weights(rng):
    from relaykit import relay

    builder, weight = _classifier(rng, True)
    mod, params = relay.frontend.from_coreml(builder.spec, {"image": (1, C, H, W)})
    np.testing.assert_array_equal(params["fc_weight"].numpy(), weight)
    names = [p.name_hint for p in mod["main"].params]
    assert names[0] == "image" and set(names[1:]) == set(params)


def test_unsupported_layers_are_listed_together():
    from relaykit import relay

    def add(b):
        b.add_sequence_repeat("rep", 2, "data", "rep")
        b.add_sequence_repeat("rep2", 2, "rep", "rep2")
        layer = b.nn_spec.layers.add()  # a custom layer, as a model with one carries it
        layer.name, layer.custom.className = "mine", "MyLayer"
        layer.input.append("rep2")
        layer.output.append("out")

    builder = network([("data", (4, 6, 6))], ["out"], add)
    with pytest.raises(UnsupportedOpError, match="sequenceRepeat: 2 layers") as err:
        relay.frontend.from_coreml(builder.spec)
    assert err.value.ops == {"sequenceRepeat": (2, "'rep'"), "custom": (1, "'mine'")}


def test_errors_name_the_layer_or_the_model_kind(rng):
    from relaykit import relay

    def add(b):
        b.add_split("split", "data", ["a", "b"])

    builder = network([("data", (3, 4, 4))], ["a"], add)
    with pytest.raises(FrontendError, match=r"layer 'split' \(split\).*3 channels"):
        relay.frontend.from_coreml(builder.spec)
    spec = ct.proto.Model_pb2.Model()
    spec.pipeline.SetInParent()
    with pytest.raises(FrontendError, match="NeuralNetwork.*'pipeline'"):
        relay.frontend.from_coreml(spec)
    with pytest.raises(FrontendError, match="MLModel"):
        relay.frontend.from_coreml([1, 2])


@pytest.mark.parametrize(("bits", "mode"), [(8, "linear"), (4, "linear"), (3, "linear_lut")])
def test_quantized_weights(rng, bits, mode):
    import copy

    from coremltools.models.neural_network import quantization_utils as qu

    from .numpy_ref import conv2d

    weight = rng.standard_normal((6, 3, 3, 3)).astype(np.float32)
    fc = rng.standard_normal((4, 6 * 5 * 4)).astype(np.float32)

    def add(b):
        b.add_convolution("conv", 3, 6, 3, 3, 1, 1, "valid", 1, weight.transpose(2, 3, 1, 0),
                          None, False, input_name="data", output_name="conv")  # fmt: skip
        b.add_flatten("flat", 0, "conv", "flat")
        b.add_inner_product("fc", fc, None, 6 * 5 * 4, 4, False, "flat", "out")

    builder = network([("data", (3, 7, 6))], ["out"], add)
    quantized = qu.quantize_weights(ct.models.MLModel(builder.spec), bits, mode).get_spec()
    assert len(quantized.neuralNetwork.layers[0].convolution.weights.rawValue) > 0
    # coremltools' own dequantization gives the reference weights
    plain = copy.deepcopy(quantized)
    qu._dequantize_nn_spec(plain.neuralNetwork)
    layers = plain.neuralNetwork.layers
    w = np.asarray(layers[0].convolution.weights.floatValue).reshape(6, 3, 3, 3)
    f = np.asarray(layers[2].innerProduct.weights.floatValue).reshape(4, -1)
    assert not np.array_equal(w, weight)  # the quantization changed them
    x = rng.standard_normal((1, 3, 7, 6)).astype(np.float32)
    want = conv2d(x, w, None, (1, 1), (0, 0, 0, 0)).reshape(1, -1) @ f.T
    (got,) = run_coreml(quantized, {"data": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
