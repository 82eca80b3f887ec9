"""Operator gradients: elementwise math against NumPy float64 closed forms, nn operators
against central finite differences computed here in float64."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.ir import IRModule
from relaykit.transform import gradient

# name -> (relay op, x sampler range, d f / d x in float64)
UNARY = {
    "sin": (relay.sin, (-2, 2), np.cos),
    "cos": (relay.cos, (-2, 2), lambda x: -np.sin(x)),
    "tan": (relay.tan, (-1, 1), lambda x: 1 / np.cos(x) ** 2),
    "sinh": (relay.sinh, (-2, 2), np.cosh),
    "cosh": (relay.cosh, (-2, 2), np.sinh),
    "atan": (relay.atan, (-3, 3), lambda x: 1 / (1 + x * x)),
    "asin": (relay.asin, (-0.9, 0.9), lambda x: 1 / np.sqrt(1 - x * x)),
    "acos": (relay.acos, (-0.9, 0.9), lambda x: -1 / np.sqrt(1 - x * x)),
    "asinh": (relay.asinh, (-3, 3), lambda x: 1 / np.sqrt(x * x + 1)),
    "acosh": (relay.acosh, (1.1, 4), lambda x: 1 / np.sqrt(x * x - 1)),
    "atanh": (relay.atanh, (-0.9, 0.9), lambda x: 1 / (1 - x * x)),
    "log2": (relay.log2, (0.1, 5), lambda x: 1 / (x * np.log(2))),
    "log10": (relay.log10, (0.1, 5), lambda x: 1 / (x * np.log(10))),
    "rsqrt": (relay.rsqrt, (0.1, 5), lambda x: -0.5 * x**-1.5),
    "erf": (relay.erf, (-2, 2), lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)),
}


def _grads(fn, *args):
    g = gradient(relay.transform.InferType()(IRModule.from_expr(fn))["main"])
    out, grads = relay.create_executor("debug", mod=IRModule.from_expr(g)).evaluate()(*args)
    return out, [x.numpy() for x in grads]


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_gradient_matches_closed_form(name, dtype):
    op, (lo, hi), deriv = UNARY[name]
    rng = np.random.default_rng(7)
    xd = rng.uniform(lo, hi, size=(3, 4)).astype(dtype)
    gd = rng.uniform(0.5, 1.5, size=(3, 4)).astype(dtype)
    x, g = relay.var("x", shape=(3, 4), dtype=dtype), relay.var("g", shape=(3, 4), dtype=dtype)
    _, (gx, _) = _grads(relay.Function([x, g], relay.multiply(op(x), g)), xd, gd)
    x64 = xd.astype("float64")
    rtol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(gx, deriv(x64) * gd, rtol=rtol)
    assert gx.dtype == dtype


# -- nn operators against central differences of NumPy float64 forward passes ----------------------


def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        g[idx] = (f(hi) - f(lo)) / (2 * eps)
    return g


def _np_conv2d(x, w, stride, pad, groups):
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for k in range(o):
        gi = k // og
        for i in range(oh):
            for j in range(ow):
                patch = xp[
                    :,
                    gi * cg : (gi + 1) * cg,
                    i * stride : i * stride + kh,
                    j * stride : j * stride + kw,
                ]
                out[:, k, i, j] = (patch * w[k]).sum(axis=(1, 2, 3))
    return out


def _np_pool(x, k, stride, pad, kind, include_pad=False):
    n, c, h, w = x.shape
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    valid = np.pad(np.ones((h, w)), pad)
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * stride : i * stride + k, j * stride : j * stride + k]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                cnt = (
                    k * k
                    if include_pad
                    else valid[i * stride : i * stride + k, j * stride : j * stride + k].sum()
                )
                out[:, :, i, j] = win.sum(axis=(2, 3)) / max(cnt, 1)
    return out


def _relay_grads(build, shapes, args, weights):
    vs = [relay.var(f"v{i}", shape=s, dtype="float64") for i, s in enumerate(shapes)]
    out = build(*vs)
    c = relay.const(weights, "float64")
    fn = relay.Function(vs, relay.sum(relay.multiply(out, c)))
    _, grads = _grads(fn, *args)
    return grads


@pytest.mark.parametrize("stride,pad,groups", [(1, 1, 1), (2, 0, 1), (2, 1, 2), (1, 1, 4)])
def test_conv2d_gradient_matches_finite_differences(stride, pad, groups):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 4, 6, 5))
    w = rng.standard_normal((4, 4 // groups, 3, 3))
    out_shape = _np_conv2d(x, w, stride, pad, groups).shape
    c = rng.standard_normal(out_shape)

    def build(xv, wv):
        return relay.nn.conv2d(xv, wv, strides=stride, padding=pad, groups=groups, kernel_size=3)

    gx, gw = _relay_grads(build, [x.shape, w.shape], [x, w], c)
    np.testing.assert_allclose(
        gx,
        _numeric_grad(lambda v: (_np_conv2d(v, w, stride, pad, groups) * c).sum(), x),
        rtol=1e-6,
        atol=1e-7,
    )
    np.testing.assert_allclose(
        gw,
        _numeric_grad(lambda v: (_np_conv2d(x, v, stride, pad, groups) * c).sum(), w),
        rtol=1e-6,
        atol=1e-7,
    )


@pytest.mark.parametrize(
    "kind,stride,pad,include",
    [("max", 2, 0, False), ("max", 1, 1, False), ("avg", 2, 1, True), ("avg", 1, 1, False)],
)
def test_pool2d_gradient_matches_finite_differences(kind, stride, pad, include):
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 3, 5, 6))
    c = rng.standard_normal(_np_pool(x, 2, stride, pad, kind, include).shape)

    def build(xv):
        if kind == "max":
            return relay.nn.max_pool2d(xv, pool_size=2, strides=stride, padding=pad)
        return relay.nn.avg_pool2d(
            xv, pool_size=2, strides=stride, padding=pad, count_include_pad=include
        )

    (gx,) = _relay_grads(build, [x.shape], [x], c)
    want = _numeric_grad(lambda v: (_np_pool(v, 2, stride, pad, kind, include) * c).sum(), x)
    np.testing.assert_allclose(gx, want, rtol=1e-6, atol=1e-7)


def test_global_avg_pool_and_matmul_gradients():
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 3, 4, 5))
    c = rng.standard_normal((2, 3, 1, 1))
    (gx,) = _relay_grads(relay.nn.global_avg_pool2d, [x.shape], [x], c)
    np.testing.assert_allclose(gx, np.broadcast_to(c / 20.0, x.shape), rtol=1e-12)
    for ta, tb in [(False, False), (True, False), (True, True), (False, True)]:
        a = rng.standard_normal((4, 3) if ta else (3, 4))
        b = rng.standard_normal((5, 4) if tb else (4, 5))
        c = rng.standard_normal((3, 5))
        ga, gb = _relay_grads(
            lambda u, v, ta=ta, tb=tb: relay.nn.matmul(u, v, transpose_a=ta, transpose_b=tb),
            [a.shape, b.shape],
            [a, b],
            c,
        )
        A, B = (a.T if ta else a), (b.T if tb else b)
        dA, dB = c @ B.T, A.T @ c
        np.testing.assert_allclose(ga, dA.T if ta else dA, rtol=1e-12)
        np.testing.assert_allclose(gb, dB.T if tb else dB, rtol=1e-12)


def test_conv2d_backward_weight_op_matches_loops():
    rng = np.random.default_rng(14)
    x = rng.standard_normal((2, 3, 7, 7)).astype("float32")
    dy = rng.standard_normal((2, 4, 3, 3)).astype("float32")
    xv, dv = relay.var("x", shape=x.shape), relay.var("dy", shape=dy.shape)
    call = relay.nn.conv2d_backward_weight(dv, xv, strides=2, padding=0, kernel_size=(3, 3))
    mod = relay.transform.InferType()(IRModule.from_expr(relay.Function([dv, xv], call)))
    got = relay.create_executor("debug", mod=mod).evaluate()(dy, x).numpy()
    want = np.zeros((4, 3, 3, 3))
    for k, ch, r, s in np.ndindex(want.shape):
        want[k, ch, r, s] = sum(
            float(dy[n, k, p, q]) * float(x[n, ch, 2 * p + r, 2 * q + s])
            for n in range(2)
            for p in range(3)
            for q in range(3)
        )
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,want", [("higher_order", 4.0), ("first_order", 6.0)])
def test_tuple_output_seed_follows_the_mode(mode, want):
    # out = (4x, 2x): higher_order differentiates the first field, first_order their sum
    x = relay.var("x", shape=(2, 3))
    y = relay.add(x, x)
    fn = relay.transform.InferType()(
        IRModule.from_expr(relay.Function([x], relay.Tuple([relay.add(y, y), y])))
    )["main"]
    g = gradient(fn, mode=mode)
    xd = np.random.default_rng(5).standard_normal((2, 3)).astype("float32")
    (four, two), (gx,) = relay.create_executor("debug", mod=IRModule.from_expr(g)).evaluate()(xd)
    np.testing.assert_allclose(four.numpy(), 4 * xd, rtol=1e-6)
    np.testing.assert_allclose(two.numpy(), 2 * xd, rtol=1e-6)
    np.testing.assert_array_equal(gx.numpy(), np.full((2, 3), want, "float32"))
