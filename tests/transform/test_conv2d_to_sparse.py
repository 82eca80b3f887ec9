"""bsr_conv2d.convert / convert2: sparse convolutions become nn.sparse_conv2d; the built
model's output is checked against a NumPy float64 convolution."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.contrib import graph_executor
from relaykit.relay.data_dep_optimization import bsr_conv2d
from relaykit.transform.bind import bind_params_by_name


def _block_sparse(rows, cols, bs_r, density, rng):
    m = np.zeros((rows, cols), "float32")
    for r in range(0, rows, bs_r):
        for c in range(cols):
            if rng.random() < density:
                m[r : r + bs_r, c] = rng.standard_normal(bs_r)
    return m


def _np_conv_nchw(x, w_oihw, pad):
    n, _, h, wd = x.shape
    o, _, k, _ = w_oihw.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, o, h, wd))
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i : i + h, j : j + wd]
            out += np.einsum("nchw,oc->nohw", patch, w_oihw[:, :, i, j].astype(np.float64))
    return out


def _run(func, params, x):
    lib = relay.build(tvm.IRModule.from_expr(func), "llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("data", x)
    m.run()
    return m.get_output(0).numpy()


@pytest.mark.parametrize("layout,k", [("NCHW", 1), ("NHWC", 1), ("NCHW", 3), ("NHWC", 3)])
def test_sparse_conv_matches_dense_numpy(layout, k):
    rng = np.random.default_rng(3)
    c, o, hw = 8, 16, 6
    m = _block_sparse(o, c * k * k, 4, 0.15, rng)
    if layout == "NCHW":
        w_oihw = m.reshape(o, c, k, k)
        weight, wshape, dshape = w_oihw, (o, c, k, k), (1, c, hw, hw)
        klayout = "OIHW"
    else:
        w_hwio = m.T.reshape(k, k, c, o)
        w_oihw = w_hwio.transpose(3, 2, 0, 1)
        weight, wshape, dshape = w_hwio, (k, k, c, o), (1, hw, hw, c)
        klayout = "HWIO"
    data = relay.var("data", shape=dshape)
    w = relay.var("weight", shape=wshape)
    y = relay.nn.conv2d(
        relay.nn.relu(data), w, channels=o, kernel_size=k, padding=(k - 1) // 2,
        data_layout=layout, kernel_layout=klayout,
    )  # fmt: skip
    func = relay.Function([data, w], y)
    x = rng.standard_normal(dshape).astype("float32")
    if k == 1:
        sparse, params = bsr_conv2d.convert(func, {"weight": weight}, (4, 1), 0.5, layout)
    else:
        bound = bind_params_by_name(func, {"weight": weight})
        sparse, params = bsr_conv2d.convert2(bound, {}, (4, 1), 0.5, layout, k)
    ops = []
    relay.analysis.post_order_visit(
        sparse, lambda e: ops.append(e.op.name) if isinstance(e, relay.Call) else None
    )
    assert "nn.sparse_conv2d" in ops and "nn.conv2d" not in ops
    xr = np.maximum(x, 0)
    want = _np_conv_nchw(xr if layout == "NCHW" else xr.transpose(0, 3, 1, 2), w_oihw, (k - 1) // 2)
    if layout == "NHWC":
        want = want.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(_run(sparse, params, x), want, rtol=1e-4, atol=1e-4)


def test_dense_enough_weights_and_other_convolutions_are_left_alone():
    rng = np.random.default_rng(4)
    data = relay.var("data", shape=(1, 4, 5, 5))
    w = relay.var("weight", shape=(8, 4, 1, 1))
    func = relay.Function([data, w], relay.nn.conv2d(data, w, kernel_size=1, strides=2))
    weight = _block_sparse(8, 4, 4, 0.1, rng).reshape(8, 4, 1, 1)
    same, params = bsr_conv2d.convert(func, {"weight": weight}, (4, 1), 0.5, "NCHW")
    assert same is func and set(params) == {"weight"}  # strided: not a sparse_conv2d
    func = relay.Function([data, w], relay.nn.conv2d(data, w, kernel_size=1))
    dense = rng.standard_normal((8, 4, 1, 1)).astype("float32")
    same, _ = bsr_conv2d.convert(func, {"weight": dense}, (4, 1), 0.5, "NCHW")
    assert same is func


def test_bsr_dense_convert_matches_numpy():
    from relaykit.relay.data_dep_optimization import bsr_dense

    rng = np.random.default_rng(6)
    wd = _block_sparse(16, 12, 4, 0.2, rng)
    data, w = relay.var("data", shape=(3, 12)), relay.var("weight", shape=(16, 12))
    func = relay.Function([data, w], relay.nn.relu(relay.nn.dense(relay.nn.relu(data), w)))
    sparse, params = bsr_dense.convert(func, {"weight": wd}, (4, 1), 0.5)
    assert "weight" not in params and sparse.body.args[0].op.name == "nn.sparse_dense"
    x = rng.standard_normal((3, 12)).astype("float32")
    want = np.maximum(np.maximum(x, 0).astype(np.float64) @ wd.T.astype(np.float64), 0)
    np.testing.assert_allclose(_run(sparse, params, x), want, rtol=1e-5, atol=1e-5)


def test_sparse_dense_with_the_sparse_matrix_on_the_left():
    import scipy.sparse as sp

    rng = np.random.default_rng(7)
    wd = _block_sparse(8, 6, 2, 0.3, rng)
    bsr = sp.bsr_matrix(wd, blocksize=(2, 1))
    x = rng.standard_normal((5, 6)).astype("float32")
    xv = relay.var("x", shape=(5, 6))
    parts = [relay.const(bsr.data), relay.const(bsr.indices.astype("int32")),
             relay.const(bsr.indptr.astype("int32"))]  # fmt: skip
    call = relay.nn.sparse_dense(xv, parts, sparse_lhs=True)
    mod = tvm.IRModule.from_expr(relay.Function([xv], call))
    got = relay.create_executor("debug", mod=mod).evaluate()(x).numpy()
    np.testing.assert_allclose(got, wd.astype(np.float64) @ x.T.astype(np.float64), rtol=1e-5)
