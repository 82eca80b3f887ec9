"""EinsumDense and MultiHeadAttention against Keras."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.errors import FrontendError
from relaykit.frontend.keras import from_keras

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


def test_dot_concat_and_additive_attention_layers() -> None:
    q, v, k = keras.Input((3, 4)), keras.Input((5, 4)), keras.Input((5, 4))
    outs = [
        L.Attention()([q, v]),
        L.Attention(use_scale=True)([q, v, k], use_causal_mask=True),
        L.Attention(score_mode="concat", use_scale=True)([q, v]),
        L.AdditiveAttention()([q, v, k]),
        *L.AdditiveAttention(use_scale=False)([q, v], return_attention_scores=True),
    ]
    model = randomize(keras.Model([q, v, k], outs))
    check(model, [rand(2, 3, 4), rand(2, 5, 4, seed=2), rand(2, 5, 4, seed=3)], layouts=("NHWC",))


def test_masks_keras_passes_implicitly_are_refused() -> None:
    qi, vi = keras.Input((4,), dtype="int32"), keras.Input((5,), dtype="int32")
    emb = L.Embedding(9, 6, mask_zero=True)
    out = L.Attention(name="att")([emb(qi), emb(vi)])
    model = randomize(keras.Model([qi, vi], out))
    with pytest.raises(
        FrontendError, match=r"layer 'att' \(Attention\): its inputs carry Keras masks"
    ):
        from_keras(model)
