"""Operators of the ahead-of-time C one by one: layouts, broadcasting, data movement,
reductions and several outputs, each compiled and compared with NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay

rng = np.random.default_rng(7)


def _f32(*shape):
    return rng.standard_normal(shape).astype("float32")


def _close(got, want, rtol=1e-4):
    want = np.asarray(want)
    scale = max(float(np.max(np.abs(want))), 1e-30) if want.size else 1.0
    assert got.shape == want.shape
    if got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
        return
    err = float(np.max(np.abs(got.astype(np.float64) - want))) / scale if want.size else 0.0
    assert err < rtol, f"relative error {err}"


def _model(args, body):
    return tvm.IRModule.from_expr(relay.Function(args, body))


def test_conv2d_nhwc_hwio_groups_and_depthwise(aot, tmp_path):
    x = relay.var("x", shape=(1, 7, 9, 4))
    w1 = _f32(3, 3, 2, 6)  # HWIO, groups=2: each group sees 2 of the 4 channels
    w2 = _f32(3, 3, 1, 6)  # HWOI depthwise as HWIO with I=1, groups=6
    c1 = relay.nn.conv2d(x, relay.const(w1), strides=(2, 1), padding=(1, 2), dilation=(1, 2),
                         groups=2, data_layout="NHWC", kernel_layout="HWIO")  # fmt: skip
    c2 = relay.nn.conv2d(c1, relay.const(w2), padding=(1, 1), groups=6,
                         data_layout="NHWC", kernel_layout="HWIO")  # fmt: skip
    data = _f32(1, 7, 9, 4)
    oshape = (1, 4, 9, 6)
    (got,), *_ = aot(_model([x], c2), None, [data], [(oshape, "float32")], tmp_path)

    def conv_nhwc(a, w, stride, pad, dil, groups):
        a = a.astype(np.float64)
        kh, kw, cg, o = w.shape
        og = o // groups
        ap = np.pad(a, ((0, 0), (pad[0], pad[0]), (pad[1], pad[1]), (0, 0)))
        oh = (ap.shape[1] - dil[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (ap.shape[2] - dil[1] * (kw - 1) - 1) // stride[1] + 1
        out = np.zeros((a.shape[0], oh, ow, o))
        for g in range(groups):
            for i in range(kh):
                for j in range(kw):
                    patch = ap[:, i * dil[0] : i * dil[0] + stride[0] * (oh - 1) + 1 : stride[0],
                               j * dil[1] : j * dil[1] + stride[1] * (ow - 1) + 1 : stride[1],
                               g * cg : (g + 1) * cg]  # fmt: skip
                    out[..., g * og : (g + 1) * og] += patch @ w[i, j, :, g * og : (g + 1) * og]
        return out

    want = conv_nhwc(data, w1, (2, 1), (1, 2), (1, 2), 2)
    want = conv_nhwc(want, w2, (1, 1), (1, 1), (1, 1), 6)
    _close(got, want)


def test_broadcast_elementwise_and_activations(aot, tmp_path):
    a = relay.var("a", shape=(2, 3, 4))
    b = relay.var("b", shape=(3, 1))
    e = relay.maximum(a, b) * relay.sigmoid(a) - relay.power(relay.abs(b) + relay.const(1.0), a)
    e = relay.where(relay.greater(a, b), relay.tanh(e), relay.nn.leaky_relu(e, alpha=0.1))
    e = relay.clip(relay.exp(relay.erf(e)), 0.5, 2.0) / relay.sqrt(relay.abs(b) + relay.const(2.0))
    da, db = _f32(2, 3, 4), _f32(3, 1)
    (got,), *_ = aot(_model([a, b], e), None, [da, db], [((2, 3, 4), "float32")], tmp_path)
    from scipy.special import erf

    A, B = da.astype(np.float64), db.astype(np.float64)
    w = np.maximum(A, B) / (1 + np.exp(-A)) - (np.abs(B) + 1) ** A
    w = np.where(A > B, np.tanh(w), np.where(w > 0, w, 0.1 * w))
    w = np.clip(np.exp(erf(w)), 0.5, 2.0) / np.sqrt(np.abs(B) + 2)
    _close(got, w)


def test_data_movement(aot, tmp_path):
    x = relay.var("x", shape=(2, 3, 4, 5))
    t = relay.transpose(x, (0, 2, 3, 1))
    s = relay.strided_slice(t, begin=(0, 1, 0, 0), end=(2, 4, 5, 3), strides=(1, 2, 1, 1))
    p = relay.nn.pad(s, ((0, 0), (1, 0), (0, 2), (0, 0)), pad_value=-3.0)
    c = relay.concatenate(
        [p, relay.expand_dims(relay.squeeze(relay.strided_slice(p, (0, 0), (2, 1)), axis=[1]), 1)],
        axis=1,
    )
    y = relay.reshape(c, (2, -1))
    data = _f32(2, 3, 4, 5)
    (got,), *_ = aot(_model([x], y), None, [data], [((2, 4 * 7 * 3), "float32")], tmp_path)
    tt = data.transpose(0, 2, 3, 1)[:, 1:4:2, :, 0:3]
    pp = np.pad(tt, ((0, 0), (1, 0), (0, 2), (0, 0)), constant_values=-3.0)
    want = np.concatenate([pp, pp[:, :1]], axis=1).reshape(2, -1)
    _close(got, want)


def test_reductions_softmax_and_two_outputs(aot, tmp_path):
    x = relay.var("x", shape=(3, 4, 5))
    s = relay.sum(x, axis=(0, 2), keepdims=True)
    m = relay.mean(x, axis=-1)
    mx = relay.max(x, axis=1)
    ls = relay.nn.log_softmax(x, axis=1)
    out = relay.Tuple([s + relay.min(x), m * relay.prod(mx, axis=1, keepdims=True), ls])
    data = _f32(3, 4, 5)
    types = [((1, 4, 1), "float32"), ((3, 4), "float32"), ((3, 4, 5), "float32")]
    got, _, lib, _ = aot(_model([x], out), None, [data], types, tmp_path)
    d = data.astype(np.float64)
    _close(got[0], d.sum(axis=(0, 2), keepdims=True) + d.min())
    _close(got[1], d.mean(-1) * np.prod(d.max(1), axis=1, keepdims=True))
    z = d - d.max(1, keepdims=True)
    _close(got[2], z - np.log(np.exp(z).sum(1, keepdims=True)))
    assert "void *output0;" in lib.header and "void *output2;" in lib.header


def test_integer_ops_cast_and_take(aot, tmp_path):
    i = relay.var("i", shape=(5,), dtype="int32")
    table = _f32(6, 3)
    picked = relay.take(relay.const(table), i, axis=0)
    q = relay.floor_divide(i, relay.const(2, "int32")) + relay.floor_mod(
        i, relay.const(-3, "int32")
    )
    out = relay.Tuple([picked, relay.cast(q, "float32") * relay.const(0.5)])
    idx = np.array([0, 5, -2, 3, 9], "int32")  # out of range indices clip
    types = [((5, 3), "float32"), ((5,), "float32")]
    got, *_ = aot(_model([i], out), None, [idx], types, tmp_path)
    _close(got[0], table[np.clip(idx, 0, 5)])
    _close(got[1], ((idx // 2) + np.mod(idx, -3)).astype(np.float64) * 0.5)


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_pooling_nhwc(aot, tmp_path, ceil_mode):
    x = relay.var("x", shape=(1, 7, 7, 3))
    mp = relay.nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1),
                             layout="NHWC", ceil_mode=ceil_mode)  # fmt: skip
    gp = relay.nn.global_avg_pool2d(mp, layout="NHWC")
    data = _f32(1, 7, 7, 3)
    oh = 4
    got, *_ = aot(_model([x], relay.Tuple([mp, gp])), None, [data],
                  [((1, oh, oh, 3), "float32"), ((1, 1, 1, 3), "float32")], tmp_path)  # fmt: skip
    padded = np.pad(data.astype(np.float64), ((0, 0), (1, 2), (1, 2), (0, 0)),
                    constant_values=-np.inf)  # fmt: skip
    want = np.stack([np.stack([padded[0, 2 * r : 2 * r + 3, 2 * c : 2 * c + 3].max(axis=(0, 1))
                               for c in range(oh)]) for r in range(oh)])[None]  # fmt: skip
    _close(got[0], want)
    _close(got[1], want.mean(axis=(1, 2), keepdims=True))
