"""FoldScaleAxis, CombineParallelDense/BatchMatmul and the optimisation pipeline."""

from __future__ import annotations

import numpy as np

from relaykit import relay
from relaykit.ir import IRModule, assert_structural_equal
from relaykit.transform import (
    PassContext,
    combine_parallel_batch_matmul,
    combine_parallel_dense,
    fold_scale_axis,
    forward_fold_scale_axis,
    optimize,
)

RNG = np.random.default_rng(0)


def _const(*shape):
    return relay.const(RNG.standard_normal(shape).astype("float32"))


def _run(mod_or_fn, *args):
    mod = mod_or_fn if isinstance(mod_or_fn, IRModule) else IRModule.from_expr(mod_or_fn)
    out = relay.create_executor("debug", mod=mod).evaluate()(*args)
    return tuple(o.numpy() for o in out) if isinstance(out, tuple) else out.numpy()


def test_fold_scale_into_conv_with_bias():
    x = relay.var("x", shape=(1, 2, 5, 5))
    w, b, s = _const(4, 2, 3, 3), _const(4), _const(4, 1, 1)
    conv = relay.nn.conv2d(x, w, padding=1)
    before = relay.Function([x], relay.multiply(relay.nn.bias_add(conv, b), s))
    vec = relay.squeeze(s, axis=[1, 2])  # TVM's form: the scale squeezed once, expanded per use
    w_scale = relay.expand_dims(vec, axis=1, num_newaxis=3)
    expected = relay.Function(
        [x],
        relay.nn.bias_add(
            relay.nn.conv2d(x, relay.multiply(w, w_scale), padding=1),
            relay.multiply(b, vec),
        ),
    )
    after = fold_scale_axis(before)
    assert_structural_equal(after, expected)
    data = RNG.standard_normal((1, 2, 5, 5)).astype("float32")
    np.testing.assert_allclose(_run(after, data), _run(before, data), rtol=1e-5, atol=1e-5)


def test_fold_scale_skips_shared_or_non_channel_scale():
    x = relay.var("x", shape=(1, 2, 5, 5))
    conv = relay.nn.conv2d(x, _const(4, 2, 1, 1))
    shared = relay.Function([x], relay.add(relay.multiply(conv, _const(4, 1, 1)), conv))
    assert fold_scale_axis(shared) is shared
    spatial = relay.Function([x], relay.multiply(conv, _const(1, 5, 5)))
    assert fold_scale_axis(spatial) is spatial


def test_pipeline_folds_batch_norm_into_conv():
    x = relay.var("x", shape=(1, 3, 6, 6))
    conv = relay.nn.conv2d(x, _const(8, 3, 3, 3), padding=1)
    gamma, beta, mean = _const(8), _const(8), _const(8)
    var = relay.const(np.abs(RNG.standard_normal(8)).astype("float32") + 0.5)
    bn = relay.nn.batch_norm(conv, gamma, beta, mean, var)[0]
    mod = IRModule.from_expr(relay.Function([x], relay.nn.relu(bn)))
    opt = optimize(mod)
    ops = []
    relay.analysis.post_order_visit(
        opt["main"], lambda n: ops.append(n.op.name) if isinstance(n, relay.Call) else None
    )
    assert ops == ["nn.conv2d", "add", "nn.relu"]
    data = RNG.standard_normal((1, 3, 6, 6)).astype("float32")
    np.testing.assert_allclose(_run(opt, data), _run(mod, data), rtol=1e-4, atol=1e-4)


def test_combine_parallel_dense_qkv():
    x = relay.var("x", shape=(2, 4))
    ws = [_const(8, 4), _const(8, 4), _const(6, 4)]
    before = relay.Function([x], relay.Tuple([relay.nn.dense(x, w) for w in ws]))
    merged = relay.nn.dense(x, relay.concatenate(ws, axis=0), units=22)
    parts = [
        relay.strided_slice(merged, begin=[0, b], end=[-1, n], strides=[1, 1], slice_mode="size")
        for b, n in ((0, 8), (8, 8), (16, 6))
    ]
    expected = relay.Function([x], relay.Tuple(parts))
    after = combine_parallel_dense(before)
    assert_structural_equal(after, expected)
    data = RNG.standard_normal((2, 4)).astype("float32")
    for got, want in zip(_run(after, data), _run(before, data), strict=False):
        np.testing.assert_allclose(got, want, rtol=1e-5)
    two = relay.Function([x], relay.Tuple([relay.nn.dense(x, w) for w in ws[:2]]))
    assert combine_parallel_dense(two) is two


def test_combine_parallel_batch_matmul():
    x = relay.var("x", shape=(2, 3, 4))
    ws = [_const(2, 5, 4) for _ in range(3)]
    before = relay.Function([x], relay.Tuple([relay.nn.batch_matmul(x, w) for w in ws]))
    after = combine_parallel_batch_matmul(before)
    assert after.body.fields[0].op.name == "strided_slice"
    assert after.body.fields[0].args[0].op.name == "nn.batch_matmul"
    data = RNG.standard_normal((2, 3, 4)).astype("float32")
    for got, want in zip(_run(after, data), _run(before, data), strict=False):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_combiners_run_at_opt_level_4_only():
    x = relay.var("x", shape=(2, 4))
    ws = [_const(8, 4) for _ in range(3)]
    mod = IRModule.from_expr(relay.Function([x], relay.Tuple([relay.nn.dense(x, w) for w in ws])))
    kept = optimize(mod)
    assert kept["main"].body.fields[0].op.name == "nn.dense"
    with PassContext(opt_level=4):
        merged = optimize(mod)
    first = merged["main"].body.fields[0]
    assert first.op.name == "strided_slice" and first.args[0].op.name == "nn.dense"


