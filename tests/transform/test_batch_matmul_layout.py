"""FoldTransposeIntoBatchMatmul: transposes that swap a batch_matmul operand's last two axes
become its transpose_a / transpose_b flags; results against NumPy einsum in float64."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.contrib import graph_executor
from relaykit.ir.expr import Call
from relaykit.ir.functor import post_order
from relaykit.transform import InferType
from relaykit.transform.batch_matmul_layout import FoldTransposeIntoBatchMatmul

RNG = np.random.default_rng(3)


def fold(f):
    return FoldTransposeIntoBatchMatmul()(InferType()(tvm.IRModule.from_expr(f)))["main"]


def calls(f, name):
    return [n for n in post_order(f.body) if isinstance(n, Call) and n.op.name == name]


def build_run(f, inputs):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(f), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in inputs.items():
        m.set_input(k, v)
    m.run()
    return m.get_output(0).numpy()


def attention_scores(s=16, h=2, d=8):
    """Q K^T as exporters write it: heads split by reshape + transpose, K^T by a transpose
    that moves the head size last but one."""
    q, k = relay.var("q", shape=(1, s, h * d)), relay.var("k", shape=(1, s, h * d))
    qh = relay.reshape(relay.transpose(relay.reshape(q, [1, s, h, d]), [0, 2, 1, 3]), [h, s, d])
    kt = relay.reshape(relay.transpose(relay.reshape(k, [1, s, h, d]), [0, 2, 3, 1]), [h, d, s])
    return relay.Function([q, k], relay.nn.batch_matmul(qh, kt, transpose_b=False))


def test_attention_scores_read_k_by_rows():
    s, h, d = 16, 2, 8
    out = fold(attention_scores(s, h, d))
    (bmm,) = calls(out, "nn.batch_matmul")
    assert bmm.attrs.transpose_b and not bmm.attrs.transpose_a
    perms = sorted(tuple(t.attrs.axes) for t in calls(out, "transpose"))
    assert perms == [(0, 2, 1, 3), (0, 2, 1, 3)]  # no element-wise transpose left
    q = RNG.standard_normal((1, s, h * d)).astype("float32")
    k = RNG.standard_normal((1, s, h * d)).astype("float32")
    want = np.einsum(
        "shd,thd->hst", q[0].reshape(s, h, d).astype("f8"), k[0].reshape(s, h, d).astype("f8")
    )
    for f in (out, attention_scores(s, h, d)):  # also relay.build's own pipeline
        np.testing.assert_allclose(build_run(f, {"q": q, "k": k}), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("side", ["a", "b"])
@pytest.mark.parametrize("flag", [False, True])
def test_plain_3d_transposes_disappear(side, flag):
    x = relay.var("x", shape=(3, 5, 4))
    if side == "a":  # a = transpose(x): (3, 4, 5); with transpose_a it reads (3, 5, 4)
        a = relay.transpose(x, [0, 2, 1])
        y = relay.var("y", shape=(3, 4 if flag else 5, 6))
        bmm = relay.nn.batch_matmul(a, y, transpose_a=flag, transpose_b=False)
    else:  # b = transpose(x): (3, 4, 5); with transpose_b it reads (3, 5, 4)
        y = relay.var("y", shape=(3, 6, 5 if flag else 4))
        bmm = relay.nn.batch_matmul(y, relay.transpose(x, [0, 2, 1]), transpose_b=flag)
    f = relay.Function([x, y], bmm)
    out = fold(f)
    assert calls(out, "transpose") == []
    (call,) = calls(out, "nn.batch_matmul")
    got_flag = call.attrs.transpose_a if side == "a" else call.attrs.transpose_b
    assert got_flag == (not flag)
    xv = RNG.standard_normal((3, 5, 4)).astype("float32")
    yv = RNG.standard_normal(tuple(int(d) for d in f.params[1].type_annotation.shape))
    yv = yv.astype("float32")
    xt = xv.transpose(0, 2, 1).astype("f8")
    if side == "a":
        a64 = xt.transpose(0, 2, 1) if flag else xt
        want = a64 @ yv.astype("f8")
    else:
        b64 = xt.transpose(0, 2, 1) if flag else xt
        want = yv.astype("f8") @ b64
    got = build_run(out, {"x": xv, "y": yv})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_left_alone_when_shared_or_not_a_row_swap():
    x, y = relay.var("x", shape=(2, 4, 4)), relay.var("y", shape=(2, 4, 4))
    t = relay.transpose(x, [0, 2, 1])
    shared = fold(relay.Function([x, y], relay.Tuple([relay.nn.batch_matmul(y, t), relay.exp(t)])))
    assert len(calls(shared, "transpose")) == 1
    assert calls(shared, "nn.batch_matmul")[0].attrs.transpose_b  # as it was
    # the last axis stays last: rows are copied whole already
    z, w = relay.var("z", shape=(4, 2, 3)), relay.var("w", shape=(2, 5, 3))
    rows = relay.transpose(z, [1, 0, 2])
    out = fold(relay.Function([z, w], relay.nn.batch_matmul(w, rows)))
    assert [tuple(c.attrs.axes) for c in calls(out, "transpose")] == [(1, 0, 2)]
    # a reshape that regroups the last two axes is not a merge of leading ones
    k, a = relay.var("k", shape=(1, 4, 2, 6)), relay.var("a", shape=(2, 3, 6))
    kt = relay.reshape(relay.transpose(k, [0, 2, 3, 1]), [2, 4, 6])  # (1,2,6,4) -> (2,4,6)
    out = fold(relay.Function([k, a], relay.nn.batch_matmul(a, kt)))
    assert [tuple(c.attrs.axes) for c in calls(out, "transpose")] == [(0, 2, 3, 1)]
