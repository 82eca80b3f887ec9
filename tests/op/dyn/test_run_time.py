"""relaykit.op.dyn: reductions, slices, splits, pads, resizes and data-dependent ops
whose axes, extents or counts are run-time tensors. Each runs on the Relay VM and on the
interpreter from one compiled module and is checked against NumPy (an independent
computation), along with its type (``?`` where the value decides) and its shape
function."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.op import dyn as dyn_ops
from relaykit.op.shape_func import output_shapes
from relaykit.transform import DynamicToStatic

RNG = np.random.default_rng(7)


def _var(name, value):
    value = np.asarray(value)
    return relay.var(name, shape=value.shape, dtype=value.dtype.name)


def run_both(build, *values):
    """``build(*vars)`` over vars shaped like ``values``; the results of the VM and of
    the interpreter (they must agree), and the call's type."""
    vs = [_var(f"a{i}", v) for i, v in enumerate(values)]
    body = build(*vs)
    mod = tvm.IRModule.from_expr(relay.Function(vs, body))
    mod = relay.transform.InferType()(mod)
    vm = relay.create_executor("vm", mod=mod).evaluate()(*values)
    dbg = relay.create_executor("debug", mod=mod).evaluate()(*values)

    def arrays(v):
        if hasattr(v, "numpy"):
            return [v.numpy()]
        return [a for x in v for a in arrays(x)]

    got, ref = arrays(vm), arrays(dbg)
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_array_equal(g, r)
    return got, mod["main"].body.checked_type


@pytest.mark.parametrize("name", dyn_ops.REDUCTIONS)
@pytest.mark.parametrize("axes", [[1], [0, 2], [-1], []])
@pytest.mark.parametrize("keep", [False, True])
def test_reductions_over_run_time_axes(name, axes, keep):
    x = RNG.uniform(0.5, 1.5, (2, 3, 4)).astype("float32")
    ax = np.array(axes, "int64")
    (got,), ty = run_both(lambda a, b: dyn_ops.reduce(name, a, b, keep), x, ax)
    fn = getattr(
        np, {"sum": "sum", "mean": "mean", "max": "max", "min": "min", "prod": "prod"}[name]
    )
    want = fn(x, axis=tuple(axes) if axes else None, keepdims=keep)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert len(ty.shape) == want.ndim


def test_reduction_with_empty_axes_and_noop_is_the_identity():
    x = RNG.standard_normal((2, 3)).astype("float32")
    (got,), ty = run_both(
        lambda a, b: dyn_ops.reduce("sum", a, b, noop_with_empty_axes=True), x, np.zeros(0, "int64")
    )
    np.testing.assert_array_equal(got, x)
    assert str(ty) == "Tensor[(2, 3), float32]"


def test_reduction_type_has_dynamic_dims():
    x = relay.var("x", shape=(2, 3, 4))
    ax = relay.var("ax", shape=(2,), dtype="int64")
    f = relay.Function([x, ax], dyn_ops.reduce("max", x, ax))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    assert str(mod["main"].body.checked_type) == "Tensor[(?), float32]"


def test_reduction_folds_to_the_static_op_for_constant_axes():
    x = relay.var("x", shape=(2, 3))
    f = relay.Function([x], dyn_ops.reduce("sum", x, relay.const(np.array([1], "int64"))))
    mod = DynamicToStatic()(tvm.IRModule.from_expr(f))
    body = mod["main"].body
    assert body.op.name == "sum" and str(body.checked_type) == "Tensor[(2), float32]"


@pytest.mark.parametrize("kind", ["sum", "prod"])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumulative_along_a_run_time_axis(kind, exclusive, reverse, axis):
    x = RNG.integers(1, 4, (3, 4)).astype("int32")
    (got,), ty = run_both(
        lambda a, b: dyn_ops.cumulative(a, b, kind, exclusive, reverse), x, np.array(axis, "int64")
    )
    fn = np.cumsum if kind == "sum" else np.cumprod
    data = np.flip(x, axis) if reverse else x
    want = fn(data, axis=axis)
    if exclusive:  # shift by one, the identity first
        ident = 0 if kind == "sum" else 1
        want = np.concatenate(
            [np.full_like(np.take(want, [0], axis), ident), np.delete(want, -1, axis)], axis
        )
    want = np.flip(want, axis) if reverse else want
    np.testing.assert_array_equal(got, want)
    assert str(ty) == "Tensor[(3, 4), int32]"


