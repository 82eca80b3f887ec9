"""ml.tfidf_vectorizer: its kernel against a loop written from ONNX's TfIdfVectorizer
spec, against onnx's reference evaluator through the frontend, and its type relation."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.op import TypeRelError, ml

POOL = (2, 3, 5, 4, 5, 6, 7, 8, 6, 7)  # unigrams 2 3 5 4, bigrams 56 78 67
COUNTS = (0, 4)


def tfidf_by_loop(x, min_n, max_n, max_skip, counts, indexes, pool, weights, mode):
    """The spec, one n-gram at a time: skip distances 1..max_skip+1, unigrams once."""
    grams = {}
    bounds = [*list(counts), len(pool)]
    g = 0
    for k in range(len(counts)):
        n = k + 1
        for s in range(bounds[k], bounds[k + 1], n):
            if min_n <= n <= max_n:
                grams[tuple(pool[s : s + n])] = indexes[g]
            g += 1
    width = max(indexes) + 1
    rows = x.reshape(-1, x.shape[-1])
    out = np.zeros((rows.shape[0], width))
    for r, row in enumerate(rows):
        tf = np.zeros(width)
        for n in range(min_n, max_n + 1):
            for d in range(1, (max_skip + 2) if n > 1 else 2):
                for i in range(len(row)):
                    idx = [i + d * j for j in range(n)]
                    if idx[-1] < len(row) and tuple(row[idx]) in grams:
                        tf[grams[tuple(row[idx])]] += 1
        w = np.asarray(weights) if weights else np.ones(width)
        out[r] = {"TF": tf, "IDF": (tf > 0) * w, "TFIDF": tf * w}[mode]
    return out.reshape((*x.shape[:-1], width)).astype("float32")


CASES = [
    dict(min_n=2, max_n=2, max_skip=0, mode="TF", weights=()),
    dict(min_n=1, max_n=2, max_skip=5, mode="TF", weights=()),
    dict(min_n=1, max_n=2, max_skip=2, mode="IDF", weights=()),
    dict(min_n=1, max_n=2, max_skip=1, mode="IDF", weights=(0.5, 1, 2, 3, 4, 5, 6)),
    dict(min_n=1, max_n=1, max_skip=3, mode="TFIDF", weights=(0.5, 1, 2, 3, 4, 5, 6)),
    dict(min_n=2, max_n=2, max_skip=3, mode="TFIDF", weights=()),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("shape", [(12,), (3, 9)])
def test_kernel_matches_a_loop_from_the_spec(run, tvar, case, shape):
    x = np.random.default_rng(sum(shape)).integers(2, 9, shape).astype("int64")
    indexes = (0, 1, 2, 3, 4, 5, 6)
    call = ml.tfidf_vectorizer(
        tvar("x", shape, "int64"), case["min_n"], case["max_n"], case["max_skip"],
        COUNTS, indexes, POOL, case["weights"], mode=case["mode"],
    )  # fmt: skip
    want = tfidf_by_loop(
        x, case["min_n"], case["max_n"], case["max_skip"], COUNTS, indexes, POOL,
        case["weights"], case["mode"],
    )  # fmt: skip
    np.testing.assert_array_equal(run(call, x), want)


def test_counts_by_hand(run, tvar):
    # bigram (5, 6): at 0 with distance 1, at 2 with distance 2 (5 9 6); unigram 5 twice
    x = np.array([5, 6, 5, 9, 6], "int32")
    call = ml.tfidf_vectorizer(tvar("x", (5,), "int32"), 1, 2, 1, (0, 1), (1, 0), (5, 5, 6))
    assert run(call, x).tolist() == [2.0, 2.0]
    # without skips only the adjacent pair counts
    call = ml.tfidf_vectorizer(tvar("x", (5,), "int32"), 1, 2, 0, (0, 1), (1, 0), (5, 5, 6))
    assert run(call, x).tolist() == [1.0, 2.0]


def test_shuffled_ngram_indexes_choose_the_columns(run, tvar):
    x = np.array([[2, 3, 3], [5, 5, 5]], "int64")
    call = ml.tfidf_vectorizer(tvar("x", (2, 3), "int64"), 1, 1, 0, (0,), (3, 0, 5), (2, 3, 5))
    assert run(call, x).tolist() == [[2, 0, 0, 1, 0, 0], [0, 0, 0, 0, 0, 3]]


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
def test_frontend_matches_the_onnx_reference(mode):
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    from relaykit.frontend.onnx.backend import RelayKitBackend

    node = helper.make_node(
        "TfIdfVectorizer", ["x"], ["y"], domain="", mode=mode, min_gram_length=1,
        max_gram_length=3, max_skip_count=2, ngram_counts=[0, 3, 7],
        ngram_indexes=[7, 6, 5, 4, 3, 2, 1], pool_int64s=[1, 2, 3, 1, 2, 3, 1, 1, 2, 3],
        weights=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
    )  # fmt: skip
    graph = helper.make_graph(
        [node],
        "tfidf",
        [helper.make_tensor_value_info("x", TensorProto.INT32, [4, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(1).integers(0, 4, (4, 10)).astype("int32")
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    (got,) = RelayKitBackend.run_model(model, [x])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got.any()


def test_relation_checks_dtype_and_mode(tvar):
    call = ml.tfidf_vectorizer(tvar("x", (2, 5), "float32"), 1, 1, 0, (0,), (0,), (1,))
    rel = call.op.get_attr("FTypeRelation")
    with pytest.raises(TypeRelError, match="integer data"):
        rel([tvar("x", (2, 5), "float32").type_annotation], call.attrs)
    bad = ml.tfidf_vectorizer(tvar("x", (5,), "int32"), 1, 1, 0, (0,), (0,), (1,), mode="BM25")
    with pytest.raises(TypeRelError, match="mode"):
        rel([tvar("x", (5,), "int32").type_annotation], bad.attrs)
    ok = ml.tfidf_vectorizer(tvar("x", (2, 5), "int32"), 1, 1, 0, (0,), (0, 4), (1, 2))
    assert str(rel([tvar("x", (2, 5), "int32").type_annotation], ok.attrs)) == (
        "Tensor[(2, 5), float32]"
    )
