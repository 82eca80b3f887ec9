"""Pooling kernels against loops that follow TVM's definitions literally (2-D), a direct
loop (3-D), and ``nn.max_pool2d_with_argmax`` against a loop written from its definition
(one window at a time)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from relaykit.ir import TensorType, TupleType
from relaykit.op import TypeRelError, nn


def _out_len(size, k, s, d, lo, hi, ceil_mode):
    span = size + lo + hi - ((k - 1) * d + 1)
    return (math.ceil(span / s) if ceil_mode else span // s) + 1


def naive_pool(x, kind, pool, strides, dilation, padding, ceil_mode=False, count_include_pad=False):
    """NCHW pooling: each output looks at its window's taps one by one.

    Padding never wins a max; an average divides by the number of real
    elements, or with count_include_pad by the taps inside the explicitly
    padded input (never the extra ceil_mode positions), as TVM does.
    """
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = pool, strides, dilation
    pt, pl, pb, pr = padding
    oh = _out_len(h, kh, sh, dh, pt, pb, ceil_mode)
    ow = _out_len(w, kw, sw, dw, pl, pr, ceil_mode)
    out = np.zeros((n, c, oh, ow))
    for b, ch, i, j in itertools.product(range(n), range(c), range(oh), range(ow)):
        vals, counted = [], 0
        for a, e in itertools.product(range(kh), range(kw)):
            y = i * sh + a * dh - pt
            z = j * sw + e * dw - pl
            inside = 0 <= y < h and 0 <= z < w
            in_padded = -pt <= y < h + pb and -pl <= z < w + pr
            if inside:
                vals.append(float(x[b, ch, y, z]))
            if inside or (count_include_pad and in_padded):
                counted += 1
        if kind == "max":
            out[b, ch, i, j] = max(vals) if vals else -np.inf
        else:
            out[b, ch, i, j] = sum(vals) / max(counted, 1)
    return out


POOL_CASES = [
    {"pool_size": 2, "strides": 2},
    {"pool_size": 3, "strides": 1, "padding": 1},
    {"pool_size": 3, "strides": 2, "padding": 1, "ceil_mode": True},
    {"pool_size": (2, 3), "strides": (2, 1), "padding": (1, 0, 0, 2), "ceil_mode": True},
    {"pool_size": 2, "strides": 1, "dilation": 2, "padding": 1},
    {"pool_size": 3, "strides": 3, "ceil_mode": True},
]


@pytest.mark.parametrize("kwargs", POOL_CASES)
@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool2d_against_loops(kwargs, count_include_pad, run, tvar, rng):
    x = rng.standard_normal((2, 3, 7, 8)).astype("float32")
    call = nn.avg_pool2d(tvar("x", x.shape), count_include_pad=count_include_pad, **kwargs)
    out = run(call, x)
    a = call.attrs
    want = naive_pool(
        x, "avg", a.pool_size, a.strides, a.dilation, a.padding, a.ceil_mode, count_include_pad
    )
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", POOL_CASES)
def test_max_pool2d_against_loops(kwargs, run, tvar, rng):
    x = rng.standard_normal((2, 3, 7, 8)).astype("float32")
    call = nn.max_pool2d(tvar("x", x.shape), **kwargs)
    out = run(call, x)
    a = call.attrs
    want = naive_pool(x, "max", a.pool_size, a.strides, a.dilation, a.padding, a.ceil_mode)
    np.testing.assert_allclose(out, want)


def test_pool_nhwc_and_int(run, tvar, rng):
    x = rng.integers(-50, 50, size=(1, 6, 6, 2)).astype("int32")
    out = run(nn.max_pool2d(tvar("x", x.shape, "int32"), 2, 2, padding=1, layout="NHWC"), x)
    assert out.dtype == np.int32
    want = naive_pool(x.transpose(0, 3, 1, 2), "max", (2, 2), (2, 2), (1, 1), (1, 1, 1, 1))
    np.testing.assert_array_equal(out, want.transpose(0, 2, 3, 1))


def test_pool_relations(rel, tvar):
    v = tvar("x", (1, 3, 7, 7))
    assert rel(nn.max_pool2d(v, 3, 2)) == TensorType((1, 3, 3, 3))
    assert rel(nn.max_pool2d(v, 3, 2, ceil_mode=True)) == TensorType((1, 3, 3, 3))
    assert rel(nn.avg_pool2d(v, 2, 2, ceil_mode=True)) == TensorType((1, 3, 4, 4))
    assert rel(nn.avg_pool2d(v, 2, 2)) == TensorType((1, 3, 3, 3))
    assert rel(nn.max_pool2d(v, 2, 2, out_layout="NHWC")) == TensorType((1, 3, 3, 3))
    with pytest.raises(TypeRelError, match="pool_size must be two positive integers"):
        rel(nn.max_pool2d(v, (0, 2)))
    with pytest.raises(TypeRelError, match="pooling window .* larger than the padded input"):
        rel(nn.avg_pool2d(v, 9))
    with pytest.raises(TypeRelError, match="data must be a 4-D tensor"):
        rel(nn.avg_pool2d(tvar("y", (3, 7, 7)), 2))


def test_global_pools(run, rel, tvar, rng):
    x = rng.standard_normal((2, 3, 4, 5)).astype("float32")
    v = tvar("x", x.shape)
    avg = run(nn.global_avg_pool2d(v), x)
    mx = run(nn.global_max_pool2d(v), x)
    for b, c in itertools.product(range(2), range(3)):
        vals = [float(t) for t in x[b, c].ravel()]
        assert avg[b, c, 0, 0] == pytest.approx(sum(vals) / len(vals), rel=1e-5)
        assert mx[b, c, 0, 0] == max(vals)
    assert rel(nn.global_avg_pool2d(tvar("y", (2, 4, 5, 3)), layout="NHWC")) == TensorType(
        (2, 1, 1, 3)
    )


def naive_adaptive(x, oh, ow, kind):
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow))
    for b, ch, i, j in itertools.product(range(n), range(c), range(oh), range(ow)):
        hs, he = (i * h) // oh, math.ceil((i + 1) * h / oh)
        ws, we = (j * w) // ow, math.ceil((j + 1) * w / ow)
        vals = [float(x[b, ch, y, z]) for y in range(hs, he) for z in range(ws, we)]
        out[b, ch, i, j] = max(vals) if kind == "max" else sum(vals) / len(vals)
    return out


@pytest.mark.parametrize("out_size", [(1, 1), (2, 3), (3, 3), (5, 7), 4])
def test_adaptive_pools(out_size, run, tvar, rng):
    x = rng.standard_normal((1, 2, 5, 7)).astype("float32")
    oh, ow = (out_size, out_size) if isinstance(out_size, int) else out_size
    avg = run(nn.adaptive_avg_pool2d(tvar("x", x.shape), out_size), x)
    np.testing.assert_allclose(avg, naive_adaptive(x, oh, ow, "avg"), rtol=1e-5, atol=1e-6)
    mx = run(nn.adaptive_max_pool2d(tvar("x", x.shape), out_size), x)
    np.testing.assert_allclose(mx, naive_adaptive(x, oh, ow, "max"))


def test_adaptive_relation(rel, tvar):
    v = tvar("x", (1, 2, 5, 7))
    assert rel(nn.adaptive_avg_pool2d(v)) == TensorType((1, 2, 5, 7))
    assert rel(nn.adaptive_avg_pool2d(v, (None, 2))) == TensorType((1, 2, 5, 2))
    with pytest.raises(TypeRelError, match="output_size must be positive"):
        rel(nn.adaptive_avg_pool2d(v, (0, 2)))


def _pool3d_loop(x, k, s, pad, kind, include_pad=False):
    n, c, d, h, w = x.shape
    out_shape = [
        (dim + 2 * pad - kk) // ss + 1 for dim, kk, ss in zip((d, h, w), k, s, strict=True)
    ]
    padded = np.pad(x, ((0, 0), (0, 0)) + ((pad, pad),) * 3, constant_values=np.nan)
    out = np.empty((n, c, *out_shape), "float32")
    for idx in np.ndindex(*out_shape):
        sl = tuple(slice(i * ss, i * ss + kk) for i, ss, kk in zip(idx, s, k, strict=True))
        win = padded[(slice(None), slice(None), *sl)].reshape(n, c, -1)
        if kind == "max":
            out[(slice(None), slice(None), *idx)] = np.nanmax(win, axis=-1)
        elif include_pad:
            out[(slice(None), slice(None), *idx)] = np.nansum(win, axis=-1) / win.shape[-1]
        else:
            out[(slice(None), slice(None), *idx)] = np.nanmean(win, axis=-1)
    return out


@pytest.mark.parametrize(("kind", "include_pad"), [("max", False), ("avg", False), ("avg", True)])
def test_pool3d_matches_loop(run, tvar, kind, include_pad):
    x = np.random.default_rng(2).standard_normal((1, 2, 4, 5, 3)).astype("float32")
    v = tvar("x", (1, 2, 4, 5, 3))
    if kind == "max":
        call = nn.max_pool3d(v, (2, 3, 2), (2, 1, 1), padding=(1, 1, 1))
    else:
        call = nn.avg_pool3d(
            v, (2, 3, 2), (2, 1, 1), padding=(1, 1, 1), count_include_pad=include_pad
        )
    want = _pool3d_loop(x, (2, 3, 2), (2, 1, 1), 1, kind, include_pad)
    np.testing.assert_allclose(run(call, x), want, rtol=1e-5)


def test_pool3d_ceil_mode_last_window_starts_inside(rel, tvar):
    # 5 + 0 pads, k=2, s=2: floor -> 2, ceil -> 3 (the third window starts at 4 < 5)
    out = rel(nn.max_pool3d(tvar("x", (1, 1, 5, 5, 5)), 2, 2, ceil_mode=True))
    assert out.shape == (1, 1, 3, 3, 3)
    # with padding 1 at the start: ceil would give 4, but window 4 would start at 6 >= 5 + 1
    out = rel(
        nn.max_pool3d(tvar("x", (1, 1, 5, 5, 5)), 2, 2, padding=(1, 1, 1, 0, 0, 0), ceil_mode=True)
    )
    assert out.shape == (1, 1, 3, 3, 3)


def naive_argmax_pool(x, pool, strides, dilation, padding, storage_order=0):
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = pool, strides, dilation
    pt, pl, pb, pr = padding
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pl + pr - (kw - 1) * dw - 1) // sw + 1
    values = np.zeros((n, c, oh, ow), x.dtype)
    index = np.zeros((n, c, oh, ow), np.int64)
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    best = None
                    for a in range(kh):
                        for e in range(kw):
                            y, z = i * sh + a * dh - pt, j * sw + e * dw - pl
                            if (
                                0 <= y < h
                                and 0 <= z < w
                                and (best is None or x[b, ch, y, z] > best[0])
                            ):
                                best = (x[b, ch, y, z], y, z)
                    values[b, ch, i, j] = best[0]
                    plane = (b * c + ch) * h * w
                    index[b, ch, i, j] = plane + (
                        best[2] * h + best[1] if storage_order else best[1] * w + best[2]
                    )
    return values, index


@pytest.mark.parametrize(
    "pool, strides, dilation, padding, order",
    [
        ((2, 2), (2, 2), (1, 1), (0, 0, 0, 0), 0),
        ((3, 3), (1, 2), (1, 1), (1, 1, 1, 1), 0),
        ((2, 3), (1, 1), (2, 1), (0, 1, 2, 0), 1),
    ],
)
def test_max_pool2d_with_argmax_matches_a_loop(
    rng, run, tvar, pool, strides, dilation, padding, order
):
    x = rng.standard_normal((2, 3, 7, 6)).astype("float32")
    call = nn.max_pool2d_with_argmax(
        tvar("x", x.shape), pool, strides, dilation, padding, storage_order=order
    ).astuple()
    values, index = run(call, x)
    want_v, want_i = naive_argmax_pool(x, pool, strides, dilation, padding, order)
    np.testing.assert_array_equal(values, want_v)
    np.testing.assert_array_equal(index, want_i)
    # the indices point at the values in the flattened input
    flat = x.transpose(0, 1, 3, 2).reshape(-1) if order else x.reshape(-1)
    np.testing.assert_array_equal(flat[index], values)


def test_max_pool2d_with_argmax_type(rel, tvar):
    call = nn.max_pool2d_with_argmax(tvar("x", (1, 2, 5, 5)), (2, 2), (2, 2)).astuple()
    assert rel(call) == TupleType([TensorType((1, 2, 2, 2)), TensorType((1, 2, 2, 2), "int64")])
    bad = nn.max_pool2d_with_argmax(tvar("x", (1, 2, 5, 5)), (2, 2), layout="NHWC").astuple()
    with pytest.raises(TypeRelError, match="layout NCHW"):
        rel(bad)
