"""FoldConstant is bounded: it decides from the inferred type, before any kernel runs,
and never materialises a tensor above ``relay.FoldConstant.max_bytes`` (issue 15)."""

import tracemalloc

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ArgumentError
from relaykit.ir import assert_structural_equal
from relaykit.ir.expr import Call, Constant
from relaykit.transform import FoldConstant, InferType, PassContext
from relaykit.transform.fold_constant import DEFAULT_MAX_FOLD_BYTES, fold_constant

BIG = (16384, 16384)  # 1 GiB of float32


def fold(f, config=None):
    with PassContext(config=config or {}):
        return FoldConstant()(tvm.IRModule.from_expr(f))["main"]


def expected(f):
    return InferType()(tvm.IRModule.from_expr(f))["main"]


def traced_peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_default_limit_is_64_mib():
    assert DEFAULT_MAX_FOLD_BYTES == 64 * 2**20


@pytest.mark.parametrize(
    "make",
    [
        lambda: relay.broadcast_to(relay.const(1.0), BIG),
        lambda: relay.full(relay.const(1.0), BIG, "float32"),
        lambda: relay.tile(relay.const(np.ones((1, 1), "float32")), BIG),
        lambda: relay.ones_like(relay.broadcast_to(relay.const(1.0), BIG)),
    ],
    ids=["broadcast_to", "full", "tile", "ones_like-of-broadcast"],
)
def test_a_gigabyte_result_stays_a_runtime_op_without_being_computed(make):
    f = relay.Function([], make())
    out = {}
    peak = traced_peak(lambda: out.setdefault("f", fold(f)))
    assert peak < 4 * 2**20, peak  # decided from the type: nothing was computed
    assert isinstance(out["f"].body, Call)
    assert_structural_equal(out["f"], expected(f))


def test_the_relay_build_bomb_is_bounded():
    mod = tvm.parse('#[version = "0.0.5"]\ndef @main() { broadcast_to(1f, shape=[16384, 16384]) }')
    peak = traced_peak(lambda: relay.build(mod, target="llvm"))
    assert peak < 64 * 2**20, peak


def test_the_limit_is_a_pass_context_option_and_the_result_is_unchanged():
    c = relay.const(np.arange(4, dtype="float32").reshape(4, 1))
    f = relay.Function([], relay.broadcast_to(c, (4, 16)))  # 256 bytes
    small = fold(f, {"relay.FoldConstant.max_bytes": 255})
    assert isinstance(small.body, Call)
    folded = fold(f, {"relay.FoldConstant.max_bytes": 256})
    assert isinstance(folded.body, Constant)
    want = np.broadcast_to(np.arange(4, dtype="float32").reshape(4, 1), (4, 16))
    np.testing.assert_array_equal(folded.body.data.numpy(), want)
    run = relay.create_executor("graph", mod=tvm.IRModule.from_expr(small)).evaluate()
    np.testing.assert_array_equal(run().numpy(), want)


def test_the_limit_applies_to_every_field_of_a_tuple_result():
    c = relay.const(np.ones((4, 8), "float32"))  # two (4, 4) halves of 64 bytes each
    f = relay.Function([], relay.split(c, 2, axis=1).astuple())
    assert isinstance(fold(f, {"relay.FoldConstant.max_bytes": 63}).body, Call)
    out = fold(f, {"relay.FoldConstant.max_bytes": 64}).body
    assert isinstance(out, relay.Tuple) and all(isinstance(x, Constant) for x in out.fields)


def test_zero_folds_nothing():
    f = relay.Function([], relay.add(relay.const(1.0), relay.const(2.0)))
    assert isinstance(fold(f, {"relay.FoldConstant.max_bytes": 0}).body, Call)
    assert fold(f).body.data.numpy() == 3.0


@pytest.mark.parametrize("bad", [-1, "64MiB", 1.5, True])
def test_a_bad_limit_is_a_typed_error(bad):
    f = relay.Function([], relay.add(relay.const(1.0), relay.const(2.0)))
    with pytest.raises(ArgumentError, match=r"relay.FoldConstant.max_bytes.*int >= 0"):
        fold(f, {"relay.FoldConstant.max_bytes": bad})


def test_untyped_expressions_are_typed_before_deciding():
    big = relay.broadcast_to(relay.const(1.0), BIG)
    small = relay.add(relay.const(1.0), relay.const(2.0))
    assert isinstance(fold_constant(big), Call)  # no InferType ran
    assert fold_constant(small).data.numpy() == 3.0
    assert isinstance(fold_constant(small, max_bytes=0), Call)


def test_products_are_bounded_by_their_work():
    a = relay.const(np.arange(12, dtype="float32").reshape(3, 4))
    w = relay.const(np.ones((5, 4), "float32"))
    f = relay.Function([], relay.nn.dense(a, w))  # 3 * 5 outputs of 4 multiply-adds: 60
    assert isinstance(fold(f, {"relay.FoldConstant.max_macs": 59}).body, Call)
    folded = fold(f, {"relay.FoldConstant.max_macs": 60}).body
    want = np.arange(12, dtype="float32").reshape(3, 4) @ np.ones((4, 5), "float32")
    np.testing.assert_allclose(folded.data.numpy(), want)


def test_a_product_of_two_expanded_constants_is_not_folded():
    big = relay.broadcast_to(relay.const(1.0), (4096, 4096))  # 64 MiB: folded
    f = relay.Function([], relay.nn.dense(big, big))  # 2**36 multiply-adds: not folded
    out = fold(f)
    assert isinstance(out.body, Call) and out.body.op.name == "nn.dense"
    assert all(isinstance(a, Constant) for a in out.body.args)


def test_a_bad_work_limit_is_a_typed_error():
    f = relay.Function([], relay.add(relay.const(1.0), relay.const(2.0)))
    with pytest.raises(ArgumentError, match=r"relay.FoldConstant.max_macs"):
        fold(f, {"relay.FoldConstant.max_macs": -5})
