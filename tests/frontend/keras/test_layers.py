"""Each converted Keras layer computes what Keras computes (``model(x)``), in the
channels-last layout and in TVM's default NCHW."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from .conftest import check, keras, rand, randomize

L = keras.layers


def one_layer(shape: tuple[int, ...], *layers: Any) -> Any:
    """A functional model of ``layers`` applied in turn, with random weights."""
    inp = keras.Input(shape)
    x = inp
    for layer in layers:
        x = layer(x)
    return randomize(keras.Model(inp, x))


CONVOLUTIONS = {
    "conv2d_same_relu": ((9, 9, 3), L.Conv2D(4, 3, padding="same", activation="relu")),
    "conv2d_stride": ((9, 8, 3), L.Conv2D(5, (3, 2), strides=2, padding="same")),
    "conv2d_dilated": ((10, 10, 2), L.Conv2D(3, 3, dilation_rate=2)),
    "conv2d_groups": ((8, 8, 4), L.Conv2D(6, 3, groups=2, use_bias=False)),
    "conv2d_channels_first": ((3, 8, 8), L.Conv2D(4, 3, data_format="channels_first")),
    "conv1d_causal": ((12, 3), L.Conv1D(4, 3, padding="causal", dilation_rate=2)),
    "conv1d_same_stride": ((11, 3), L.Conv1D(4, 4, strides=2, padding="same")),
    "conv3d": ((6, 6, 6, 2), L.Conv3D(3, 3, padding="same", activation="tanh")),
    "depthwise2d": ((9, 9, 3), L.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2)),
    "depthwise1d": ((10, 3), L.DepthwiseConv1D(3, depth_multiplier=2)),
    "separable2d": ((8, 8, 3), L.SeparableConv2D(5, 3, padding="same", depth_multiplier=2)),
    "separable1d": ((10, 3), L.SeparableConv1D(4, 3, strides=2)),
    "transpose2d_valid": ((5, 5, 3), L.Conv2DTranspose(4, 3, strides=2)),
    "transpose2d_same": ((5, 4, 3), L.Conv2DTranspose(4, 3, strides=2, padding="same")),
    "transpose2d_outpad": ((5, 5, 2), L.Conv2DTranspose(3, 3, strides=2, output_padding=1)),
    "transpose1d": ((6, 3), L.Conv1DTranspose(2, 4, strides=2, padding="same")),
    "transpose3d": ((3, 4, 4, 2), L.Conv3DTranspose(2, 2, strides=2, activation="relu")),
}


@pytest.mark.parametrize("name", sorted(CONVOLUTIONS))
def test_convolutions(name: str) -> None:
    shape, layer = CONVOLUTIONS[name]
    check(one_layer(shape, layer), [rand(2, *shape)])


POOLING = {
    "max2d": ((9, 9, 3), L.MaxPooling2D(2)),
    "max2d_same": ((9, 7, 3), L.MaxPooling2D(3, strides=2, padding="same")),
    "avg2d_same": ((9, 7, 3), L.AveragePooling2D(3, strides=2, padding="same")),
    "avg2d": ((8, 8, 2), L.AveragePooling2D((2, 3))),
    "max1d_same": ((11, 3), L.MaxPooling1D(3, padding="same")),
    "avg1d": ((11, 3), L.AveragePooling1D(2, strides=1)),
    "max3d": ((4, 6, 6, 2), L.MaxPooling3D(2)),
    "avg3d_same": ((5, 5, 5, 2), L.AveragePooling3D(2, padding="same")),
    "gavg2d": ((6, 6, 3), L.GlobalAveragePooling2D()),
    "gmax2d_keep": ((6, 6, 3), L.GlobalMaxPooling2D(keepdims=True)),
    "gavg1d": ((7, 3), L.GlobalAveragePooling1D()),
    "gmax3d": ((3, 4, 4, 2), L.GlobalMaxPooling3D()),
    "gavg2d_first": ((3, 6, 5), L.GlobalAveragePooling2D(data_format="channels_first")),
}


@pytest.mark.parametrize("name", sorted(POOLING))
def test_pooling(name: str) -> None:
    shape, layer = POOLING[name]
    check(one_layer(shape, layer), [rand(2, *shape)])


RESHAPING = {
    "zeropad2d": ((5, 6, 3), L.ZeroPadding2D(((1, 2), (0, 3)))),
    "zeropad1d": ((5, 3), L.ZeroPadding1D(2)),
    "zeropad3d": ((3, 3, 3, 2), L.ZeroPadding3D(1)),
    "crop2d": ((8, 9, 3), L.Cropping2D(((1, 2), (2, 1)))),
    "crop1d": ((8, 3), L.Cropping1D((2, 1))),
    "crop3d": ((5, 5, 5, 2), L.Cropping3D(1)),
    "upsample2d": ((4, 5, 3), L.UpSampling2D((2, 3))),
    "upsample2d_bilinear": ((4, 5, 3), L.UpSampling2D(2, interpolation="bilinear")),
    "upsample1d": ((4, 3), L.UpSampling1D(3)),
    "upsample3d": ((2, 3, 2, 2), L.UpSampling3D(2)),
    "flatten": ((4, 5, 3), L.Flatten()),
    "reshape": ((4, 6, 3), L.Reshape((8, -1))),
    "permute": ((4, 5, 3), L.Permute((3, 1, 2))),
    "repeat_vector": ((5,), L.RepeatVector(3)),
    "dense_rank3": ((4, 6), L.Dense(3)),
}


@pytest.mark.parametrize("name", sorted(RESHAPING))
def test_reshaping(name: str) -> None:
    shape, layer = RESHAPING[name]
    check(one_layer(shape, layer), [rand(2, *shape)])


ACTIVATION_NAMES = [
    "relu", "relu6", "sigmoid", "tanh", "softmax", "log_softmax", "softplus", "softsign",
    "exponential", "elu", "selu", "celu", "leaky_relu", "hard_sigmoid", "hard_silu",
    "hard_tanh", "silu", "swish", "gelu", "mish", "log_sigmoid", "tanh_shrink", "linear",
]  # fmt: skip


def test_activation_functions() -> None:
    # one model, every activation as a Dense layer's activation and as an Activation layer
    inp = keras.Input((6,))
    outs = []
    for name in ACTIVATION_NAMES:
        outs.append(L.Dense(4, activation=name)(inp))
        outs.append(L.Activation(name)(inp))
    model = randomize(keras.Model(inp, outs))
    check(model, [3 * rand(3, 6)], layouts=("NHWC",))


ACTIVATION_LAYERS = {
    "relu": L.ReLU(),
    "relu_max": L.ReLU(max_value=6.0),
    "relu_all": L.ReLU(max_value=1.5, negative_slope=0.1, threshold=0.3),
    "relu_threshold": L.ReLU(threshold=0.5, negative_slope=0.2),
    "leaky": L.LeakyReLU(negative_slope=0.2),
    "elu": L.ELU(alpha=0.7),
    "prelu": L.PReLU(),
    "prelu_shared": L.PReLU(shared_axes=[1, 2]),
    "softmax_axis": L.Softmax(axis=1),
    "softmax_axes": L.Softmax(axis=(1, 2)),
}


@pytest.mark.parametrize("name", sorted(ACTIVATION_LAYERS))
def test_activation_layers(name: str) -> None:
    check(one_layer((5, 4, 3), ACTIVATION_LAYERS[name]), [2 * rand(2, 5, 4, 3)])


NORMALIZATIONS = {
    "batchnorm": ((5, 5, 3), L.BatchNormalization()),
    "batchnorm_axis1": ((4, 6), L.BatchNormalization(axis=1, center=False)),
    "batchnorm_noscale": ((5, 5, 3), L.BatchNormalization(scale=False, epsilon=0.01)),
    "layernorm": ((4, 6), L.LayerNormalization()),
    "layernorm_axes": ((4, 5, 3), L.LayerNormalization(axis=[1, 2])),
    "layernorm_plain": ((4, 6), L.LayerNormalization(center=False, scale=False)),
    "rmsnorm": ((4, 6), L.RMSNormalization()),
    "unitnorm": ((4, 6), L.UnitNormalization()),
    "rescaling": ((4, 4, 3), L.Rescaling(1 / 127.5, offset=-1)),
    "dropout": ((4, 4, 3), L.Dropout(0.5)),
    "spatial_dropout": ((4, 4, 3), L.SpatialDropout2D(0.5)),
    "gaussian_noise": ((6,), L.GaussianNoise(1.0)),
}


@pytest.mark.parametrize("name", sorted(NORMALIZATIONS))
def test_normalization_and_inference_identities(name: str) -> None:
    shape, layer = NORMALIZATIONS[name]
    check(one_layer(shape, layer), [rand(2, *shape)])


def test_merge_layers() -> None:
    a, b, c = keras.Input((4, 4, 3)), keras.Input((4, 4, 3)), keras.Input((4, 4, 3))
    outs = [
        L.Add()([a, b, c]),
        L.Subtract()([a, b]),
        L.Multiply()([a, b]),
        L.Average()([a, b, c]),
        L.Maximum()([a, b]),
        L.Minimum()([a, c]),
        L.Concatenate()([a, b]),
        L.Concatenate(axis=1)([a, c]),
        a + 2.0,
        a * b - c,
    ]
    model = keras.Model([a, b, c], outs)
    check(model, [rand(2, 4, 4, 3, seed=s) for s in (1, 2, 3)])


def test_dot() -> None:
    x2, y2 = keras.Input((5,)), keras.Input((5,))
    x3, y3 = keras.Input((3, 4)), keras.Input((4, 2))
    z3 = keras.Input((3, 2))
    outs = [
        L.Dot(axes=1)([x2, y2]),
        L.Dot(axes=1, normalize=True)([x2, y2]),
        L.Dot(axes=(2, 1))([x3, y3]),
        L.Dot(axes=(1, 1))([x3, z3]),
        L.Dot(axes=(2, 2))([y3, z3]),
    ]
    model = keras.Model([x2, y2, x3, y3, z3], outs)
    data = [rand(2, 5, seed=1), rand(2, 5, seed=2), rand(2, 3, 4), rand(2, 4, 2), rand(2, 3, 2)]
    check(model, data, layouts=("NHWC",))


def test_embedding() -> None:
    inp = keras.Input((6,), dtype="int32")
    x = L.Embedding(10, 4)(inp)
    model = randomize(keras.Model(inp, L.Flatten()(x)))
    ids = np.random.default_rng(0).integers(0, 10, (3, 6)).astype("int32")
    check(model, [ids])


def test_keras_ops_between_layers() -> None:
    ops = keras.ops
    x, y = keras.Input((4, 6)), keras.Input((6, 3))
    outs = [
        x @ y,
        ops.reshape(x, (-1, 24)),
        ops.transpose(x, (0, 2, 1)),
        ops.concatenate([x, -x], axis=1),
        ops.mean(x, axis=1, keepdims=True),
        ops.sum(x, axis=-1),
        ops.max(x, axis=1),
        ops.relu(x) + ops.sigmoid(x) * ops.tanh(x),
        ops.exp(x) / 2 - ops.sqrt(ops.abs(x)) + ops.square(x) ** 2,
        ops.squeeze(ops.expand_dims(x, 1), 1),
        ops.softmax(x, axis=1),
        ops.matmul(ops.reshape(x, (-1, 24)), np.ones((24, 2), "float32")),
    ]
    model = keras.Model([x, y], outs)
    check(model, [rand(2, 4, 6), rand(2, 6, 3, seed=2)], layouts=("NHWC",))


def _adapted_normalization(invert: bool) -> Any:
    layer = L.Normalization(invert=invert)
    layer.adapt(rand(16, 4, 4, 3, seed=5) * 3 + 1)
    return layer


MORE = {
    "groupnorm": ((4, 4, 6), L.GroupNormalization(groups=3)),
    "groupnorm_axis1": ((6, 5), L.GroupNormalization(groups=2, axis=1, center=False)),
    "normalization": ((4, 4, 3), _adapted_normalization(False)),
    "normalization_invert": ((4, 4, 3), _adapted_normalization(True)),
    "resizing_bilinear": ((6, 8, 3), L.Resizing(9, 5)),
    "resizing_nearest": ((6, 8, 3), L.Resizing(9, 5, interpolation="nearest")),
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_group_normalization_normalization_and_resizing(name: str) -> None:
    shape, layer = MORE[name]
    model = one_layer(shape, layer) if "norm" in name and "group" in name else None
    if model is None:  # adapted statistics and resizing have no random weights to set
        inp = keras.Input(shape)
        model = keras.Model(inp, layer(inp))
    check(model, [rand(2, *shape)])
