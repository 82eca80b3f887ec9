"""Whole Keras models: nested, with several inputs and outputs, with shared layers,
from ``tf.keras``, and Keras's own MobileNet, MobileNetV2 and ResNet50 (random
weights, small inputs) against Keras."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.frontend.keras import from_keras

from .conftest import channels_first, check, keras, keras_outputs, rand, randomize, run_relay

L = keras.layers


def test_sequential_in_functional_in_functional() -> None:
    block = keras.Sequential(
        [L.Conv2D(4, 3, padding="same"), L.BatchNormalization(), L.ReLU()], name="block"
    )
    inner_in = keras.Input((8, 8, 3))
    inner = keras.Model(inner_in, L.Add()([block(inner_in), L.Conv2D(4, 1)(inner_in)]))
    inp = keras.Input((8, 8, 3), name="image")
    x = inner(inp)
    x = L.GlobalAveragePooling2D()(x)
    model = randomize(keras.Model(inp, L.Dense(3, activation="softmax")(x)))
    check(model, [rand(2, 8, 8, 3)])


def test_sequential_model() -> None:
    model = keras.Sequential(
        [
            keras.Input((10, 10, 3)),
            L.Conv2D(6, 3, activation="relu"),
            L.MaxPooling2D(),
            L.Flatten(),
            L.Dropout(0.3),
            L.Dense(4),
        ]
    )
    check(randomize(model), [rand(3, 10, 10, 3)])


def test_several_inputs_and_outputs_and_a_shared_layer() -> None:
    a, b = keras.Input((6, 6, 2), name="a"), keras.Input((6, 6, 2), name="b")
    shared = L.Conv2D(3, 3, padding="same", name="shared")
    fa, fb = shared(a), shared(b)  # one layer, two nodes
    merged = L.Concatenate()([fa, fb])
    model = randomize(keras.Model([a, b], [merged, L.Flatten()(fb)]))
    check(model, [rand(1, 6, 6, 2, seed=1), rand(1, 6, 6, 2, seed=2)])
    mod, params = from_keras(model, layout="NHWC")
    assert [p.name_hint for p in mod["main"].params[:2]] == ["a", "b"]
    assert [k for k in params if k.startswith("shared.")] == ["shared.kernel", "shared.bias"]


def test_tf_keras_model() -> None:
    tf = pytest.importorskip("tensorflow")
    inp = tf.keras.Input((7, 7, 3))
    x = tf.keras.layers.SeparableConv2D(4, 3, activation="relu6")(inp)
    out = tf.keras.layers.GlobalMaxPooling2D()(x)
    check(randomize(tf.keras.Model(inp, out)), [rand(2, 7, 7, 3)])


def test_nchw_takes_and_gives_channels_first_images() -> None:
    inp = keras.Input((6, 5, 3), name="img")
    model = randomize(keras.Model(inp, L.Conv2D(4, 3, padding="same")(inp)))
    mod, params = from_keras(model, {"img": (1, 3, 6, 5)})
    main = mod["main"]
    assert main.params[0].checked_type.shape == (1, 3, 6, 5)
    assert main.ret_type.shape == (1, 4, 6, 5)
    assert params  # the weights are parameters, not constants
    x = rand(1, 6, 5, 3)
    (got,) = run_relay(mod, params, [channels_first(x)])
    np.testing.assert_allclose(
        got, channels_first(keras_outputs(model, [x])[0]), rtol=1e-4, atol=1e-5
    )


def test_the_one_unmatched_shape_name_names_the_one_input() -> None:
    # TVM's scripts name Keras 2's first input "input_1"; Keras 3 calls it "input_layer..."
    inp = keras.Input((4, 4, 3))
    model = keras.Model(inp, L.ReLU()(inp))
    mod, _ = from_keras(model, {"input_1": (2, 3, 4, 4)})
    assert mod["main"].params[0].name_hint == "input_1"
    assert mod["main"].params[0].checked_type.shape == (2, 3, 4, 4)


APPLICATIONS = {
    "MobileNet": lambda: keras.applications.MobileNet(
        input_shape=(32, 32, 3), alpha=0.25, weights=None, classes=10
    ),
    "MobileNetV2": lambda: keras.applications.MobileNetV2(
        input_shape=(32, 32, 3), alpha=0.35, weights=None, classes=10
    ),
    "ResNet50": lambda: keras.applications.ResNet50(
        input_shape=(32, 32, 3), weights=None, classes=10
    ),
}


@pytest.mark.parametrize("name", sorted(APPLICATIONS))
def test_keras_applications(name: str) -> None:
    model = APPLICATIONS[name]()
    # random weights at scale 1 overflow 50 layers; keep Keras's initial weights but give
    # the batch-norm statistics and biases random values
    rng = np.random.default_rng(0)
    for w in model.weights:
        if "variance" in w.path:
            w.assign(rng.uniform(0.5, 1.5, tuple(w.shape)).astype("float32"))
        elif w.path.endswith(("moving_mean", "beta", "bias")):
            w.assign(rng.uniform(-0.2, 0.2, tuple(w.shape)).astype("float32"))
    check(model, [rand(1, 32, 32, 3)], layouts=("NCHW",), rtol=1e-3, atol=1e-4)