@pytest.mark.parametrize(
    "starts, ends, axes, steps",
    [
        ([1], [3], [], []),
        ([0, 1], [2, 10**9], [0, 1], [1, 2]),
        ([-1], [-(10**9)], [1], [-1]),
        ([2, -3], [0, 100], [-2, 2], [-1, 1]),
    ],
)
def test_slice_axes_is_numpy_slicing(starts, ends, axes, steps):
    x = RNG.standard_normal((3, 5, 4)).astype("float32")
    arrs = [np.array(v, "int64") for v in (starts, ends, axes, steps)]
    (got,), ty = run_both(dyn_ops.slice_axes, x, *arrs)
    index = [slice(None)] * 3
    spans = zip(starts, ends, axes or range(len(starts)), steps or [1] * len(starts), strict=True)
    for s, e, a, k in spans:
        index[a] = slice(s, e, k)
    np.testing.assert_array_equal(got, x[tuple(index)])
    assert len(ty.shape) == 3


@pytest.mark.parametrize("sizes, axis", [([1, 4], 1), ([2, 0, 1], 0), ([5], 1)])
def test_split_into_run_time_sizes(sizes, axis):
    x = RNG.standard_normal((3, 5)).astype("float32")
    got, ty = run_both(lambda a, b: dyn_ops.split(a, b, axis), x, np.array(sizes, "int64"))
    want = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    assert len(got) == len(want) == len(ty.fields)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_split_sizes_must_add_up():
    x = np.zeros((3, 5), "float32")
    with pytest.raises(Exception, match="do not add up"):
        run_both(lambda a, b: dyn_ops.split(a, b, 1), x, np.array([1, 1], "int64"))


@pytest.mark.parametrize("axes", [[0], [1, -1], [0, 3]])
def test_unsqueeze_at_run_time_axes(axes):
    x = RNG.standard_normal((2, 3)).astype("float32")
    (got,), ty = run_both(dyn_ops.unsqueeze, x, np.array(axes, "int64"))
    n = x.ndim + len(axes)
    np.testing.assert_array_equal(got, np.expand_dims(x, tuple(a % n for a in axes)))
    assert len(ty.shape) == n


