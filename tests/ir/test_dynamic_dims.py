"""Dynamic (``?``) and symbolic (``te.var``) tensor dimensions in types (issue 12)."""

import pytest

from relaykit import relay, te, tir
from relaykit.errors import IRError, RelayTypeError, SymbolicDimError


def infer(fn):
    mod = relay.transform.InferType()(relay.IRModule.from_expr(fn))
    return mod["main"].body.checked_type


def test_symbolic_arithmetic_is_structural():
    n, c = te.var("n"), te.size_var("c")
    assert n + n == 2 * n
    assert (2 * n) // 2 == n
    assert (n + 1) - n == 1
    assert n * c == c * n
    assert n + 1 != n + 2
    assert te.var("n") != n  # a different variable with the same name
    assert hash(n * 2 + 1) == hash(1 + 2 * n)
    assert tir.evaluate(n * c + n // 2, {n: 5, c: 3}) == 17


def test_any_absorbs_arithmetic_and_compares_equal():
    a = relay.Any()
    assert a + 1 == relay.Any() and 0 * a == 0
    assert str(relay.TensorType((a, 3))) == "Tensor[(?, 3), float32]"


def test_undecidable_comparison_raises_typed_error():
    n = te.var("n")
    with pytest.raises(SymbolicDimError, match="symbolic"):
        _ = n < 3
    with pytest.raises(SymbolicDimError):
        int(relay.Any())
    assert te.size_var("m") >= 0


def test_tensor_type_rejects_strings_and_negatives():
    with pytest.raises(IRError, match="not an integer"):
        relay.TensorType(("x",))
    with pytest.raises(IRError, match="negative"):
        relay.TensorType((-1,))


def test_reduce_keeps_symbolic_dims():
    n, c, h, w = (te.size_var(s) for s in "nchw")
    x = relay.var("x", relay.TensorType((n, c, h, w), "float32"))
    assert infer(relay.Function([x], relay.sum(x, axis=1))) == relay.TensorType((n, h, w))


def test_broadcast_with_any_follows_tvm():
    x = relay.var("x", shape=(relay.Any(), 2, 1))
    y = relay.var("y", shape=(3, relay.Any(), relay.Any()))
    t = infer(relay.Function([x, y], x + y))
    assert t == relay.TensorType((3, 2, relay.Any()))
    z = relay.var("z", shape=(4, 5, 1))
    with pytest.raises(RelayTypeError, match="broadcast"):
        infer(relay.Function([x, z], x + z))


def test_unification_treats_any_as_compatible():
    x = relay.var("x", shape=(relay.Any(), 3))
    y = relay.var("y", shape=(2, 3))
    f = relay.Function([x], x)
    t = infer(relay.Function([y], relay.Call(f, [y])))
    assert t.shape[1] == 3
    bad = relay.var("b", shape=(2, 4))
    with pytest.raises(RelayTypeError):
        infer(relay.Function([bad], relay.Call(f, [bad])))


A = relay.Any
N = te.size_var("n")


@pytest.mark.parametrize(
    ("build", "want"),
    [
        (lambda: relay.reshape(relay.var("x", shape=(A(), 3, 4)), (-1, 4)), (A(), 4)),
        (lambda: relay.reshape(relay.var("x", shape=(N, 3, 4)), (0, -1)), (N, 12)),
        (
            lambda: relay.nn.dense(relay.var("x", shape=(A(), 4)), relay.var("w", shape=(5, 4))),
            (A(), 5),
        ),
        (
            lambda: relay.nn.conv2d(
                relay.var("x", shape=(N, 3, 8, 8)),
                relay.var("w", shape=(4, 3, 3, 3)),
                padding=(1, 1),
            ),
            (N, 4, 8, 8),
        ),
        (
            lambda: relay.nn.max_pool2d(relay.var("x", shape=(1, 3, N, N)), (2, 2), (2, 2)),
            (1, 3, (N - 2) // 2 + 1, (N - 2) // 2 + 1),
        ),
        (lambda: relay.split(relay.var("x", shape=(A(), 10)), [2, 5], axis=0)[1], (3, 10)),
        (lambda: relay.strided_slice(relay.var("x", shape=(A(), 10)), [0, 1], [2, 8]), (A(), 7)),
        (
            lambda: relay.concatenate(
                [relay.var("a", shape=(A(), 3)), relay.var("b", shape=(2, A()))], 0
            ),
            (A(), 3),
        ),
        (
            lambda: relay.stack([relay.var("a", shape=(A(), 3)), relay.var("b", shape=(2, 3))], 0),
            (2, 2, 3),
        ),
        (lambda: relay.squeeze(relay.var("x", shape=(A(), 1, 3)), [0]), (1, 3)),
        (
            lambda: relay.nn.batch_matmul(
                relay.var("a", shape=(A(), 2, 3)), relay.var("b", shape=(1, 4, 3))
            ),
            (A(), 2, 4),
        ),
    ],
)
def test_relations_propagate_dynamic_dims(build, want):
    e = build()
    t = infer(relay.Function(relay.analysis.free_vars(e), e))
    assert t.shape == tuple(want)
