"""SimplifyExpr's rule set: each rewrite is checked for its form and for computing what
NumPy arithmetic written here computes."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.ir import IRModule
from relaykit.transform import InferType, SimplifyExpr


def _simplify(expr: relay.Expr) -> IRModule:
    params = relay.analysis.free_vars(expr)
    return SimplifyExpr()(InferType()(IRModule.from_expr(relay.Function(params, expr))))


def _run(mod: IRModule, *args: np.ndarray) -> np.ndarray:
    return relay.create_executor(mod=mod).evaluate()(*args).numpy()


def _ops(mod: IRModule) -> list[str]:
    from relaykit.ir.functor import post_order

    return [
        n.op.name
        for n in post_order(mod["main"])
        if isinstance(n, relay.Call) and hasattr(n.op, "name")
    ]


def test_constants_around_add_and_multiply_fold_into_one_multiply_add():
    x = relay.var("x", shape=(4,))
    c1, c2, c3 = (np.array(v, "float32") for v in ([1, 2, 3, 4], [0.5, 2, -1, 3], [9, 8, 7, 6]))
    expr = (relay.const(c1) + x) * relay.const(c2) + relay.const(c3)
    out = _simplify(expr)
    assert sorted(_ops(out)) == ["add", "multiply"]
    data = np.array([1.0, -2.0, 0.25, 8.0], "float32")
    np.testing.assert_allclose(_run(out, data), (c1 + data) * c2 + c3, rtol=1e-6)


def test_transposes_and_layout_transforms_merge_into_the_same_permutation():
    x = relay.var("x", shape=(1, 3, 4, 5))
    y = relay.transpose(x, axes=[0, 2, 3, 1])
    y = relay.layout_transform(y, "NHWC", "HWCN")
    y = relay.transpose(y, axes=[3, 0, 1, 2])
    out = _simplify(y)
    assert _ops(out) == ["transpose"]
    data = np.arange(60, dtype="float32").reshape(1, 3, 4, 5)
    np.testing.assert_array_equal(_run(out, data), data.transpose(0, 2, 3, 1))


def test_layout_transform_pairs_cancel_or_merge():
    x = relay.var("x", shape=(1, 8, 2, 2))
    there_and_back = relay.layout_transform(
        relay.layout_transform(x, "NCHW", "NCHW4c"), "NCHW4c", "NCHW"
    )
    assert _ops(_simplify(relay.nn.relu(there_and_back))) == ["nn.relu"]
    y = relay.layout_transform(relay.layout_transform(x, "NCHW", "NCHW2c"), "NCHW2c", "NCHW4c")
    out = _simplify(y)
    assert _ops(out) == ["layout_transform"]
    data = np.arange(32, dtype="float32").reshape(1, 8, 2, 2)
    want = data.reshape(1, 2, 4, 2, 2).transpose(0, 1, 3, 4, 2)
    np.testing.assert_array_equal(_run(out, data), want)


def test_casts_after_a_clip_drop_only_when_the_clip_range_fits():
    x = relay.var("x", shape=(5,))
    y = relay.cast(relay.cast(relay.clip(x, 0.0, 255.0), "uint8"), "int32")
    out = _simplify(y)
    assert _ops(out) == ["clip", "cast"]
    data = np.array([-3.5, 0.0, 17.9, 254.6, 900.0], "float32")
    np.testing.assert_array_equal(
        _run(out, data), np.clip(data, 0, 255).astype("uint8").astype("int32")
    )
    narrow = relay.cast(relay.cast(relay.clip(x, 0.0, 255.0), "int8"), "int32")
    assert _ops(_simplify(narrow)) == ["clip", "cast", "cast"]


def test_dequantize_before_argmax_reads_the_quantized_tensor():
    q = relay.var("q", shape=(2, 5), dtype="int8")
    expr = relay.argmax(relay.qnn.op.dequantize(q, relay.const(0.5), relay.const(3)), axis=1)
    out = _simplify(expr)
    assert _ops(out) == ["argmax"]
    data = np.array([[1, -4, 7, 2, 0], [-9, 3, 3, -1, 5]], "int8")
    np.testing.assert_array_equal(_run(out, data), np.argmax((data - 3) * 0.5, axis=1))


def test_integer_binomial_factors_exactly():
    x = relay.var("x", shape=(4,), dtype="int32")
    y = relay.var("y", shape=(4,), dtype="int32")
    six, five = relay.const(6, "int32"), relay.const(5, "int32")
    expr = six * x * x + five * x * y + y * y
    out = _simplify(expr)
    a = np.array([1, -2, 3, 7], "int32")
    b = np.array([4, 5, -6, 0], "int32")
    np.testing.assert_array_equal(_run(out, a, b), 6 * a * a + 5 * a * b + b * b)
    assert _ops(out).count("multiply") < 5


def test_like_operators_become_explicit_shapes():
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(3,))
    expr = relay.collapse_sum_like(relay.ones_like(x + y), y) + relay.zeros_like(y)
    out = _simplify(expr)
    assert sorted(_ops(out)) == ["collapse_sum_to", "ones"]
    np.testing.assert_allclose(
        _run(out, np.zeros((2, 3), "float32"), np.zeros(3, "float32")), np.full(3, 2.0)
    )
