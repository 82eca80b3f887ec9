"""Whole models as ahead-of-time C: exported as Model Library Format, compiled by ``cc``
with a ``main.c`` of this test, run, and compared with NumPy in float64."""

from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest
from scipy.special import erf

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import partition_for

RTOL = 1e-4


def _close(got: np.ndarray, want: np.ndarray, rtol: float = RTOL) -> None:
    scale = max(float(np.max(np.abs(want))), 1e-30)
    err = float(np.max(np.abs(got.astype(np.float64) - want))) / scale
    assert err < rtol, f"relative error {err}"


def _conv_ref(x, w, stride=(1, 1), pad=(0, 0, 0, 0), dil=(1, 1), groups=1):
    """NCHW / OIHW convolution in float64, written out."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    cg = c // groups
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (h + pad[0] + pad[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pad[1] + pad[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg : (g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[
                    :,
                    :,
                    i * dil[0] : i * dil[0] + stride[0] * (oh - 1) + 1 : stride[0],
                    j * dil[1] : j * dil[1] + stride[1] * (ow - 1) + 1 : stride[1],
                ]
                out[:, g * og : (g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * og : (g + 1) * og, :, i, j]
                )
    return out


def _pool_ref(x, k, s, pad, kind):
    n, c, h, w = x.shape
    fill = -np.inf if kind == "max" else np.nan
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    oh, ow = (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s : i * s + k, j * s : j * s + k]
            out[:, :, i, j] = (
                win.max(axis=(2, 3)) if kind == "max" else np.nanmean(win, axis=(2, 3))
            )
    return out


def test_mlp(aot, workspace_of, tmp_path):
    rng = np.random.default_rng(0)
    x = relay.var("input:0", shape=(2, 32))
    params = {
        "w1": rng.standard_normal((64, 32)).astype("float32") * 0.2,
        "b1": rng.standard_normal(64).astype("float32"),
        "w2": rng.standard_normal((10, 64)).astype("float32") * 0.2,
        "b2": rng.standard_normal(10).astype("float32"),
    }
    w1, b1, w2, b2 = (relay.var(k, shape=v.shape) for k, v in params.items())
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w1), b1))
    y = relay.nn.softmax(relay.nn.bias_add(relay.nn.dense(h, w2), b2))
    mod = tvm.IRModule.from_expr(relay.Function([x, w1, w2, b1, b2], y))
    data = rng.standard_normal((2, 32)).astype("float32")
    (got,), meta, lib, exe = aot(mod, params, [data], [((2, 10), "float32")], tmp_path)

    p = {k: v.astype(np.float64) for k, v in params.items()}
    hh = np.maximum(data @ p["w1"].T + p["b1"], 0)
    z = hh @ p["w2"].T + p["b2"]
    want = np.exp(z - z.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    _close(got, want)

    model = meta["modules"]["default"]
    assert model["memory"]["functions"]["main"][0]["workspace_size_bytes"] == (workspace_of(lib))
    assert "input_0" in lib.header  # sanitised
    syms = subprocess.run(["nm", str(exe)], capture_output=True, text=True).stdout
    assert "Py" not in syms and "relaykit" not in syms.lower()


@pytest.mark.parametrize(
    "cflags", [(), ("-DTVMGEN_NO_VECTOR", "-DTVMGEN_NO_CLONES")], ids=["vector", "plain-c"]
)
def test_small_cnn(aot, workspace_of, tmp_path, cflags):
    rng = np.random.default_rng(1)
    shapes = {
        "w1": (8, 3, 3, 3),
        "b1": (8,),
        "wd": (8, 1, 3, 3),
        "gamma": (8,),
        "beta": (8,),
        "mean": (8,),
        "var": (8,),
        "w2": (6, 4, 3, 3),
        "wf": (5, 6),
    }
    params = {k: rng.standard_normal(s).astype("float32") * 0.5 for k, s in shapes.items()}
    params["var"] = np.abs(params["var"]) + 0.5
    v = {k: relay.var(k, shape=s) for k, s in shapes.items()}
    x = relay.var("x", shape=(1, 3, 12, 12))
    c1 = relay.nn.relu(
        relay.nn.bias_add(
            relay.nn.conv2d(x, v["w1"], padding=(1, 1), channels=8, kernel_size=(3, 3)), v["b1"]
        )
    )
    dw = relay.nn.conv2d(
        c1, v["wd"], padding=(2, 2), dilation=(2, 2), groups=8, channels=8, kernel_size=(3, 3)
    )
    bn = relay.nn.batch_norm(dw, v["gamma"], v["beta"], v["mean"], v["var"], epsilon=1e-3)[0]
    r = relay.nn.relu(bn) + c1
    mp = relay.nn.max_pool2d(r, pool_size=(2, 2), strides=(2, 2))
    c2 = relay.nn.conv2d(
        mp, v["w2"], strides=(2, 2), padding=(1, 1, 0, 0), groups=2, channels=6, kernel_size=(3, 3)
    )
    ap = relay.nn.avg_pool2d(c2, pool_size=(3, 3), strides=(1, 1), padding=(1, 1))
    gp = relay.nn.global_avg_pool2d(ap)
    y = relay.nn.dense(relay.nn.batch_flatten(gp), v["wf"])
    mod = tvm.IRModule.from_expr(relay.Function([x, *v.values()], y))
    data = rng.standard_normal((1, 3, 12, 12)).astype("float32")
    (got,), meta, lib, _ = aot(mod, params, [data], [((1, 5), "float32")], tmp_path, cflags)

    p = {k: a.astype(np.float64) for k, a in params.items()}
    a1 = np.maximum(_conv_ref(data, p["w1"], pad=(1, 1, 1, 1)) + p["b1"][:, None, None], 0)
    d = _conv_ref(a1, p["wd"], pad=(2, 2, 2, 2), dil=(2, 2), groups=8)
    sc = p["gamma"] / np.sqrt(p["var"] + 1e-3)
    b = d * sc[:, None, None] + (p["beta"] - p["mean"] * sc)[:, None, None]
    res = np.maximum(b, 0) + a1
    m = _pool_ref(res, 2, 2, 0, "max")
    c = _conv_ref(m, p["w2"], stride=(2, 2), pad=(1, 1, 0, 0), groups=2)
    a = _pool_ref(c, 3, 1, 1, "avg")
    want = a.mean(axis=(2, 3)) @ p["wf"].T
    _close(got, want)
    model = meta["modules"]["default"]
    assert model["workspace_size_bytes"] == workspace_of(lib)
    # the memory planner shares bytes: the workspace is smaller than all tensors together
    assert model["workspace_size_bytes"] < 4 * (8 * 12 * 12) * 4


def _layer_norm(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def test_transformer_block(aot, workspace_of, tmp_path):
    rng = np.random.default_rng(2)
    s, d, heads, f = 8, 16, 2, 32
    hd = d // heads
    shapes = {
        "g1": (d,), "be1": (d,), "wq": (d, d), "wk": (d, d), "wv": (d, d), "wo": (d, d),
        "g2": (d,), "be2": (d,), "wf1": (f, d), "bf1": (f,), "wf2": (d, f), "bf2": (d,),
    }  # fmt: skip
    params = {k: rng.standard_normal(sh).astype("float32") * 0.3 for k, sh in shapes.items()}
    v = {k: relay.var(k, shape=sh) for k, sh in shapes.items()}
    x = relay.var("x", shape=(1, s, d))
    ln = relay.nn.layer_norm(x, v["g1"], v["be1"])

    def heads_of(t):
        t = relay.reshape(t, (s, heads, hd))
        return relay.transpose(t, (1, 0, 2))

    q = heads_of(relay.nn.dense(ln, v["wq"]))
    k = heads_of(relay.nn.dense(ln, v["wk"]))
    val = heads_of(relay.nn.dense(ln, v["wv"]))
    att = relay.nn.softmax(relay.nn.batch_matmul(q, k) * relay.const(1 / math.sqrt(hd)))
    ctx = relay.nn.batch_matmul(att, val, transpose_b=False)
    ctx = relay.reshape(relay.transpose(ctx, (1, 0, 2)), (1, s, d))
    h = x + relay.nn.dense(ctx, v["wo"])
    ln2 = relay.nn.layer_norm(h, v["g2"], v["be2"])
    ff = relay.nn.gelu(relay.nn.bias_add(relay.nn.dense(ln2, v["wf1"]), v["bf1"], axis=-1))
    y = h + relay.nn.bias_add(relay.nn.dense(ff, v["wf2"]), v["bf2"], axis=-1)
    mod = tvm.IRModule.from_expr(relay.Function([x, *v.values()], y))
    data = rng.standard_normal((1, s, d)).astype("float32")
    (got,), meta, lib, _ = aot(mod, params, [data], [((1, s, d), "float32")], tmp_path)

    p = {k: a.astype(np.float64) for k, a in params.items()}
    xx = data.astype(np.float64)[0]
    l1 = _layer_norm(xx, p["g1"], p["be1"])
    qh, kh_, vh = (
        (l1 @ p[w].T).reshape(s, heads, hd).transpose(1, 0, 2) for w in ("wq", "wk", "wv")
    )
    sc = qh @ kh_.transpose(0, 2, 1) / math.sqrt(hd)
    sc = np.exp(sc - sc.max(-1, keepdims=True))
    sc /= sc.sum(-1, keepdims=True)
    cx = (sc @ vh).transpose(1, 0, 2).reshape(s, d)
    hh = xx + cx @ p["wo"].T
    l2 = _layer_norm(hh, p["g2"], p["be2"])
    z = l2 @ p["wf1"].T + p["bf1"]
    gel = 0.5 * z * (1 + erf(z / math.sqrt(2)))
    want = (hh + gel @ p["wf2"].T + p["bf2"])[None]
    _close(got, want)
    assert meta["modules"]["default"]["workspace_size_bytes"] == workspace_of(lib)


def test_ccompiler_regions_in_the_same_program(aot, workspace_of, tmp_path):
    rng = np.random.default_rng(3)
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.const(rng.standard_normal((4, 4, 3, 3)).astype("float32") * 0.3)
    b = relay.const(rng.standard_normal(4).astype("float32"))
    wd = relay.const(rng.standard_normal((3, 144)).astype("float32") * 0.2)
    c = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
    t = relay.tanh(c)  # stays on the host
    y = relay.nn.softmax(relay.nn.dense(relay.nn.batch_flatten(t * c), wd))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    part = partition_for(mod, "ccompiler")
    assert "Compiler" in str(part)
    data = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    (got,), meta, lib, _ = aot(part, None, [data], [((1, 3), "float32")], tmp_path)
    assert "default_lib2.c" in lib.sources

    cc = np.maximum(
        _conv_ref(data, w.data.numpy(), pad=(1, 1, 1, 1))
        + b.data.numpy().astype(np.float64)[:, None, None],
        0,
    )
    z = (np.tanh(cc) * cc).reshape(1, -1) @ wd.data.numpy().astype(np.float64).T
    want = np.exp(z - z.max())
    want /= want.sum()
    _close(got, want)
    assert meta["modules"]["default"]["workspace_size_bytes"] == workspace_of(lib)
