"""Run-time indexing, scans and normalisations as ahead-of-time C (gather, gather_nd,
one_hot, cumsum/cumprod, trilu, arange, collapse_sum, shape_of, variance, l2_normalize,
lrn), each compared with NumPy in float64 written here."""

from __future__ import annotations

import numpy as np

import relaykit as tvm
from relaykit import relay

rng = np.random.default_rng(5)


def _f32(*shape):
    return rng.standard_normal(shape).astype("float32")


def _close(got, want, rtol=1e-4):
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
        return
    scale = max(float(np.max(np.abs(want))), 1e-30)
    err = float(np.max(np.abs(got.astype(np.float64) - want))) / scale
    assert err < rtol, f"relative error {err}"


def _model(args, body):
    return tvm.IRModule.from_expr(relay.Function(args, body))


def test_gather_gather_nd_and_one_hot(aot, tmp_path):
    x = relay.var("x", shape=(3, 5, 4))
    gi = relay.var("gi", shape=(3, 2, 4), dtype="int64")
    ni = relay.var("ni", shape=(2, 3, 2), dtype="int32")  # (M, Y...): 3 x 2 pairs
    oi = relay.var("oi", shape=(2, 3), dtype="int32")
    outs = relay.Tuple([
        relay.gather(x, 1, gi),
        relay.gather_nd(x, ni),
        relay.one_hot(oi, relay.const(2.5), relay.const(-1.0), depth=4, axis=1, dtype="float32"),
    ])  # fmt: skip
    d = _f32(3, 5, 4)
    dgi = rng.integers(-5, 5, size=(3, 2, 4)).astype("int64")  # negatives count from the end
    dni = np.stack([rng.integers(0, 3, (3, 2)), rng.integers(-5, 5, (3, 2))]).astype("int32")
    doi = rng.integers(0, 5, size=(2, 3)).astype("int32")  # 4 is out of depth: all off
    types = [((3, 2, 4), "float32"), ((3, 2, 4), "float32"), ((2, 4, 3), "float32")]
    got, *_ = aot(_model([x, gi, ni, oi], outs), None, [d, dgi, dni, doi], types, tmp_path)
    dd = d.astype(np.float64)
    want_g = np.zeros((3, 2, 4))
    for i in range(3):
        for j in range(2):
            for k in range(4):
                want_g[i, j, k] = dd[i, dgi[i, j, k] % 5, k]
    _close(got[0], want_g)
    want_nd = np.zeros((3, 2, 4))
    for a in range(3):
        for b in range(2):
            want_nd[a, b] = dd[dni[0, a, b], dni[1, a, b] % 5]
    _close(got[1], want_nd)
    want_oh = np.where(doi[:, None, :] == np.arange(4)[None, :, None], 2.5, -1.0)
    _close(got[2], want_oh)


def test_scans_trilu_arange_and_shapes(aot, tmp_path):
    x = relay.var("x", shape=(2, 4, 5))
    k = relay.var("k", shape=(), dtype="int64")
    outs = relay.Tuple([
        relay.cumsum(x, axis=1), relay.cumprod(x, axis=2, exclusive=True),
        relay.cumsum(x, dtype="float64"), relay.trilu(x, k, upper=True),
        relay.trilu(x, k, upper=False),
        relay.arange(relay.const(1.5), relay.const(4.0), relay.const(0.5)),
        relay.collapse_sum_to(x, (4, 1)), relay.shape_of(x), relay.ndarray_size(x, "int64"),
    ])  # fmt: skip
    d = _f32(2, 4, 5)
    dk = np.array(-1, dtype="int64")
    types = [((2, 4, 5), "float32"), ((2, 4, 5), "float32"), ((40,), "float64"),
             ((2, 4, 5), "float32"), ((2, 4, 5), "float32"), ((5,), "float32"),
             ((4, 1), "float32"), ((3,), "int32"), ((), "int64")]  # fmt: skip
    got, *_ = aot(_model([x, k], outs), None, [d, dk], types, tmp_path)
    dd = d.astype(np.float64)
    _close(got[0], np.cumsum(dd, axis=1))
    excl = np.concatenate([np.ones((2, 4, 1)), np.cumprod(dd, axis=2)[..., :-1]], axis=2)
    _close(got[1], excl)
    _close(got[2], np.cumsum(dd.reshape(-1)))
    r, c = np.arange(4)[:, None], np.arange(5)[None, :]
    _close(got[3], np.where(c - r >= -1, dd, 0))
    _close(got[4], np.where(c - r <= -1, dd, 0))
    _close(got[5], 1.5 + 0.5 * np.arange(5))
    _close(got[6], dd.sum(axis=(0, 2))[:, None])
    _close(got[7], np.array([2, 4, 5], dtype="int32"))
    _close(got[8], np.array(40, dtype="int64"))


