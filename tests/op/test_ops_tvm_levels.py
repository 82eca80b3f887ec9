"""Operators TVM's level 4/5 op tests use: logsumexp, strided_set, dilation2d,
crop_and_resize, affine_grid, depth/space rearrangements, roi_pool, yolo_reorg,
multibox_prior and deformable_conv2d, each against a loop written from its
definition (or scipy), never against relaykit's kernels."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import logsumexp as sp_logsumexp

from relaykit import relay
from relaykit.errors import IRError, RelayTypeError
from relaykit.op import TypeRelError, image, nn, vision

from .conftest import run, tvar


def evaluate(expr, params):
    """Run ``expr`` (free vars = ``params`` names) through the graph executor."""
    args = [relay.var(n, shape=v.shape, dtype=str(v.dtype)) for n, v in params.items()]
    func = relay.Function(args, expr(*args))
    return relay.create_executor("graph").evaluate(func)(*params.values()).numpy()


# -- logsumexp / strided_set / fp16 mean ---------------------------------------------------------


@pytest.mark.parametrize(
    ("axis", "keepdims"),
    [(None, False), (1, False), ((0, 2), True), (-1, True), ((0, 1, 2), False)],
)
def test_logsumexp_matches_scipy(rng, axis, keepdims):
    x = (rng.standard_normal((3, 4, 5)) * 30).astype("float32")
    got = evaluate(lambda a: relay.logsumexp(a, axis, keepdims), {"x": x})
    want = sp_logsumexp(x.astype(np.float64), axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize(
    ("shape", "begin", "end", "strides"),
    [
        ((3, 4, 16), [0, 0, 0], [4, -5, 4], [1, -1, 2]),
        ((3, 4, 3), [1, -1, 0], [2, -3, 3], [1, -1, 1]),
        ((3, 4, 3), [1, 1, 0], [4, 1000, 3], None),
        ((3, 4, 3), [1, 1], [4, 4, 3], None),
    ],
)
def test_strided_set_matches_slice_assignment(rng, shape, begin, end, strides):
    x = rng.random(shape).astype("float32")
    slices = tuple(
        slice(
            begin[i] if i < len(begin) else None,
            end[i] if i < len(end) else None,
            strides[i] if strides and i < len(strides) else None,
        )
        for i in range(len(shape))
    )
    want = x.copy()
    v = rng.random(want[slices].shape).astype("float32")
    want[slices] = v

    def build(a, b):
        c = relay.const
        st = None if strides is None else c(np.array(strides, "int32"))
        return relay.strided_set(a, b, c(np.array(begin, "int32")), c(np.array(end, "int32")), st)

    np.testing.assert_array_equal(evaluate(build, {"x": x, "v": v}), want)


def test_strided_set_checks_value_dtype():
    x, v = tvar("x", (3, 4)), tvar("v", (1, 4), "int32")
    c = relay.const(np.array([0], "int32"))
    with pytest.raises(RelayTypeError, match="dtype of data"):
        relay.transform.InferType()(relay.IRModule.from_expr(relay.strided_set(x, v, c, c)))


def test_float16_mean_does_not_overflow(rng):
    x = rng.random((128, 24, 128)).astype("float16")
    got = evaluate(lambda a: relay.mean(a), {"x": x})
    assert np.isfinite(got)
    np.testing.assert_allclose(float(got), float(x.astype(np.float64).mean()), rtol=1e-2)


def test_te_var_is_a_symbolic_dimension():
    from relaykit import te, tir

    n = te.var("n")
    assert isinstance(n, tir.Var) and n.name == "n"
    assert isinstance(te.size_var("m"), tir.SizeVar)
    assert relay.TensorType((n, 3)).shape == (n, 3)
    with pytest.raises(IRError, match="not an integer"):
        relay.TensorType(("n", 3))


# -- dilation2d -----------------------------------------------------------------------------------


def naive_dilation2d(x, k, strides, pads, dil):
    """NCHW data, IHW kernel; zero padding as TVM pads."""
    n, c, h, w = x.shape
    _, kh, kw = k.shape
    pt, pl, pb, pr = pads
    oh = (h + pt + pb - (kh - 1) * dil[0] - 1) // strides[0] + 1
    ow = (w + pl + pr - (kw - 1) * dil[1] - 1) // strides[1] + 1
    out = np.zeros((n, c, oh, ow))
    for b, ch, i, j in itertools.product(range(n), range(c), range(oh), range(ow)):
        best = -math.inf
        for a, e in itertools.product(range(kh), range(kw)):
            y, z = i * strides[0] + a * dil[0] - pt, j * strides[1] + e * dil[1] - pl
            v = x[b, ch, y, z] if 0 <= y < h and 0 <= z < w else 0.0
            best = max(best, v + k[ch, a, e])
        out[b, ch, i, j] = best
    return out


@pytest.mark.parametrize(
    ("strides", "padding", "dilations"),
    [((1, 1), (0, 0), (1, 1)), ((2, 1), (1, 0, 2, 1), (1, 2)), ((1, 2), (1, 1), (2, 2))],
)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_dilation2d_matches_loops(rng, strides, padding, dilations, layout):
    x = rng.standard_normal((2, 3, 7, 6)).astype("float32")
    k = rng.standard_normal((3, 2, 3)).astype("float32")
    pads = padding if len(padding) == 4 else padding * 2
    want = naive_dilation2d(x, k, strides, pads, dilations)
    if layout == "NHWC":
        x, k, want = x.transpose(0, 2, 3, 1), k.transpose(1, 2, 0), want.transpose(0, 2, 3, 1)
    call = image.dilation2d(
        tvar("x", x.shape), tvar("k", k.shape), strides, padding, dilations,
        layout, "IHW" if layout == "NCHW" else "HWI",
    )  # fmt: skip
    np.testing.assert_allclose(run(call, x, k), want, rtol=1e-5, atol=1e-6)


def test_dilation2d_rejects_mismatched_layouts():
    call = image.dilation2d(tvar("x", (1, 3, 4, 4)), tvar("k", (3, 2, 2)), kernel_layout="HWI")
    with pytest.raises(TypeRelError, match="NCHW/IHW"):
        call.op.get_attr("FTypeRelation")(
            [TensorTypeOf((1, 3, 4, 4)), TensorTypeOf((3, 2, 2))], call.attrs
        )


def TensorTypeOf(shape, dtype="float32"):
    return relay.TensorType(shape, dtype)


# -- crop_and_resize / affine_grid ----------------------------------------------------------------


def naive_crop(img, boxes, idx, crop, method, extrap):
    """NCHW; TensorFlow's definition, one output pixel at a time."""
    _, c, h, w = img.shape
    out = np.zeros((len(boxes), c, *crop))
    for b, (y1, x1, y2, x2) in enumerate(boxes.astype(np.float64)):
        for i, j in itertools.product(range(crop[0]), range(crop[1])):
            y = (
                y1 * (h - 1) + i * (y2 - y1) * (h - 1) / (crop[0] - 1)
                if crop[0] > 1
                else (0.5 * (y1 + y2) * (h - 1))
            )
            x = (
                x1 * (w - 1) + j * (x2 - x1) * (w - 1) / (crop[1] - 1)
                if crop[1] > 1
                else (0.5 * (x1 + x2) * (w - 1))
            )
            if not (0 <= y <= h - 1 and 0 <= x <= w - 1):
                out[b, :, i, j] = extrap
                continue
            im = img[idx[b]]
            if method == "nearest_neighbor":
                out[b, :, i, j] = im[:, int(np.rint(y)), int(np.rint(x))]
                continue
            t, lf = math.floor(y), math.floor(x)
            bt, r = math.ceil(y), math.ceil(x)
            dy, dx = y - t, x - lf
            top = im[:, t, lf] + (im[:, t, r] - im[:, t, lf]) * dx
            bot = im[:, bt, lf] + (im[:, bt, r] - im[:, bt, lf]) * dx
            out[b, :, i, j] = top + (bot - top) * dy
    return out


