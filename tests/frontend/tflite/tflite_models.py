"""Small TensorFlow models for the TFLite frontend tests, converted by TensorFlow's own
TFLite converter (float, or full-integer quantized with a representative dataset), and
run by TensorFlow's TFLite interpreter as the reference."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf

L = tf.keras.layers


def cnn() -> Any:
    """Convolutions (SAME / VALID, strided, dilated, depthwise with a multiplier), pools,
    residual add, concatenation, mean, dense and softmax."""
    tf.keras.utils.set_random_seed(0)
    inp = tf.keras.Input((12, 12, 3), batch_size=1)
    y = L.Conv2D(8, 3, padding="same", activation="relu")(inp)
    a = L.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2)(y)
    a = L.ReLU(6.0)(a)
    b = L.Conv2D(16, 3, strides=2, padding="same", dilation_rate=1)(y)
    y = L.Add()([a, b])
    c = L.Conv2D(4, 3, padding="valid", dilation_rate=2)(y)
    d = L.AveragePooling2D(2, strides=1, padding="same")(y)
    e = L.MaxPooling2D(3, strides=2, padding="valid")(y)
    y = L.Concatenate()([L.GlobalAveragePooling2D()(c), L.GlobalAveragePooling2D()(d)])
    y = L.Concatenate()([y, L.Flatten()(e)])
    y = L.Dense(10, activation="relu")(y)
    y = L.Dense(6)(y)
    return tf.keras.Model(inp, L.Softmax()(y))


def shapes() -> Any:
    """A tf.function over data movement and elementwise operators."""

    @tf.function(input_signature=[tf.TensorSpec((1, 6, 6, 4), tf.float32)])
    def f(x: Any) -> Any:
        p = tf.pad(x, [[0, 0], [1, 2], [2, 1], [0, 0]])
        t = tf.transpose(p, [0, 2, 1, 3])
        s = tf.nn.relu6(t[:, 1:8:2, ::-1, 1:3])
        r = tf.image.resize(x, (9, 9), method="bilinear")
        n = tf.image.resize(x, (12, 12), method="nearest")
        q = tf.reshape(r, (1, 81, 4))
        a, b = tf.split(x, 2, axis=3)
        g = tf.gather(tf.reshape(x, (36, 4)), [3, 0, 5], axis=0)
        act = tf.nn.relu6(a * 3.0) - tf.sigmoid(b) + tf.tanh(a) / 2.0
        act = act + tf.nn.leaky_relu(b, 0.2) * tf.nn.relu(a - b)
        means = (
            tf.reduce_mean(q, axis=1)[:, :2]
            + tf.reduce_mean(act, axis=[1, 2]) * tf.reduce_sum(g) / 10.0
            + tf.slice(tf.reshape(x, (1, 144)), [0, 7], [1, 2])
        )
        parts = [s, n[:, ::2, ::3, :], g, means]
        return tf.concat([tf.reshape(v, (1, -1)) for v in parts], axis=1)

    return f


def deconv() -> Any:
    """Transposed convolution, PReLU, hard swish, nearest upsampling."""
    tf.keras.utils.set_random_seed(2)
    inp = tf.keras.Input((6, 6, 4), batch_size=1)
    y = L.Conv2DTranspose(6, 3, strides=2, padding="same")(inp)
    y = L.PReLU(shared_axes=[1, 2])(y)
    y = L.Conv2D(4, 1)(y)
    y = L.Activation(tf.keras.activations.hard_swish)(y)
    y = L.UpSampling2D(2)(y)
    y = L.Conv2DTranspose(3, 2, strides=2, padding="valid")(y)
    return tf.keras.Model(inp, y)


def misc() -> Any:
    """Less common data movement and selection operators (float)."""

    @tf.function(input_signature=[tf.TensorSpec((1, 4, 4, 8), tf.float32)])
    def f(x: Any) -> Any:
        m = tf.pad(x, [[0, 0], [1, 1], [2, 0], [0, 0]], mode="REFLECT")
        d = tf.nn.space_to_depth(tf.nn.depth_to_space(x, 2), 2)
        a, b, c = tf.split(x, [2, 5, 1], axis=3)
        u = tf.unstack(tf.stack([a[..., 0], b[..., 1], c[..., 0]], axis=1), axis=1)
        t = tf.tile(tf.expand_dims(tf.squeeze(c, axis=3), 1), [1, 2, 1, 1])
        arg = tf.cast(tf.argmax(x, axis=3), tf.float32)
        sel = tf.where(x > 0.2, tf.maximum(x, 0.5), tf.minimum(x, -0.5))
        return tf.concat(
            [
                tf.reshape(m, (1, -1)),
                tf.reshape(d, (1, -1)),
                tf.reshape(u[1] - u[0] * u[2], (1, -1)),
                tf.reshape(t, (1, -1)),
                tf.reshape(arg, (1, -1)),
                tf.reshape(sel, (1, -1)),
            ],
            axis=1,
        )

    return f


def matmul() -> Any:
    """A batched matrix product of two activations (the right one transposed)."""

    @tf.function(input_signature=[tf.TensorSpec((2, 3, 5, 4), tf.float32)])
    def f(x: Any) -> Any:
        return tf.matmul(x, tf.nn.relu(x) - 0.25, transpose_b=True)

    return f


def uint8_qat() -> bytes:
    """A TF1-style quantization-aware graph (fake-quant nodes) converted with uint8
    inference, as the hosted uint8 models were made: uint8 tensors and weights with zero
    points throughout (convolution, depthwise, average pool, add, softmax)."""
    tf1 = tf.compat.v1
    fq = tf.quantization.fake_quant_with_min_max_args
    rng = np.random.default_rng(4)
    graph = tf1.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, (1, 8, 8, 3), name="input")
        w = fq(tf.constant(rng.uniform(-1, 1, (3, 3, 3, 4)).astype(np.float32)), -1.0, 1.0)
        b = tf.constant(rng.uniform(-0.5, 0.5, 4).astype(np.float32))
        y = fq(tf.nn.relu6(tf.nn.conv2d(fq(x, -1.0, 1.0), w, 1, "SAME") + b), 0.0, 6.0)
        dw = fq(tf.constant(rng.uniform(-1, 1, (3, 3, 4, 1)).astype(np.float32)), -1.0, 0.8)
        z = fq(tf.nn.depthwise_conv2d(y, dw, [1, 2, 2, 1], "SAME"), -8.0, 8.0)
        a = fq(z + fq(tf.nn.avg_pool2d(y, 2, 2, "VALID"), 0.0, 6.0), -10.0, 10.0)
        flat = tf.reshape(a, (1, -1))
        soft = fq(tf.nn.softmax(flat * 0.3), 0.0, 1.0)
        out = fq(tf.concat([fq(flat * 0.1, -1.0, 1.0), soft], axis=1), -1.0, 1.0)
        with tf1.Session(graph=graph) as sess:
            converter = tf1.lite.TFLiteConverter.from_session(sess, [x], [out])
            converter.inference_type = tf.uint8
            converter.quantized_input_stats = {"input": (127.5, 127.5)}
            return converter.convert()


MODELS: dict[str, Callable[[], Any]] = {
    "cnn": cnn,
    "shapes": shapes,
    "deconv": deconv,
    "matmul": matmul,
    "misc": misc,
    "uint8_qat": uint8_qat,
}


def input_shape(model: Any) -> tuple[int, ...]:
    if isinstance(model, tf.keras.Model):
        return tuple(int(d) for d in model.inputs[0].shape)
    return tuple(int(d) for d in model.input_signature[0].shape)


def convert(model: Any, quantized: str | None = None) -> bytes:
    if isinstance(model, bytes):  # converted by its maker
        return model
    """The .tflite bytes of ``model``: float; full-integer quantized with ``quantized``
    ("int8" / "uint8") as the type of its input and output, or float input and output
    ("int8-float"); with float16 weights ("float16"); or with int8 weights only
    ("dynamic": dynamic-range quantization, TFLite's hybrid kernels)."""
    if isinstance(model, tf.keras.Model):
        converter = tf.lite.TFLiteConverter.from_keras_model(model)
    else:
        converter = tf.lite.TFLiteConverter.from_concrete_functions(
            [model.get_concrete_function()], model
        )
    if quantized == "float16":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    elif quantized == "dynamic":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    elif quantized:
        shape = input_shape(model)
        rng = np.random.default_rng(0)

        def representative() -> Any:
            for _ in range(8):
                yield [rng.uniform(-1, 1, size=shape).astype(np.float32)]

        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if quantized != "int8-float":
            converter.inference_input_type = getattr(tf, quantized)
            converter.inference_output_type = getattr(tf, quantized)
    return converter.convert()


def example_input(buf: bytes, seed: int = 3) -> tuple[str, np.ndarray]:
    """The name of the model's input and an input for it (quantized if the input is)."""
    interp = tf.lite.Interpreter(model_content=buf)
    d = interp.get_input_details()[0]
    x = np.random.default_rng(seed).uniform(-1, 1, size=tuple(d["shape"])).astype(np.float32)
    if d["dtype"] != np.float32:
        scale, zp = d["quantization"]
        info = np.iinfo(d["dtype"])
        x = np.clip(np.round(x / scale + zp), info.min, info.max).astype(d["dtype"])
    return str(d["name"]), x


def tflite_run(buf: bytes, x: np.ndarray, reference: bool = False) -> np.ndarray:
    """The model's first output computed by TensorFlow's TFLite interpreter (with its
    reference kernels when ``reference``)."""
    resolver = tf.lite.experimental.OpResolverType
    kind = resolver.BUILTIN_REF if reference else resolver.AUTO
    interp = tf.lite.Interpreter(model_content=buf, experimental_op_resolver_type=kind)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"])


def operators(buf: bytes) -> set[str]:
    """The builtin operator names the model uses."""
    import tflite
    from tflite.utils import BUILTIN_OPCODE2NAME

    model = tflite.Model.GetRootAsModel(buf, 0)
    codes = [model.OperatorCodes(i) for i in range(model.OperatorCodesLength())]
    return {BUILTIN_OPCODE2NAME[max(c.DeprecatedBuiltinCode(), c.BuiltinCode())] for c in codes}


def constant_dtypes(buf: bytes) -> set[int]:
    """The TFLite element type codes of the model's constant tensors (9: int8)."""
    import tflite

    model = tflite.Model.GetRootAsModel(buf, 0)
    graph = model.Subgraphs(0)
    out = set()
    for i in range(graph.TensorsLength()):
        t = graph.Tensors(i)
        if model.Buffers(t.Buffer()).DataLength():
            out.add(int(t.Type()))
    return out