def test_backward_fold_passes_relu_and_add_bias_when_the_scale_is_positive():
    x = relay.var("x", shape=(1, 2, 5, 5))
    w, b = _const(4, 2, 3, 3), _const(4, 1, 1)
    pos = relay.const(np.abs(RNG.standard_normal((4, 1, 1))).astype("float32") + 0.1)
    neg = relay.const(-np.abs(RNG.standard_normal((4, 1, 1))).astype("float32"))
    data = RNG.standard_normal((1, 2, 5, 5)).astype("float32")
    for scale, folds in ((pos, True), (neg, False)):
        y = relay.nn.relu(relay.add(relay.nn.conv2d(x, w, padding=1), b))
        before = relay.Function([x], relay.multiply(y, scale))
        after = fold_scale_axis(before)
        assert (after.body.op.name == "nn.relu") is folds
        np.testing.assert_allclose(_run(after, data), _run(before, data), rtol=1e-5, atol=1e-5)


def test_forward_fold_moves_an_input_scale_into_the_weight():
    x = relay.var("x", shape=(2, 4))
    w, b = _const(3, 4), _const(4)
    scale = relay.const(np.abs(RNG.standard_normal(4)).astype("float32") + 0.1)
    y = relay.add(relay.nn.relu(relay.multiply(x, scale)), b)
    before = relay.Function([x], relay.nn.dense(y, w))
    after = forward_fold_scale_axis(before)
    assert after.body.args[1].op.name == "multiply"  # the weight, scaled
    assert after.body.args[0].args[1].op.name == "divide"  # the bias, divided
    data = RNG.standard_normal((2, 4)).astype("float32")
    np.testing.assert_allclose(_run(after, data), _run(before, data), rtol=1e-5, atol=1e-5)
    let_var = relay.var("v")
    kept = relay.Function([x], relay.Let(let_var, y, relay.nn.dense(let_var, w)))
    assert forward_fold_scale_axis(kept) is kept  # a let-bound value is not followed


def test_fold_scale_leaves_a_float32_scale_of_float16_weights():
    # after ToMixedPrecision (float16 conv accumulating in float32) a batch norm's float32
    # scale cannot go into the float16 weight: it stays a multiply, and the model still runs
    x = relay.var("x", shape=(1, 3, 6, 6))
    w16 = RNG.standard_normal((4, 3, 3, 3)).astype("float16")
    conv = relay.nn.conv2d(
        relay.cast(x, "float16"), relay.const(w16), padding=1, out_dtype="float32"
    )
    s = RNG.standard_normal((4, 1, 1)).astype("float32")
    before = relay.Function([x], relay.multiply(conv, relay.const(s)))
    assert fold_scale_axis(before) is before
    data = RNG.standard_normal((1, 3, 6, 6)).astype("float32")
    xp = np.pad(data.astype("float16").astype("float64"), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 4, 6, 6))
    for i in range(6):
        for j in range(6):
            ref[0, :, i, j] = np.einsum("cij,ocij->o", xp[0, :, i : i + 3, j : j + 3], w16)
    mod = IRModule.from_expr(before)
    with PassContext(opt_level=3):
        out = _run(optimize(mod), data)
    np.testing.assert_allclose(out, ref * s, rtol=1e-2, atol=1e-2)


def test_scales_fold_into_conv3d_in_both_directions_and_layouts():
    for layout, kernel_layout, dshape, wshape, cshape in (
        ("NCDHW", "OIDHW", (1, 2, 4, 4, 4), (3, 2, 3, 3, 3), (3, 1, 1, 1)),
        ("NDHWC", "DHWIO", (1, 4, 4, 4, 2), (3, 3, 3, 2, 3), (3,)),
    ):
        x = relay.var("x", shape=dshape)
        w = _const(*wshape)
        in_shape = (2, 1, 1, 1) if layout == "NCDHW" else (2,)
        s_in = relay.const(np.abs(RNG.standard_normal(in_shape)).astype("float32") + 0.1)
        s_out = relay.const(np.abs(RNG.standard_normal(cshape)).astype("float32") + 0.1)
        conv = relay.nn.conv3d(relay.multiply(x, s_in), w, padding=1, data_layout=layout,
                               kernel_layout=kernel_layout)  # fmt: skip
        before = relay.Function([x], relay.multiply(relay.nn.relu(conv), s_out))
        after = fold_scale_axis(forward_fold_scale_axis(before))
        assert after.body.op.name == "nn.relu"  # the output scale went into the weight
        assert after.body.args[0].args[0] is x  # and so did the input scale
        data = RNG.standard_normal(dshape).astype("float32")
        np.testing.assert_allclose(_run(after, data), _run(before, data), rtol=1e-5, atol=1e-5)
