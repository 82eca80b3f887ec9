"""Recurrent layers (unrolled) and TimeDistributed against Keras."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from .conftest import check, keras, rand, randomize

L = keras.layers


def _model(shape: tuple[int, ...], layer: Any) -> Any:
    inp = keras.Input(shape)
    out = layer(inp)
    return randomize(keras.Model(inp, out))


RECURRENT = {
    "simple_rnn": L.SimpleRNN(4),
    "simple_rnn_seq_relu": L.SimpleRNN(3, activation="relu", return_sequences=True),
    "lstm": L.LSTM(4),
    "lstm_seq_state": L.LSTM(3, return_sequences=True, return_state=True),
    "lstm_backwards": L.LSTM(3, go_backwards=True, return_sequences=True),
    "gru": L.GRU(4),
    "gru_reset_before": L.GRU(3, reset_after=False, return_sequences=True),
    "gru_state_nobias": L.GRU(3, use_bias=False, return_state=True),
    "bidirectional_lstm": L.Bidirectional(L.LSTM(3, return_sequences=True)),
    "bidirectional_gru_sum": L.Bidirectional(L.GRU(2), merge_mode="sum"),
    "time_distributed_dense": L.TimeDistributed(L.Dense(3, activation="relu")),
}


@pytest.mark.parametrize("name", sorted(RECURRENT))
def test_recurrent(name: str) -> None:
    check(_model((5, 3), RECURRENT[name]), [rand(2, 5, 3)], layouts=("NHWC",))


def test_initial_state_from_inputs() -> None:
    x, h, c = keras.Input((4, 3)), keras.Input((2,)), keras.Input((2,))
    out = L.LSTM(2)(x, initial_state=[h, c])
    model = randomize(keras.Model([x, h, c], out))
    check(model, [rand(2, 4, 3), rand(2, 2, seed=2), rand(2, 2, seed=3)], layouts=("NHWC",))


def test_time_distributed_conv_in_nchw() -> None:
    model = _model((3, 6, 6, 2), L.TimeDistributed(L.Conv2D(3, 3, padding="same")))
    check(model, [rand(2, 3, 6, 6, 2)])


MASKED = {
    "lstm": lambda: L.LSTM(3, return_sequences=True),
    "gru_last": lambda: L.GRU(3),
    "rnn_backwards_state": lambda: L.SimpleRNN(2, go_backwards=True, return_state=True),
    "bidirectional": lambda: L.Bidirectional(L.LSTM(2, return_sequences=True)),
    "average": lambda: L.GlobalAveragePooling1D(),
}


@pytest.mark.parametrize("name", sorted(MASKED))
def test_masked_steps(name: str) -> None:
    # mask_zero embeddings: the zero ids are padding the layers skip
    inp = keras.Input((6,), dtype="int32")
    x = L.Embedding(7, 4, mask_zero=True)(inp)
    model = randomize(keras.Model(inp, MASKED[name]()(x)))
    ids = np.array([[3, 1, 0, 0, 2, 0], [0, 5, 6, 1, 0, 0]], dtype="int32")
    check(model, [ids], layouts=("NHWC",))