@pytest.mark.parametrize("shape", [[3, 1], [2, 1, 4], [1]])
def test_expand_broadcasts_both_ways(shape):
    x = RNG.standard_normal((3, 4)).astype("float32")
    x = x[:, :1] if shape == [2, 1, 4] else x  # (3, 1) against (2, 1, 4): (2, 3, 4)
    (got,), _ = run_both(dyn_ops.expand, x, np.array(shape, "int64"))
    want = x * np.ones(shape, "float32")
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads, axes", [([1, 2, 0, 1], []), ([2, 1], [1]), ([1, -1, 0, 2], [])])
def test_pad_axes_pads_and_crops(mode, pads, axes):
    x = RNG.standard_normal((3, 4)).astype("float32")
    value = np.array(2.5, "float32")
    (got,), _ = run_both(
        lambda a, b, c, d: dyn_ops.pad_axes(a, b, c, d, mode),
        x,
        np.array(pads, "int64"),
        value,
        np.array(axes, "int64"),
    )
    k = len(axes) or 2
    axes_ = axes or [0, 1]
    width = [[0, 0], [0, 0]]
    for j, a in enumerate(axes_):
        width[a] = [pads[j], pads[j + k]]
    grow = [(max(b, 0), max(e, 0)) for b, e in width]
    kw = {"constant_values": 2.5} if mode == "constant" else {}
    want = np.pad(x, grow, mode=mode, **kw)
    want = want[
        tuple(slice(max(-b, 0), want.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(width))
    ]
    np.testing.assert_array_equal(got, want)


def test_center_crop_pad():
    x = np.arange(20, dtype="float32").reshape(4, 5)
    (got,), _ = run_both(dyn_ops.center_crop_pad, x, np.array([2, 7], "int64"))
    want = np.zeros((2, 7), "float32")
    want[:, 1:6] = x[1:3]
    np.testing.assert_array_equal(got, want)


def test_resize_to_run_time_sizes_and_scales():
    x = RNG.standard_normal((1, 1, 2, 3)).astype("float32")
    empty_f, empty_i = np.zeros(0, "float32"), np.zeros(0, "int64")
    # nearest, asymmetric, floor: output pixel i reads input floor(i / scale)
    attrs = {
        "method": "nearest",
        "coordinate_transformation_mode": "asymmetric",
        "rounding_method": "floor",
    }
    (got,), _ = run_both(
        lambda a, r, s, z: dyn_ops.image_resize(a, r, s, z, **attrs),
        x,
        empty_f,
        np.array([1, 1, 2, 2], "float32"),
        empty_i,
    )
    np.testing.assert_array_equal(got, x.repeat(2, axis=2).repeat(2, axis=3))
    (got,), _ = run_both(
        lambda a, r, s, z: dyn_ops.image_resize(a, r, s, z, axes=(2, 3), **attrs),
        x,
        empty_f,
        empty_f,
        np.array([4, 9], "int64"),
    )
    np.testing.assert_array_equal(got, x.repeat(2, axis=2).repeat(3, axis=3))


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_compress(axis):
    x = RNG.standard_normal((3, 4)).astype("float32")
    cond = np.array([True, False, True], bool)
    (got,), _ = run_both(lambda a, b: dyn_ops.compress(a, b, axis), x, cond)
    np.testing.assert_array_equal(got, np.compress(cond, x, axis=axis))


@pytest.mark.parametrize("axis", [None, 0])
def test_unique_matches_numpy(axis):
    x = np.array([[1, 2], [1, 2], [0, 5]], "int64")
    got, ty = run_both(lambda a: dyn_ops.unique(a, axis), x)
    y, first, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True, axis=axis
    )
    np.testing.assert_array_equal(got[0], y)
    np.testing.assert_array_equal(got[1], first)
    np.testing.assert_array_equal(got[2], inverse.reshape(-1))
    np.testing.assert_array_equal(got[3], counts)
    assert len(ty.fields) == 4


def test_non_max_suppression_by_hand():
    # box 1 overlaps box 0 (IoU 0.9/1.1); box 2 is far away; box 3 has the top score
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6], [0, 10, 1, 11]]], "float32")
    scores = np.array([[[0.9, 0.8, 0.7, 0.95]]], "float32")
    (got,), ty = run_both(
        dyn_ops.non_max_suppression,
        boxes,
        scores,
        np.array([10], "int64"),
        np.array([0.5], "float32"),
        np.array([0.75], "float32"),
    )
    assert got.tolist() == [[0, 0, 3], [0, 0, 0]]  # box 2 is below the score threshold
    assert str(ty) == "Tensor[(?, 3), int64]"


@pytest.mark.parametrize("periodic", [True, False])
def test_window_is_numpy_hann(periodic):
    n = 8
    (got,), _ = run_both(lambda s: dyn_ops.window(s, (0.5, 0.5), periodic), np.array(n, "int64"))
    want = np.hanning(n + 1)[:-1] if periodic else np.hanning(n)
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_shape_functions_follow_the_values():
    x = np.zeros((2, 3, 4), "float32")
    assert output_shapes(
        "dyn.sum", {"keepdims": False, "noop_with_empty_axes": False}, [x, np.array([1])]
    ) == [(2, 4)]
    assert output_shapes("dyn.unsqueeze", {}, [x, np.array([0, 4])]) == [(1, 2, 3, 4, 1)]
    assert output_shapes("dyn.split", {"axis": 2}, [x, np.array([1, 3])]) == [(2, 3, 1), (2, 3, 3)]
    assert output_shapes("dyn.compress", {"axis": 1}, [x, np.array([True, False, True])]) == [
        (2, 2, 4)
    ]