@pytest.mark.parametrize("method", ["bilinear", "nearest_neighbor"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("crop", [(5, 7), (1, 3)])
def test_crop_and_resize_matches_loops(rng, method, layout, crop):
    img = rng.random((3, 2, 9, 11)).astype("float32")
    boxes = np.array([[0.1, 0.23, 0.8, 0.9], [0.5, -0.2, 0.1, 1.3], [0, 0, 1, 1]], "float32")
    idx = np.array([2, 0, 1], "int32")
    want = naive_crop(img, boxes, idx, crop, method, -1.5)
    if layout == "NHWC":
        img, want = img.transpose(0, 2, 3, 1), want.transpose(0, 2, 3, 1)
    call = image.crop_and_resize(
        tvar("i", img.shape), tvar("b", boxes.shape), tvar("n", idx.shape, "int32"),
        crop, layout, method, -1.5,
    )  # fmt: skip
    np.testing.assert_allclose(run(call, img, boxes, idx), want, rtol=1e-5, atol=1e-6)


def test_affine_grid_matches_loops(rng):
    theta = rng.standard_normal((2, 2, 3)).astype("float32")
    h, w = 4, 6
    want = np.zeros((2, 2, h, w))
    for n, i, j in itertools.product(range(2), range(h), range(w)):
        x, y = -1 + 2 * j / (w - 1), -1 + 2 * i / (h - 1)
        want[n, :, i, j] = theta[n] @ np.array([x, y, 1.0])
    got = run(image.affine_grid(tvar("t", theta.shape), (h, w)), theta)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- depth/space rearrangements -------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["DCR", "CRD", "CDR"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_depth_to_space_matches_index_formula(rng, mode, layout):
    b = 2
    x = rng.random((2, 8, 3, 4)).astype("float32")
    n, c, h, w = x.shape
    oc = c // (b * b)
    want = np.zeros((n, oc, h * b, w * b), "float32")
    for bn, k, y, z in itertools.product(range(n), range(oc), range(h * b), range(w * b)):
        by, bx = y % b, z % b
        src = (by * b + bx) * oc + k if mode == "DCR" else k * b * b + by * b + bx
        want[bn, k, y, z] = x[bn, src, y // b, z // b]
    if layout == "NHWC":
        x, want = x.transpose(0, 2, 3, 1), want.transpose(0, 2, 3, 1)
    got = run(nn.depth_to_space(tvar("x", x.shape), b, layout, mode), x)
    np.testing.assert_array_equal(got, want)
    if mode == "DCR":  # space_to_depth is its inverse
        back = run(nn.space_to_depth(tvar("y", got.shape), b, layout), got)
        np.testing.assert_array_equal(back, x)


def test_space_to_batch_nd_matches_index_formula(rng):
    x = rng.random((2, 3, 4, 5)).astype("float32")
    block, pads = (2, 3), ((1, 0), (0, 2))
    padded = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    oh, ow = padded.shape[1] // 2, padded.shape[2] // 3
    want = np.zeros((2 * 6, oh, ow, 5), "float32")
    for a, e, n in itertools.product(range(2), range(3), range(2)):
        want[(a * 3 + e) * 2 + n] = padded[n, a::2, e::3]
    got = run(nn.space_to_batch_nd(tvar("x", x.shape), block, pads), x)
    np.testing.assert_array_equal(got, want)
    crops = pads
    back = run(nn.batch_to_space_nd(tvar("y", got.shape), block, crops), got)
    np.testing.assert_array_equal(back, x)


def test_space_to_batch_nd_rejects_uneven_blocks():
    call = nn.space_to_batch_nd(tvar("x", (1, 5, 4)), (2,), ((0, 0),))
    with pytest.raises(TypeRelError, match="not a multiple of 2"):
        call.op.get_attr("FTypeRelation")([TensorTypeOf((1, 5, 4))], call.attrs)


# -- vision ---------------------------------------------------------------------------------------


def test_roi_pool_matches_loops(rng):
    x = rng.random((2, 3, 10, 12)).astype("float32")
    rois = np.array([[0, 1.2, 2.7, 8.1, 6.4], [1, 5, 5, 2, 3], [1, -3, -2, 20, 15]], "float32")
    ph, pw, scale = 3, 2, 0.8
    want = np.zeros((3, 3, ph, pw), "float32")
    for r, (bi, x1, y1, x2, y2) in enumerate(rois):
        sx, sy = math.floor(x1 * scale + 0.5), math.floor(y1 * scale + 0.5)
        ex, ey = math.floor(x2 * scale + 0.5), math.floor(y2 * scale + 0.5)
        rh, rw = max(ey - sy + 1, 1), max(ex - sx + 1, 1)
        for i, j in itertools.product(range(ph), range(pw)):
            y0 = min(max(sy + math.floor(i * rh / ph), 0), 10)
            y1_ = min(max(sy + math.ceil((i + 1) * rh / ph), 0), 10)
            x0 = min(max(sx + math.floor(j * rw / pw), 0), 12)
            x1_ = min(max(sx + math.ceil((j + 1) * rw / pw), 0), 12)
            if y1_ > y0 and x1_ > x0:
                want[r, :, i, j] = x[int(bi), :, y0:y1_, x0:x1_].max(axis=(1, 2))
    got = run(vision.roi_pool(tvar("x", x.shape), tvar("r", rois.shape), (ph, pw), scale), x, rois)
    np.testing.assert_array_equal(got, want)


def test_yolo_reorg_matches_darknet_indexing(rng):
    x = rng.random((2, 8, 4, 6)).astype("float32")
    s = 2
    n, c, h, w = x.shape
    flat = x.reshape(-1)
    oc = c // (s * s)
    want = np.zeros(x.size, "float32")
    for cnt, (b, k, j, i) in enumerate(itertools.product(range(n), range(c), range(h), range(w))):
        c2, off = k % oc, k // oc
        w2, h2 = i * s + off % s, j * s + off // s
        want[cnt] = flat[w2 + w * s * (h2 + h * s * (c2 + oc * b))]
    got = run(vision.yolo_reorg(tvar("x", x.shape), s), x)
    np.testing.assert_array_equal(got, want.reshape(n, c * s * s, h // s, w // s))


@pytest.mark.parametrize("clip", [True, False])
def test_multibox_prior_matches_loops(clip):
    sizes, ratios, steps, offsets = (0.3, 0.9), (1.0, 2.0, 0.5), (0.1, -1.0), (0.5, 0.25)
    h, w = 3, 5
    want = []
    for i, j in itertools.product(range(h), range(w)):
        cy, cx = (i + offsets[0]) * steps[0], (j + offsets[1]) * (1.0 / w)
        kinds = [(s * h / w / 2, s / 2) for s in sizes]
        s0 = sizes[0]
        kinds += [(s0 * h / w * math.sqrt(r) / 2, s0 / math.sqrt(r) / 2) for r in ratios[1:]]
        want += [[cx - hw, cy - hh, cx + hw, cy + hh] for hw, hh in kinds]
    want = np.array([want], "float32")
    if clip:
        want = np.clip(want, 0, 1)
    x = np.zeros((1, 2, h, w), "float32")
    got = run(vision.multibox_prior(tvar("x", x.shape), sizes, ratios, steps, offsets, clip), x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


# -- deformable_conv2d ----------------------------------------------------------------------------


def naive_deformable(x, off, wt, pad, dg, groups):
    """NCHW / OIHW, stride 1, dilation 1; one tap at a time."""
    n, c, h, w = x.shape
    oc, icg, kh, kw = wt.shape
    oh, ow = off.shape[2:]

    def sample(b, ch, y, z):
        if not (0 <= y < h and 0 <= z < w):
            return 0.0
        y0, z0 = math.floor(y), math.floor(z)
        total = 0.0
        for yy, zz in itertools.product((y0, y0 + 1), (z0, z0 + 1)):
            if 0 <= yy < h and 0 <= zz < w:
                total += (1 - abs(y - yy)) * (1 - abs(z - zz)) * x[b, ch, yy, zz]
        return total

    out = np.zeros((n, oc, oh, ow))
    for b, o, i, j in itertools.product(range(n), range(oc), range(oh), range(ow)):
        g = o // (oc // groups)
        for ci, a, e in itertools.product(range(icg), range(kh), range(kw)):
            ch = g * icg + ci
            d = ch // (c // dg)
            base = 2 * (d * kh * kw + a * kw + e)
            y = i - pad + a + off[b, base, i, j]
            z = j - pad + e + off[b, base + 1, i, j]
            out[b, o, i, j] += wt[o, ci, a, e] * sample(b, ch, y, z)
    return out


@pytest.mark.parametrize(("dg", "groups"), [(1, 1), (2, 1), (1, 2), (2, 2)])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_deformable_conv2d_matches_loops(rng, dg, groups, layout):
    x = rng.random((1, 4, 5, 6)).astype("float32")
    off = (rng.random((1, 2 * 9 * dg, 5, 6)) * 3 - 1.5).astype("float32")
    wt = rng.standard_normal((4, 4 // groups, 3, 3)).astype("float32")
    want = naive_deformable(x, off, wt, 1, dg, groups)
    klayout = "OIHW"
    if layout == "NHWC":
        x, off = x.transpose(0, 2, 3, 1), off.transpose(0, 2, 3, 1)
        wt, want, klayout = wt.transpose(2, 3, 1, 0), want.transpose(0, 2, 3, 1), "HWIO"
    call = nn.deformable_conv2d(
        tvar("x", x.shape), tvar("o", off.shape), tvar("w", wt.shape), padding=(1, 1),
        deformable_groups=dg, groups=groups, channels=4, kernel_size=(3, 3),
        data_layout=layout, kernel_layout=klayout,
    )  # fmt: skip
    np.testing.assert_allclose(run(call, x, off, wt), want, rtol=1e-4, atol=1e-5)


def test_deformable_conv2d_with_zero_offsets_is_a_convolution(rng):
    x = rng.random((2, 3, 6, 6)).astype("float32")
    wt = rng.standard_normal((5, 3, 3, 3)).astype("float32")
    off = np.zeros((2, 18, 4, 4), "float32")
    call = nn.deformable_conv2d(
        tvar("x", x.shape), tvar("o", off.shape), tvar("w", wt.shape), channels=5, kernel_size=3
    )
    want = np.zeros((2, 5, 4, 4))
    for i, j in itertools.product(range(4), range(4)):
        want[:, :, i, j] = np.einsum("ncab,ocab->no", x[:, :, i : i + 3, j : j + 3], wt)
    np.testing.assert_allclose(run(call, x, off, wt), want, rtol=1e-4, atol=1e-5)


def test_deformable_conv2d_checks_offset_shape():
    call = nn.deformable_conv2d(
        tvar("x", (1, 3, 6, 6)), tvar("o", (1, 9, 4, 4)), tvar("w", (5, 3, 3, 3)),
        channels=5, kernel_size=3,
    )  # fmt: skip
    with pytest.raises(TypeRelError, match="offset must be"):
        call.op.get_attr("FTypeRelation")(
            [TensorTypeOf((1, 3, 6, 6)), TensorTypeOf((1, 9, 4, 4)), TensorTypeOf((5, 3, 3, 3))],
            call.attrs,
        )


# -- level-1 details: mixed-integer dense, target strings as devices ------------------------------


def test_dense_of_uint8_and_int8_with_out_dtype(rng):
    a = rng.integers(0, 255, (4, 7)).astype("uint8")
    b = rng.integers(-128, 127, (3, 7)).astype("int8")
    got = evaluate(lambda x, w: relay.nn.dense(x, w, out_dtype="int32"), {"a": a, "b": b})
    want = a.astype(np.int64) @ b.astype(np.int64).T
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_dense_of_mixed_dtypes_without_out_dtype_is_refused():
    call = nn.dense(tvar("a", (4, 7), "uint8"), tvar("b", (3, 7), "int8"))
    with pytest.raises(TypeRelError, match="same dtype"):
        call.op.get_attr("FTypeRelation")(
            [TensorTypeOf((4, 7), "uint8"), TensorTypeOf((3, 7), "int8")], call.attrs
        )


def test_a_target_string_names_its_device():
    import relaykit

    assert relaykit.device("llvm -mcpu=cascadelake", 0) == relaykit.cpu(0)
    assert not relaykit.device("cuda -arch=sm_80").exist  # issue 27: a device that does not exist


def _cubic(t, a=-0.75):
    t = abs(t)
    if t <= 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    if t < 2:
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return 0.0


@pytest.mark.parametrize("align", [True, False])
def test_grid_sample_cubic_border_clamps_each_tap(rng, align):
    """PyTorch's bicubic border mode: the sample point is not moved, its 4x4 taps are
    clamped to the image."""
    x = rng.random((1, 2, 5, 6)).astype("float32")
    grid = rng.uniform(-1.6, 1.6, (1, 2, 3, 4)).astype("float32")
    want = np.zeros((1, 2, 3, 4))
    for i, j in itertools.product(range(3), range(4)):
        gx, gy = float(grid[0, 0, i, j]), float(grid[0, 1, i, j])
        if align:
            px, py = (gx + 1) / 2 * 5, (gy + 1) / 2 * 4
        else:
            px, py = ((gx + 1) * 6 - 1) / 2, ((gy + 1) * 5 - 1) / 2
        fx, fy = math.floor(px), math.floor(py)
        for a, e in itertools.product(range(-1, 3), range(-1, 3)):
            wgt = _cubic(py - (fy + a)) * _cubic(px - (fx + e))
            want[0, :, i, j] += wgt * x[0, :, min(max(fy + a, 0), 4), min(max(fx + e, 0), 5)]
    call = image.grid_sample(
        tvar("x", x.shape), tvar("g", grid.shape), "cubic", padding_mode="border",
        align_corners=align,
    )  # fmt: skip
    np.testing.assert_allclose(run(call, x, grid), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("threshold", "id_index", "score_index"), [(0.0, 0, 1), (0.5, -1, 0)])
def test_get_valid_counts_matches_loops(rng, threshold, id_index, score_index):
    data = rng.uniform(-2, 2, (2, 30, 6)).astype("float32")
    counts = np.zeros(2, "int32")
    out = np.full_like(data, -1)
    index = np.full((2, 30), -1, "int32")
    for b in range(2):
        for j in range(30):
            ok = data[b, j, score_index] > threshold
            if id_index >= 0:
                ok = ok and data[b, j, id_index] >= 0
            if ok:
                out[b, counts[b]] = data[b, j]
                index[b, counts[b]] = j
                counts[b] += 1
    x = relay.var("x", shape=data.shape)
    z = relay.vision.get_valid_counts(x, relay.const(threshold), id_index, score_index)
    assert "score_threshold" in z.astext()
    got = relay.create_executor("graph").evaluate(relay.Function([x], z.astuple()))(data)
    for g, w in zip(got, (counts, out, index), strict=True):
        np.testing.assert_array_equal(g.numpy(), w)


def test_runtime_convert_gives_lists_the_ir_accepts():
    import relaykit

    t = relay.TensorType((2,), "float32")
    assert relaykit.runtime.convert((t, [1, (2, 3)])) == (t, (1, (2, 3)))
    assert relay.TupleType(relaykit.runtime.convert([t, t])) == relay.TupleType([t, t])
