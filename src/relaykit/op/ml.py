"""Classical machine-learning operators (ONNX's ``ai.onnx.ml``-style ops):
``ml.tfidf_vectorizer`` and ``ml.tree_ensemble``.

``tfidf_vectorizer(data)`` counts the n-grams of the integer rows of ``data`` ((C,) or
(N, C)) that appear in a pool and weighs the counts. ``pool`` holds the n-grams of each
length in turn: ``ngram_counts[k]`` is the offset in ``pool`` of the (k+1)-grams, and
the g-th n-gram of the pool (counting all lengths) is counted in output column
``ngram_indexes[g]``. An n-gram of length ``n`` in ``[min_gram_length,
max_gram_length]`` is taken with each skip distance ``d`` from 1 to
``max_skip_count + 1`` (``row[i], row[i+d], ..., row[i+(n-1)d]``); a 1-gram is counted
once. ``mode`` is ``"TF"`` (the counts), ``"IDF"`` (``weights[j]``, or 1, where the
count is positive) or ``"TFIDF"`` (count times ``weights[j]``, or the count).

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2, 6), dtype="int32")
>>> y = tfidf_vectorizer(x, 1, 2, 0, (0, 2), (0, 1, 2), (5, 6, 7, 8), mode="TF")
>>> y.op.name
'ml.tfidf_vectorizer'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type

from ._relations import INT_DTYPES, tensor_arg
from .define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["tfidf_vectorizer"]


def _pool_ngrams(attrs: Attrs) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """``(n, grams (G, n), output columns (G,))`` per n-gram length that is counted."""
    pool = np.asarray(attrs.pool, dtype=np.int64)
    starts = [int(v) for v in attrs.ngram_counts] + [pool.size]
    columns = np.asarray(attrs.ngram_indexes, dtype=np.int64)
    out = []
    first = 0  # index of the first n-gram of this length among all pool n-grams
    for k in range(len(starts) - 1):
        n = k + 1
        grams = pool[starts[k] : starts[k + 1]].reshape(-1, n)
        if attrs.min_gram_length <= n <= attrs.max_gram_length and len(grams):
            out.append((n, grams, columns[first : first + len(grams)]))
        first += len(grams)
    return out


def _tfidf_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.dtype not in INT_DTYPES or data.ndim not in (1, 2):
        raise TypeRelError(
            f"tfidf_vectorizer needs integer data of shape (C,) or (N, C), got {data}"
        )
    if attrs.mode not in ("TF", "IDF", "TFIDF"):
        raise TypeRelError(f"tfidf_vectorizer mode must be TF, IDF or TFIDF, got {attrs.mode!r}")
    if not attrs.ngram_indexes:
        raise TypeRelError("tfidf_vectorizer needs ngram_indexes")
    width = max(int(v) for v in attrs.ngram_indexes) + 1
    if attrs.weights and len(attrs.weights) < width:
        raise TypeRelError(f"tfidf_vectorizer has {len(attrs.weights)} weights for {width} columns")
    return TensorType((*data.shape[:-1], width), "float32")


def _tfidf_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    (data,) = inputs
    rows = data.reshape(-1, data.shape[-1]).astype(np.int64)
    width = max(int(v) for v in attrs.ngram_indexes) + 1
    counts = np.zeros((rows.shape[0], width), dtype=np.int64)
    c = rows.shape[1]
    for n, grams, columns in _pool_ngrams(attrs):
        for d in range(1, int(attrs.max_skip_count) + 2 if n > 1 else 2):
            starts = np.arange(max(c - d * (n - 1), 0))
            if not starts.size:
                break
            windows = rows[:, starts[:, None] + d * np.arange(n)]  # (B, W, n)
            hits = (windows[:, :, None, :] == grams[None, None]).all(-1).sum(1)  # (B, G)
            np.add.at(counts.T, columns, hits.T)  # counts[:, columns] += hits, repeats add up
    weights = np.asarray(attrs.weights, dtype=np.float32)
    out: np.ndarray
    if attrs.mode == "TF":
        out = counts.astype(np.float32)
    elif attrs.mode == "IDF":
        out = np.where(counts > 0, weights[:width] if weights.size else 1.0, 0.0)
    else:
        out = counts * weights[:width] if weights.size else counts
    return np.asarray(out, dtype=np.float32).reshape((*data.shape[:-1], width))


define_op(
    "ml.tfidf_vectorizer",
    num_inputs=1,
    attrs={
        "min_gram_length": 1,
        "max_gram_length": 1,
        "max_skip_count": 0,
        "ngram_counts": (),
        "ngram_indexes": (),
        "pool": (),
        "weights": (),
        "mode": "TF",
    },
    type_rel=_tfidf_rel,
    compute=_tfidf_kernel,
    pattern=OpPattern.OPAQUE,
    doc="N-gram counts of integer rows, weighted (ONNX TfIdfVectorizer).",
)


def tfidf_vectorizer(
    data: Expr,
    min_gram_length: int,
    max_gram_length: int,
    max_skip_count: int,
    ngram_counts: Sequence[int],
    ngram_indexes: Sequence[int],
    pool: Sequence[int],
    weights: Sequence[float] = (),
    mode: str = "TF",
) -> Call:
    """Weighted counts of the pool's n-grams in each row of ``data`` (see the module
    docstring); float32 of shape ``data.shape[:-1] + (max(ngram_indexes) + 1,)``."""
    return make_call(
        "ml.tfidf_vectorizer",
        [data],
        min_gram_length=int(min_gram_length),
        max_gram_length=int(max_gram_length),
        max_skip_count=int(max_skip_count),
        ngram_counts=tuple(int(v) for v in ngram_counts),
        ngram_indexes=tuple(int(v) for v in ngram_indexes),
        pool=tuple(int(v) for v in pool),
        weights=tuple(float(v) for v in weights),
        mode=str(mode),
    )
