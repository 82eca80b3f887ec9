"""What the Keras frontend says about models it cannot convert, and about bad
arguments: typed errors that name the layer, its class, and what to do."""

from __future__ import annotations

import pytest

from relaykit.errors import ArgumentError, DynamicShapeError, FrontendError, UnsupportedOpError
from relaykit.frontend.keras import from_keras

from .conftest import keras

L = keras.layers


def test_every_unsupported_layer_is_named_at_once() -> None:
    inp = keras.Input((4, 4, 3))
    x = L.Lambda(lambda t: t * 2, name="double")(inp)
    x = L.Lambda(lambda t: t + 1)(x)
    x = L.RandomFlip(name="flip")(x)
    model = keras.Model(inp, x)
    with pytest.raises(UnsupportedOpError) as info:
        from_keras(model)
    message = str(info.value)
    assert "Lambda: 2 layers (first: 'double')" in message
    assert "RandomFlip: 1 layer (first: 'flip')" in message
    assert "Python code" in message  # what to do about a Lambda
    assert info.value.ops["Lambda"] == (2, "double")


def test_an_unsupported_layer_inside_a_nested_model_is_found() -> None:
    inner = keras.Sequential([keras.Input((5,)), L.Lambda(lambda t: t, name="inner_lambda")])
    inp = keras.Input((5,))
    model = keras.Model(inp, L.Dense(2)(inner(inp)))
    with pytest.raises(UnsupportedOpError, match="inner_lambda"):
        from_keras(model)


def test_an_unsupported_activation_names_the_layer() -> None:
    inp = keras.Input((4,))
    model = keras.Model(inp, L.Dense(3, activation=lambda t: t, name="odd")(inp))
    with pytest.raises(FrontendError, match=r"layer 'odd' \(Dense\).*activation '<lambda>'"):
        from_keras(model)


def test_a_shape_for_no_input() -> None:
    a, b = keras.Input((3,), name="a"), keras.Input((3,), name="b")
    model = keras.Model([a, b], L.Add()([a, b]))
    with pytest.raises(ArgumentError, match=r"\['c'\].*inputs are \['a', 'b'\]"):
        from_keras(model, {"c": (1, 3)})


def test_a_shape_of_the_wrong_rank() -> None:
    inp = keras.Input((4, 4, 3), name="x")
    model = keras.Model(inp, L.ReLU()(inp))
    with pytest.raises(ArgumentError, match="rank 3.*rank 4"):
        from_keras(model, {"x": (1, 4, 4)})


def test_unknown_dimensions_need_a_shape() -> None:
    inp = keras.Input((None, None, 3), name="x")
    model = keras.Model(inp, L.ReLU()(inp))
    with pytest.raises(DynamicShapeError, match=r"'x'.*\(None, None, None, 3\)"):
        from_keras(model)
    mod, _ = from_keras(model, {"x": (1, 3, 5, 5)})
    assert mod["main"].params[0].checked_type.shape == (1, 3, 5, 5)


def test_not_a_model_and_a_bad_layout() -> None:
    with pytest.raises(ArgumentError, match="keras.Model"):
        from_keras(L.Dense(3))
    inp = keras.Input((3,))
    model = keras.Model(inp, L.ReLU()(inp))
    with pytest.raises(ArgumentError, match="layout 'NCWH'"):
        from_keras(model, layout="NCWH")


def test_a_subclassed_model_is_refused() -> None:
    class Twice(keras.Model):
        def call(self, x):  # type: ignore[no-untyped-def]
            return x * 2

    with pytest.raises(FrontendError, match="subclassed"):
        from_keras(Twice())


def test_a_sequential_without_input_shape() -> None:
    with pytest.raises(FrontendError, match="no input shape"):
        from_keras(keras.Sequential([L.Dense(3)]))


def test_a_quantized_layer_is_refused() -> None:
    inp = keras.Input((8,))
    model = keras.Model(inp, L.Dense(4, name="q")(inp))
    model.quantize("int8")
    with pytest.raises(
        UnsupportedOpError, match=r"Dense quantized to int8: 1 layer \(first: 'q'\)"
    ):
        from_keras(model)
