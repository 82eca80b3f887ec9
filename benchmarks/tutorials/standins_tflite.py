"""Stand-ins for what the TFLite tutorials download (``from_tflite``,
``deploy_prequantized_tflite``): the same architectures with random weights, converted by
TensorFlow's own TFLite converter, in archives laid out like the originals.

- ``mobilenet_v1_1.0_224.tgz``: ``mobilenet_v1_1.0_224.tflite``, a float MobileNetV1
  (``keras.applications.MobileNet(weights=None)``, 1001 classes like the original),
  input ``input`` of shape (1, 224, 224, 3);
- ``mobilenet_v2_1.0_224_quant.tgz``: ``mobilenet_v2_1.0_224_quant.tflite``, a MobileNetV2
  quantized by the converter with a representative dataset (random images), uint8 input
  ``input`` and uint8 output like the original;
- ``labels_mobilenet_quant_v1_224.txt``: 1001 numbered labels.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Callable

import numpy as np

__all__ = ["FILES"]

_SHAPE = (224, 224, 3)


def _rename_input(buf: bytes, name: str) -> bytes:
    """The model with its first input tensor renamed to ``name`` (the original models'
    input name; the converter names it after the Keras signature). The name is written
    over the old one in place, which is longer, so the flatbuffer's layout is unchanged."""
    import tflite

    data = bytearray(buf)
    model = tflite.Model.GetRootAsModel(bytes(data), 0)
    graph = model.Subgraphs(0)
    tensor = graph.Tensors(int(graph.Inputs(0)))
    slot = tensor._tab.Offset(10)  # Tensor.name
    loc = tensor._tab.Indirect(tensor._tab.Pos + slot)
    old = int.from_bytes(data[loc : loc + 4], "little")
    new = name.encode()
    if len(new) > old:
        raise ValueError(f"cannot rename an input of {old} bytes to {name!r}")
    data[loc : loc + 4] = len(new).to_bytes(4, "little")
    data[loc + 4 : loc + 5 + len(new)] = new + b"\0"
    return bytes(data)


def _normalise_batchnorms(model: object, images: np.ndarray) -> None:
    """Set each batch normalisation's moving statistics to those of its input on
    ``images``, layer after layer: with random weights and the default statistics (0 and
    1) the activations of a deep network vanish, and every class gets the same score."""
    import tensorflow as tf

    for layer in model.layers:  # type: ignore[attr-defined]
        if not isinstance(layer, tf.keras.layers.BatchNormalization):
            continue
        probe = tf.keras.Model(model.inputs, layer.input)  # type: ignore[attr-defined]
        x = np.asarray(probe(images, training=False))
        gamma, beta, _, _ = layer.get_weights()
        layer.set_weights([gamma, beta, x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2)) + 1e-3])


def _spread_logits(model: object, images: np.ndarray, std: float = 4.0) -> None:
    """Scale the classifier's weights so its logits spread like a trained model's (a
    standard deviation of ``std``): a random one scores every class alike, and the
    quantized softmax then ties on almost all of them."""
    import tensorflow as tf

    last = [layer for layer in model.layers if layer.get_weights()][-1]  # type: ignore[attr-defined]
    logits = tf.keras.Model(model.inputs, last.output)  # type: ignore[attr-defined]
    spread = float(np.asarray(logits(images, training=False)).std())
    kernel, *rest = last.get_weights()
    last.set_weights([kernel * (std / max(spread, 1e-6)), *rest])


def _keras_tflite(make: Callable[[], object], quantized: bool) -> bytes:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    model = make()
    images = np.random.default_rng(1).uniform(-1, 1, size=(2, *_SHAPE)).astype(np.float32)
    _normalise_batchnorms(model, images)
    _spread_logits(model, images)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if quantized:
        rng = np.random.default_rng(0)

        def representative() -> object:
            for _ in range(4):
                yield [rng.uniform(-1, 1, size=(1, *_SHAPE)).astype(np.float32)]

        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.uint8
        converter.inference_output_type = tf.uint8
    return _rename_input(converter.convert(), "input")


def _tgz(path: str, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))


def _mobilenet_v1(path: str) -> None:
    import tensorflow as tf

    def make() -> object:
        inp = tf.keras.Input(_SHAPE, batch_size=1)
        return tf.keras.applications.MobileNet(weights=None, classes=1001, input_tensor=inp)

    buf = _keras_tflite(make, quantized=False)
    _tgz(path, {"./mobilenet_v1_1.0_224.tflite": buf})


def _mobilenet_v2_quant(path: str) -> None:
    import tensorflow as tf

    def make() -> object:
        inp = tf.keras.Input(_SHAPE, batch_size=1)
        return tf.keras.applications.MobileNetV2(weights=None, classes=1001, input_tensor=inp)

    buf = _keras_tflite(make, quantized=True)
    _tgz(path, {"./mobilenet_v2_1.0_224_quant.tflite": buf})


def _labels(path: str) -> None:
    with open(path, "w") as f:
        f.writelines(["background\n", *(f"class {i}\n" for i in range(1, 1001))])


FILES: dict[tuple[str, str], Callable[[str], None]] = {
    ("tf/official", "mobilenet_v1_1.0_224.tgz"): _mobilenet_v1,
    ("tf/official", "mobilenet_v2_1.0_224_quant.tgz"): _mobilenet_v2_quant,
    ("data", "labels_mobilenet_quant_v1_224.txt"): _labels,
}