def _naive_dft(z, axis, inverse):
    """The DFT by its definition (a sum per frequency), along ``axis``."""
    n = z.shape[axis]
    k = np.arange(n)
    sign = 1 if inverse else -1
    w = np.exp(sign * 2j * np.pi * np.outer(k, k) / n)
    out = np.moveaxis(np.tensordot(w, np.moveaxis(z, axis, 0), axes=(1, 0)), 0, axis)
    return out / n if inverse else out


@pytest.mark.parametrize("axis", [1, 2, -2])
@pytest.mark.parametrize("inverse", [False, True])
def test_dft_along_a_run_time_axis(axis, inverse):
    x = RNG.standard_normal((2, 4, 6, 2))
    (got,), ty = run_both(
        lambda a, n, ax: dyn_ops.dft(a, n, ax, inverse), x, np.zeros(0, "int64"), np.array(axis)
    )
    want = _naive_dft(x[..., 0] + 1j * x[..., 1], axis % 4, inverse)
    np.testing.assert_allclose(got[..., 0], want.real, atol=1e-9)
    np.testing.assert_allclose(got[..., 1], want.imag, atol=1e-9)
    assert len(ty.shape) == 4 and ty.shape[-1] == 2


def test_dft_onesided_keeps_the_first_half():
    x = RNG.standard_normal((1, 8, 1))
    (got,), _ = run_both(
        lambda a, n, ax: dyn_ops.dft(a, n, ax, onesided=True),
        x,
        np.zeros(0, "int64"),
        np.array(1),
    )
    want = _naive_dft(x[..., 0].astype(complex), 1, False)[:, :5]
    np.testing.assert_allclose(got[..., 0] + 1j * got[..., 1], want, atol=1e-9)


def test_stft_frames_a_signal():
    x = RNG.standard_normal((1, 16, 1))
    (got,), _ = run_both(
        lambda a, st, w, n: dyn_ops.stft(a, st, w, n, onesided=False, has_window=False),
        x,
        np.array(4, "int64"),
        np.zeros(0),
        np.array(8, "int64"),
    )
    frames = [x[0, s : s + 8, 0] for s in (0, 4, 8)]
    want = np.stack([_naive_dft(f.astype(complex), 0, False) for f in frames])
    np.testing.assert_allclose(got[0, ..., 0] + 1j * got[0, ..., 1], want, atol=1e-9)


def test_col2im_of_non_overlapping_blocks_is_a_rearrangement():
    # 2x2 blocks tiling a 4x6 image: each column is one block, in row-major block order
    img = np.arange(24, dtype="float32").reshape(1, 1, 4, 6)
    cols = img.reshape(1, 1, 2, 2, 3, 2).transpose(0, 1, 3, 5, 2, 4).reshape(1, 4, 6)
    (got,), ty = run_both(
        lambda a, i, b: dyn_ops.col2im(a, i, b, strides=(2, 2)),
        cols,
        np.array([4, 6], "int64"),
        np.array([2, 2], "int64"),
    )
    np.testing.assert_array_equal(got, img)
    assert len(ty.shape) == 4


def test_col2im_sums_overlaps():
    # 1-D, blocks of 2 with stride 1 over 3 pixels: the middle pixel is covered twice
    cols = np.array([[[1.0, 10.0], [2.0, 20.0]]], "float32")  # (1, C*k=2, L=2)
    (got,), _ = run_both(
        lambda a, i, b: dyn_ops.col2im(a, i, b),
        cols,
        np.array([3], "int64"),
        np.array([2], "int64"),
    )
    np.testing.assert_array_equal(got, [[[1.0, 2.0 + 10.0, 20.0]]])