def test_variance_l2_normalize_and_lrn(aot, tmp_path):
    x = relay.var("x", shape=(2, 6, 3, 5))
    outs = relay.Tuple([
        relay.variance(x, axis=[1, 3]),  # the mean is a second input of the operator
        relay.variance(x, axis=[1, 3], keepdims=True, unbiased=True),
        relay.nn.l2_normalize(x, eps=1e-3, axis=[1, 2]),
        relay.nn.lrn(x, size=3, axis=1, bias=1.5, alpha=0.2, beta=0.6),
        relay.nn.lrn(x, size=4, axis=3, bias=2.0, alpha=1e-2, beta=0.75),
    ])  # fmt: skip
    d = _f32(2, 6, 3, 5)
    d[1] *= 0.01  # one image whose squared norm is below eps
    types = [((2, 3), "float32"), ((2, 1, 3, 1), "float32")] + [((2, 6, 3, 5), "float32")] * 3
    got, *_ = aot(_model([x], outs), None, [d], types, tmp_path)
    dd = d.astype(np.float64)
    dev = dd - dd.mean(axis=(1, 3), keepdims=True)
    _close(got[0], (dev**2).sum(axis=(1, 3)) / 30)
    _close(got[1], (dev**2).sum(axis=(1, 3), keepdims=True) / 29)
    sq = (dd**2).sum(axis=(1, 2), keepdims=True)
    _close(got[2], dd / np.sqrt(np.maximum(sq, 1e-3)))

    def lrn(a, size, axis, bias, alpha, beta):
        lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
        a = np.moveaxis(a, axis, 0)
        out = np.empty_like(a)
        for i in range(a.shape[0]):
            win = a[max(0, i - lo) : i + hi + 1]
            out[i] = a[i] / (bias + alpha / size * (win**2).sum(axis=0)) ** beta
        return np.moveaxis(out, 0, axis)

    _close(got[3], lrn(dd, 3, 1, 1.5, 0.2, 0.6))
    _close(got[4], lrn(dd, 4, 3, 2.0, 1e-2, 0.75))


def test_scatter_einsum_and_space_to_batch(aot, tmp_path):
    x = relay.var("x", shape=(4, 5))
    si = relay.var("si", shape=(2, 5), dtype="int64")
    su = relay.var("su", shape=(2, 5))
    ni = relay.var("ni", shape=(1, 3), dtype="int32")  # three row indices (TVM's layout)
    nu = relay.var("nu", shape=(3, 5))
    a = relay.var("a", shape=(2, 3, 4))
    b = relay.var("b", shape=(2, 4, 5))
    img = relay.var("img", shape=(1, 3, 3, 2))  # NHWC
    outs = relay.Tuple([
        relay.scatter_elements(x, si, su, axis=0),
        relay.scatter_elements(x, si, su, axis=1, reduction="add"),
        relay.scatter_nd(x, ni, nu, reduction="add"),
        relay.einsum([a, b], "bij,bjk->bik"),
        relay.einsum([a], "...ij->...ji"),
        relay.einsum([a, a], "bij,bij"),
        relay.nn.space_to_batch_nd(img, [2, 2], [[1, 0], [0, 1]], pad_value=7.0),
    ])  # fmt: skip
    d = _f32(4, 5)
    dsi = np.array([[0, -1, 2, 3, 1], [2, 2, -3, 0, 0]], dtype="int64")
    dsu = _f32(2, 5)
    dni = np.array([[1, -1, 1]], dtype="int32")
    dnu, da, db, dimg = _f32(3, 5), _f32(2, 3, 4), _f32(2, 4, 5), _f32(1, 3, 3, 2)
    types = [((4, 5), "float32"), ((4, 5), "float32"), ((4, 5), "float32"),
             ((2, 3, 5), "float32"), ((2, 4, 3), "float32"), ((), "float32"),
             ((4, 2, 2, 2), "float32")]  # fmt: skip
    inputs = [d, dsi, dsu, dni, dnu, da, db, dimg]
    args = [x, si, su, ni, nu, a, b, img]
    got, *_ = aot(_model(args, outs), None, inputs, types, tmp_path)
    dd = d.astype(np.float64)
    want0, want1, want2 = dd.copy(), dd.copy(), dd.copy()
    for i in range(2):
        for j in range(5):
            want0[dsi[i, j] % 4, j] = dsu[i, j]
            want1[i, dsi[i, j] % 5] += dsu[i, j]
    for y in range(3):
        want2[dni[0, y] % 4] += dnu[y]
    _close(got[0], want0)
    _close(got[1], want1)
    _close(got[2], want2)
    A, B = da.astype(np.float64), db.astype(np.float64)
    _close(got[3], np.stack([A[i] @ B[i] for i in range(2)]))
    _close(got[4], A.transpose(0, 2, 1))
    _close(got[5], np.array((A * A).sum()))
    padded = np.pad(dimg.astype(np.float64), ((0, 0), (1, 0), (0, 1), (0, 0)), constant_values=7)
    want6 = np.zeros((4, 2, 2, 2))
    for bh in range(2):
        for bw in range(2):
            want6[bh * 2 + bw] = padded[0, bh::2, bw::2, :]
    _close(got[6], want6)


