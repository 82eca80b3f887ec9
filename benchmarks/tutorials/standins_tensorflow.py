"""Local stand-ins for what ``from_tensorflow.py`` downloads (TensorFlow's
InceptionV1 example): a frozen Inception-style ``GraphDef`` with random weights and
the original's interface (a string constant ``DecodeJpeg/contents`` decoded by
``DecodeJpeg``, then ``Cast``, ``ExpandDims``, ``ResizeBilinear`` to 299x299, the
``Sub``/``Mul`` normalisation, convolutions with batch normalisation,
an Inception block joined by ``Concat``, ``pool_3``, ``softmax/logits`` and the
``softmax`` output of 1008 classes), built with TensorFlow and saved with its output
shapes; and the label files in their formats (the label-map ``.pbtxt`` and the
``uid<TAB>name`` synset list). The test image is served by ``standins.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["FILES"]

_CLASSES = 1008  # the model's output size (1000 ImageNet classes are named)


def _inception_graph(path: str) -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    rng = np.random.default_rng(7)
    graph = tf.Graph()

    def weight(shape: list[int], name: str) -> tf.Tensor:
        fan_in = int(np.prod(shape[:-1]))
        value = rng.normal(0, np.sqrt(2.0 / fan_in), size=shape).astype("float32")
        return tf.constant(value, name=name)

    def conv(
        x: tf.Tensor, k: int, out: int, name: str, stride: int = 1, padding: str = "SAME"
    ) -> tf.Tensor:
        with tf.name_scope(name):
            w = weight([k, k, int(x.shape[-1]), out], "conv2d_params")
            y = tf.nn.conv2d(x, w, [1, stride, stride, 1], padding, name="Conv2D")
            mean = tf.constant(rng.normal(0, 0.1, out).astype("float32"), name="moving_mean")
            var = tf.constant(rng.uniform(0.5, 1.5, out).astype("float32"), name="moving_variance")
            beta = tf.constant(rng.normal(0, 0.1, out).astype("float32"), name="beta")
            gamma = tf.constant(rng.uniform(0.8, 1.2, out).astype("float32"), name="gamma")
            # the original's BatchNormWithGlobalNormalization cannot be built by today's
            # TensorFlow: its successor, the fused inference batch norm, stands in
            y, _, _ = v1.nn.fused_batch_norm(
                y, gamma, beta, mean, var, epsilon=1e-3, is_training=False, name="batchnorm"
            )
            return tf.nn.relu(y, name="CONV")

    with graph.as_default():
        contents = tf.constant(b"", name="DecodeJpeg/contents")
        image = tf.io.decode_jpeg(contents, channels=3, name="DecodeJpeg")
        x = tf.cast(image, tf.float32, name="Cast")
        x = tf.expand_dims(x, 0, name="ExpandDims")
        x = v1.image.resize_bilinear(
            x, tf.constant([299, 299], name="ResizeBilinear/size"), name="ResizeBilinear"
        )
        x = tf.subtract(x, 128.0, name="Sub")
        x = tf.multiply(x, 1.0 / 128.0, name="Mul")
        x = conv(x, 3, 32, "conv", stride=2, padding="VALID")
        x = conv(x, 3, 32, "conv_1", padding="VALID")
        x = tf.nn.max_pool2d(x, 3, 2, "VALID", name="pool")
        x = conv(x, 1, 48, "conv_2")
        x = tf.nn.max_pool2d(x, 3, 2, "VALID", name="pool_1")
        with tf.name_scope("mixed"):
            b1 = conv(x, 1, 16, "conv")
            b2 = conv(conv(x, 1, 12, "tower/conv"), 5, 16, "tower/conv_1")
            b3 = conv(
                conv(conv(x, 1, 16, "tower_1/conv"), 3, 24, "tower_1/conv_1"),
                3,
                24,
                "tower_1/conv_2",
            )
            b4 = conv(tf.nn.avg_pool2d(x, 3, 1, "SAME", name="tower_2/pool"), 1, 8, "tower_2/conv")
            x = tf.raw_ops.Concat(concat_dim=tf.constant(3), values=[b1, b2, b3, b4], name="join")
        x = conv(x, 3, 64, "mixed_1/conv", stride=2)
        size = int(x.shape[1])
        x = tf.nn.avg_pool2d(x, size, 1, "VALID", name="pool_3")
        x = tf.reshape(x, [-1, 64], name="pool_3/_reshape")
        with tf.name_scope("softmax"):
            logits = tf.matmul(x, weight([64, _CLASSES], "weights"), name="logits/MatMul")
            logits = tf.add(
                logits, tf.constant(np.zeros(_CLASSES, "float32"), name="biases"), name="logits"
            )
        out = tf.nn.softmax(logits)
    graph_def = graph.as_graph_def(add_shapes=True)
    for node in graph_def.node:  # the original's name ("softmax" is taken by the scope)
        if node.name == out.op.name:
            node.name = "softmax"
    with open(path, "wb") as f:
        f.write(graph_def.SerializeToString())


def _uid(i: int) -> str:
    return f"n{i:08d}"


def _label_map(path: str) -> None:
    """``entry { target_class: i  target_class_string: "uid" }`` for classes 1..1000."""
    with open(path, "w") as f:
        for i in range(1, 1001):
            f.write(f'entry {{\n  target_class: {i}\n  target_class_string: "{_uid(i)}"\n}}\n')


def _synsets(path: str) -> None:
    with open(path, "w") as f:
        f.writelines(f"{_uid(i)}\tclass {i}, synset {i}\n" for i in range(1, 1001))


FILES: dict[tuple[str, str], Callable[[str], None]] = {
    ("tf/InceptionV1", "classify_image_graph_def-with_shapes.pb"): _inception_graph,
    ("data", "imagenet_2012_challenge_label_map_proto.pbtxt"): _label_map,
    ("data", "imagenet_synset_to_human_label_map.txt"): _synsets,
}