@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_of_the_identity_is_the_base_grid(align):
    theta = np.array([[[1.0, 0, 0], [0, 1.0, 0]]], "float32")
    (got,), ty = run_both(
        lambda t, s: dyn_ops.affine_grid(t, s, align), theta, np.array([1, 1, 3, 4], "int64")
    )
    if align:
        ys, xs = np.linspace(-1, 1, 3), np.linspace(-1, 1, 4)
    else:
        ys, xs = (2 * np.arange(3) + 1) / 3 - 1, (2 * np.arange(4) + 1) / 4 - 1
    np.testing.assert_allclose(got[0, ..., 0], np.tile(xs, (3, 1)), atol=1e-6)
    np.testing.assert_allclose(got[0, ..., 1], np.tile(ys[:, None], (1, 4)), atol=1e-6)
    assert len(ty.shape) == 4 and ty.shape[-1] == 2


def test_dropout_in_training_mode_is_seeded():
    x = RNG.standard_normal((4, 5)).astype("float32")
    build = lambda a, r, t: dyn_ops.dropout(a, r, t, seed=3)  # noqa: E731
    (y, mask), _ = run_both(build, x, np.array(0.5, "float32"), np.array(True))
    want_mask = np.random.RandomState(3).uniform(0, 1, x.shape) >= 0.5
    np.testing.assert_array_equal(mask, want_mask)
    np.testing.assert_allclose(y, x * want_mask * 2, rtol=1e-6)
    for ratio, training in ((0.5, False), (0.0, True)):
        (y, mask), _ = run_both(build, x, np.array(ratio, "float32"), np.array(training))
        np.testing.assert_array_equal(y, x)
        assert mask.all()


@pytest.mark.parametrize(("name", "fill"), [("max", -np.inf), ("min", np.inf)])
def test_max_and_min_over_an_empty_axis_are_the_extremes(name, fill):
    x = np.zeros((2, 0, 3), "float32")
    (got,), _ = run_both(lambda a, b: dyn_ops.reduce(name, a, b, True), x, np.array([1]))
    assert got.shape == (2, 1, 3) and (got == fill).all()


@pytest.mark.parametrize(
    ("sa", "sb"), [((2, 1, 3, 4), (5, 4, 2)), ((4,), (3, 4, 2)), ((2, 3, 4), (4,))]
)
def test_matmul_broadcasts_batches_as_numpy(sa, sb):
    a = RNG.standard_normal(sa).astype("float32")
    b = RNG.standard_normal(sb).astype("float32")
    (got,), ty = run_both(dyn_ops.matmul, a, b)
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    want = np.einsum("...ij,...jk->...ik", a2, b2)  # broadcasting batch dims
    if a.ndim == 1:
        want = want[..., 0, :]
    if b.ndim == 1:
        want = want[..., 0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert tuple(ty.shape) == want.shape


def test_matmul_relation_keeps_what_it_knows():
    a = relay.var("a", shape=(relay.Any(), 3, relay.Any(), 4))
    b = relay.var("b", shape=(4, relay.Any()))
    mod = relay.transform.InferType()(
        tvm.IRModule.from_expr(relay.Function([a, b], dyn_ops.matmul(a, b)))
    )
    assert str(mod["main"].body.checked_type) == "Tensor[(?, 3, ?, ?), float32]"


def test_as_dynamic_is_the_identity_with_dynamic_dims():
    x = RNG.standard_normal((2, 3)).astype("float32")
    (got,), ty = run_both(dyn_ops.as_dynamic, x)
    np.testing.assert_array_equal(got, x)
    assert str(ty) == "Tensor[(?, ?), float32]"
    # no pass turns it back into a static shape
    v = relay.var("v", shape=(2, 3))
    mod = tvm.IRModule.from_expr(relay.Function([v], dyn_ops.as_dynamic(v)))
    mod = relay.transform.FoldConstant()(DynamicToStatic()(mod))
    assert str(mod["main"].body.checked_type) == "Tensor[(?, ?), float32]"