def test_meshgrid_reverse_sequence_searchsorted_unravel_and_argmax_pool(aot, tmp_path):
    u = relay.var("u", shape=(3,))
    v = relay.var("v", shape=(4,))
    x = relay.var("x", shape=(3, 5, 2))  # batch axis 0, sequence axis 1
    lengths = relay.var("lengths", shape=(3,), dtype="int32")
    seq = relay.var("seq", shape=(2, 6))
    vals = relay.var("vals", shape=(2, 4))
    flat = relay.var("flat", shape=(4,), dtype="int64")
    img = relay.var("img", shape=(1, 2, 5, 6))
    ij = relay.meshgrid([u, v], indexing="ij")
    xy = relay.meshgrid([u, v], indexing="xy")
    pool = relay.nn.max_pool2d_with_argmax(img, pool_size=(2, 3), strides=(2, 2),
                                            padding=(1, 1, 0, 1))  # fmt: skip
    outs = relay.Tuple([
        ij[0], ij[1], xy[0], xy[1],
        relay.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0),
        relay.searchsorted(seq, vals, right=False), relay.searchsorted(seq, vals, right=True),
        relay.unravel_index(flat, relay.const(np.array([3, 4, 5], dtype="int64"))),
        pool[0], pool[1],
    ])  # fmt: skip
    du, dv, dx = _f32(3), _f32(4), _f32(3, 5, 2)
    dl = np.array([2, 9, 0], dtype="int32")
    dseq = np.sort(_f32(2, 6), axis=1)
    dvals = np.concatenate([dseq[:, [1, 4]], _f32(2, 2)], axis=1)  # ties with the sequence
    dflat = np.array([0, 7, 59, 33], dtype="int64")
    dimg = _f32(1, 2, 5, 6)
    types = [((3, 4), "float32"), ((3, 4), "float32"), ((4, 3), "float32"), ((4, 3), "float32"),
             ((3, 5, 2), "float32"), ((2, 4), "int32"), ((2, 4), "int32"), ((3, 4), "int64"),
             ((1, 2, 3, 3), "float32"), ((1, 2, 3, 3), "int64")]  # fmt: skip
    inputs = [du, dv, dx, dl, dseq, dvals, dflat, dimg]
    args = [u, v, x, lengths, seq, vals, flat, img]
    got, *_ = aot(_model(args, outs), None, inputs, types, tmp_path)
    gi = np.meshgrid(du, dv, indexing="ij")
    gx = np.meshgrid(du, dv, indexing="xy")
    for k, want in enumerate([gi[0], gi[1], gx[0], gx[1]]):
        _close(got[k], want.astype(np.float64))
    want_rev = dx.astype(np.float64).copy()
    for b, n in enumerate(dl):
        n = min(max(int(n), 1), 5)
        want_rev[b, :n] = dx[b, :n][::-1]
    _close(got[4], want_rev)
    for k, side in ((5, "left"), (6, "right")):
        want_ss = np.stack([np.searchsorted(dseq[r], dvals[r], side=side) for r in range(2)])
        _close(got[k], want_ss.astype("int32"))
    _close(got[7], np.stack(np.unravel_index(dflat, (3, 4, 5))).astype("int64"))
    pad = np.pad(dimg.astype(np.float64), ((0, 0), (0, 0), (1, 0), (1, 1)),  # (t, l, b, r)
                 constant_values=-np.inf)  # fmt: skip
    want_v = np.zeros((1, 2, 3, 3))
    want_i = np.zeros((1, 2, 3, 3), dtype="int64")
    for c in range(2):
        for i in range(3):
            for j in range(3):
                win = pad[0, c, i * 2 : i * 2 + 2, j * 2 : j * 2 + 3]
                a, b = np.unravel_index(np.argmax(win), win.shape)
                want_v[0, c, i, j] = win[a, b]
                want_i[0, c, i, j] = c * 30 + (i * 2 + a - 1) * 6 + (j * 2 + b - 1)
    _close(got[8], want_v)
    _close(got[9], want_i)
