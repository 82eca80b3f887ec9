"""Stand-ins for what ``from_coreml.py`` downloads: Apple's ``MobileNet.mlmodel``.

The same network as Apple's model (MobileNet v1, width 1.0, 224x224, converted from
Caffe): a BGR image input named ``image`` with its scaler (``0.017 * x`` minus the
ImageNet channel means), 3x3 convolutions with explicit padding, batchnorm and ReLU,
13 depthwise-separable blocks, global average pooling, a 1x1 convolution to 1000
classes and a softmax; a classifier whose outputs are ``classLabelProbs`` and
``classLabel``. Weights are random (He-scaled, seeded). The image and the label
dict the script also fetches are served by ``standins.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["FILES"]

# (output channels, stride) of the depthwise-separable blocks
_BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)]
_BLOCKS += [(512, 1)] * 5 + [(1024, 2), (1024, 1)]


def _conv_bn_relu(builder, rng, name, src, cin, cout, kernel, stride, groups):  # type: ignore[no-untyped-def]
    fan_in = cin // groups * kernel * kernel
    weight = rng.standard_normal((kernel, kernel, cin // groups, cout)) * np.sqrt(2 / fan_in)
    pad = kernel // 2
    builder.add_convolution(
        name, cin // groups, cout, kernel, kernel, stride, stride, "valid", groups,
        weight.astype(np.float32), None, False, input_name=src, output_name=name,
        padding_top=pad, padding_bottom=pad, padding_left=pad, padding_right=pad,
    )  # fmt: skip
    ones, zeros = np.ones(cout, np.float32), np.zeros(cout, np.float32)
    builder.add_batchnorm(f"{name}/bn", cout, ones, zeros, zeros, ones, name, f"{name}/bn")
    builder.add_activation(f"relu_{name}", "RELU", f"{name}/bn", f"relu_{name}")
    return f"relu_{name}"


def _mobilenet(path: str) -> None:
    import coremltools as ct
    from coremltools.models import datatypes
    from coremltools.models.neural_network import NeuralNetworkBuilder

    rng = np.random.default_rng(27)
    builder = NeuralNetworkBuilder(
        [("image", datatypes.Array(3, 224, 224))], [("classLabelProbs", None)], mode="classifier"
    )
    x = _conv_bn_relu(builder, rng, "conv1", "image", 3, 32, 3, 2, 1)
    cin = 32
    for i, (cout, stride) in enumerate(_BLOCKS):
        x = _conv_bn_relu(builder, rng, f"conv{i + 2}/dw", x, cin, cin, 3, stride, cin)
        x = _conv_bn_relu(builder, rng, f"conv{i + 2}/sep", x, cin, cout, 1, 1, 1)
        cin = cout
    builder.add_pooling("pool6", 7, 7, 1, 1, "AVERAGE", "VALID", x, "pool6", is_global=True)
    fc = rng.standard_normal((1, 1, 1024, 1000)) * np.sqrt(1 / 1024)
    builder.add_convolution(
        "fc7", 1024, 1000, 1, 1, 1, 1, "valid", 1, fc.astype(np.float32),
        np.zeros(1000, np.float32), True, input_name="pool6", output_name="fc7",
    )  # fmt: skip
    builder.add_softmax("prob", "fc7", "classLabelProbs")
    builder.set_class_labels(
        [f"class {i}" for i in range(1000)],
        predicted_feature_name="classLabel",
        prediction_blob="classLabelProbs",
    )
    builder.set_pre_processing_parameters(
        image_input_names=["image"], is_bgr=True, image_scale=0.017,
        blue_bias=-103.94 * 0.017, green_bias=-116.78 * 0.017, red_bias=-123.68 * 0.017,
    )  # fmt: skip
    ct.models.utils.save_spec(builder.spec, path)


FILES: dict[tuple[str, str], Callable[[str], None]] = {
    ("coreml", "mobilenet.mlmodel"): _mobilenet,
}
