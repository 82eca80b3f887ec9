"""ONNX converters for classical machine-learning ops: ``TfIdfVectorizer`` (to
``ml.tfidf_vectorizer``)."""

from __future__ import annotations

from collections.abc import Sequence

from relaykit import op
from relaykit.frontend.onnx.registry import NodeContext, converter
from relaykit.ir.expr import Expr

__all__: list[str] = []


@converter("TfIdfVectorizer", 9)
def _tfidf_vectorizer(
    ctx: NodeContext,
    x: Expr,
    *,
    max_gram_length: int = 0,
    max_skip_count: int = 0,
    min_gram_length: int = 0,
    mode: str = "",
    ngram_counts: Sequence[int] = (),
    ngram_indexes: Sequence[int] = (),
    pool_int64s: Sequence[int] = (),
    pool_strings: Sequence[str] = (),
    weights: Sequence[float] = (),
) -> Expr:
    if pool_strings:
        raise ctx.unsupported("a pool of strings (pool_strings)")
    return op.ml.tfidf_vectorizer(
        x,
        min_gram_length,
        max_gram_length,
        max_skip_count,
        ngram_counts,
        ngram_indexes,
        pool_int64s,
        weights,
        mode=mode,
    )
