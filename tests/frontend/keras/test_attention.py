"""EinsumDense and MultiHeadAttention against Keras."""

from __future__ import annotations

import numpy as np

from .conftest import check, keras, rand, randomize

L = keras.layers


def test_einsum_dense() -> None:
    inp = keras.Input((5, 4))
    out = L.EinsumDense("abc,cde->abde", output_shape=(None, 2, 3), bias_axes="de")(inp)
    check(randomize(keras.Model(inp, out)), [rand(2, 5, 4)], layouts=("NHWC",))


def test_self_attention_with_scores_and_a_causal_mask() -> None:
    x = keras.Input((6, 8))
    mha = L.MultiHeadAttention(num_heads=2, key_dim=4)
    out, scores = mha(x, x, return_attention_scores=True, use_causal_mask=True)
    model = randomize(keras.Model(x, [out, scores]))
    check(model, [rand(2, 6, 8)], layouts=("NHWC",))


def test_cross_attention_with_key_and_an_attention_mask() -> None:
    q, v, k = keras.Input((3, 8)), keras.Input((5, 6)), keras.Input((5, 4))
    m = keras.Input((3, 5), dtype="bool")
    mha = L.MultiHeadAttention(num_heads=3, key_dim=2, value_dim=5, output_shape=7)
    model = randomize(keras.Model([q, v, k, m], mha(q, v, key=k, attention_mask=m)))
    mask = np.random.default_rng(3).random((2, 3, 5)) > 0.4
    mask[0, 1] = False  # a fully masked row
    check(
        model,
        [rand(2, 3, 8), rand(2, 5, 6, seed=2), rand(2, 5, 4, seed=3), mask],
        layouts=("NHWC",),
    )


def test_attention_over_two_axes() -> None:
    x = keras.Input((3, 4, 6))
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3, attention_axes=(1, 2))
    model = randomize(keras.Model(x, mha(x, x)))
    check(model, [rand(1, 3, 4, 6)], layouts=("NHWC",))


def test_a_fully_masked_row_with_scores() -> None:
    # Keras's explicit path (scores asked) zeroes a fully masked row
    q, m = keras.Input((3, 4)), keras.Input((3, 3), dtype="bool")
    out, scores = L.MultiHeadAttention(num_heads=1, key_dim=2)(
        q, q, attention_mask=m, return_attention_scores=True
    )
    model = randomize(keras.Model([q, m], [out, scores]))
    mask = np.ones((1, 3, 3), bool)
    mask[0, 2] = False
    check(model, [rand(1, 3, 4), mask], layouts=("NHWC",))
