"""The passes and operators TVM's ``partition_for_dnnl`` flow needs: ``CanonicalizeOps``,
``SimplifyExpr``, ``Legalize``, ``AlterOpLayout``, ``ToMixedPrecision``, the 1-D/3-D
convolutions; the VM's keyword inputs and backend tuple outputs; dnnl regions on
bfloat16 tensors. Each result is checked against NumPy loops or NumPy arithmetic."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import RelayTypeError
from relaykit.relay import transform
from relaykit.testing.temp_op_attr import TempOpAttr

RNG = np.random.default_rng(11)


def rand(*shape: int) -> np.ndarray:
    return RNG.uniform(-1.0, 1.0, shape).astype("float32")


def run(mod: tvm.IRModule, *args: np.ndarray, kind: str = "debug") -> np.ndarray:
    f = relay.create_executor(kind, mod=mod, device=tvm.cpu(), target="llvm").evaluate()
    return f(*args).numpy()


def function_of(expr: relay.Expr) -> tvm.IRModule:
    return tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr))


# -- N-d convolutions against direct loops ------------------------------------------------


def conv_loops(x, w, strides, padding, dilation, groups):
    """Direct convolution, channels first, padding (before..., after...)."""
    n = x.ndim - 2
    pads = [(0, 0), (0, 0)] + [(padding[a], padding[n + a]) for a in range(n)]
    xp = np.pad(x.astype(np.float64), pads)
    o, cg = w.shape[:2]
    k = w.shape[2:]
    out_sz = [(xp.shape[2 + a] - (k[a] - 1) * dilation[a] - 1) // strides[a] + 1 for a in range(n)]
    out = np.zeros((x.shape[0], o, *out_sz))
    og = o // groups
    for b, oc in itertools.product(range(x.shape[0]), range(o)):
        g = oc // og
        for pos in itertools.product(*(range(s) for s in out_sz)):
            acc = 0.0
            for ic in range(cg):
                for tap in itertools.product(*(range(t) for t in k)):
                    idx = tuple(pos[a] * strides[a] + tap[a] * dilation[a] for a in range(n))
                    acc += xp[(b, g * cg + ic, *idx)] * w[(oc, ic, *tap)]
            out[(b, oc, *pos)] = acc
    return out


def conv_transpose_loops(x, w, strides, padding, output_padding, groups):
    """Direct transposed convolution (scatter of each input element), channels first."""
    n = x.ndim - 2
    c, og = w.shape[:2]
    k = w.shape[2:]
    cg = c // groups
    full = [(x.shape[2 + a] - 1) * strides[a] + k[a] + output_padding[a] for a in range(n)]
    buf = np.zeros((x.shape[0], og * groups, *full))
    for b, ic in itertools.product(range(x.shape[0]), range(c)):
        g = ic // cg
        for pos in itertools.product(*(range(s) for s in x.shape[2:])):
            for oc in range(og):
                for tap in itertools.product(*(range(t) for t in k)):
                    idx = tuple(pos[a] * strides[a] + tap[a] for a in range(n))
                    buf[(b, g * og + oc, *idx)] += x[(b, ic, *pos)] * w[(ic, oc, *tap)]
    crop = tuple(slice(padding[a], full[a] - padding[n + a]) for a in range(n))
    return buf[(slice(None), slice(None), *crop)]


def test_conv1d_matches_direct_loops():
    x, w = rand(2, 4, 11), rand(6, 2, 3)
    y = relay.nn.conv1d(
        relay.var("x", shape=x.shape),
        relay.var("w", shape=w.shape),
        strides=2,
        padding=(1, 2),
        dilation=2,
        groups=2,
        channels=6,
        kernel_size=3,
    )
    got = run(function_of(y), x, w)
    want = conv_loops(x, w, (2,), (1, 2), (2,), 2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv3d_matches_direct_loops():
    x, w = rand(1, 2, 5, 4, 6), rand(3, 2, 2, 3, 2)
    y = relay.nn.conv3d(
        relay.var("x", shape=x.shape),
        relay.var("w", shape=w.shape),
        strides=(1, 2, 1),
        padding=(1, 0, 1),
        dilation=(2, 1, 1),
    )
    mod = function_of(y)
    got = run(mod, x, w)
    np.testing.assert_allclose(
        got, conv_loops(x, w, (1, 2, 1), (1, 0, 1, 1, 0, 1), (2, 1, 1), 1), rtol=1e-5, atol=1e-5
    )
    assert transform.InferType()(mod)["main"].ret_type.shape == got.shape


@pytest.mark.parametrize("n", [1, 3])
def test_conv_transpose_nd_matches_direct_loops(n):
    x = rand(1, 4, *([4, 3, 5][:n] if n == 3 else [6]))
    w = rand(4, 3, *([2] * n))
    build = relay.nn.conv1d_transpose if n == 1 else relay.nn.conv3d_transpose
    y = build(
        relay.var("x", shape=x.shape),
        relay.var("w", shape=w.shape),
        strides=(2,) * n,
        padding=(1,) * n,
        output_padding=(1,) * n,
        groups=2,
    )
    got = run(function_of(y), x, w)
    want = conv_transpose_loops(x, w, (2,) * n, (1,) * (2 * n), (1,) * n, 2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv3d_type_errors_say_what_is_wrong():
    x = relay.var("x", shape=(1, 3, 4, 4, 4))
    w = relay.var("w", shape=(8, 2, 3, 3, 3))
    with pytest.raises(tvm.error.RelayKitError, match="input channels"):
        transform.InferType()(function_of(relay.nn.conv3d(x, w)))


# -- the TVM flow passes --------------------------------------------------------------------


def test_canonicalize_ops_writes_bias_add_as_a_broadcast_add():
    x, b = rand(1, 3, 4, 2), rand(4)
    y = relay.nn.bias_add(relay.var("x", shape=x.shape), relay.var("b", shape=b.shape), axis=2)
    mod = function_of(y)
    with tvm.transform.PassContext(opt_level=3):
        out = transform.CanonicalizeOps()(mod)
    assert out["main"].body.op.name == "add"
    np.testing.assert_allclose(run(out, x, b), x + b[:, None], rtol=1e-6)


def test_simplify_expr_collapses_chains_and_identities():
    x = rand(2, 6)
    xv = relay.var("x", shape=x.shape)
    y = relay.reshape(relay.reshape(xv, (3, 4)), (4, 3))
    y = relay.transpose(relay.transpose(y, (1, 0)), (1, 0))
    y = (y + relay.const(0.0)) * relay.const(1.0)
    y = (y + relay.const(1.0)) + relay.const(2.0)
    mod = function_of(y)
    out = transform.FoldConstant()(transform.SimplifyExpr()(mod))
    body = out["main"].body
    assert body.op.name == "add" and body.args[0].op.name == "reshape"
    assert body.args[0].args[0] is out["main"].params[0]
    np.testing.assert_allclose(run(out, x), x.reshape(4, 3) + 3.0, rtol=1e-6)


def test_simplify_expr_keeps_tensor_constants_and_broadcasting_identities():
    x = rand(3)
    for zeros in (np.zeros((2, 3), "float32"), np.zeros((3,), "float32")):
        y = relay.var("x", shape=(3,)) + relay.const(zeros)
        out = transform.SimplifyExpr()(function_of(y))
        assert out["main"].body.op.name == "add"
        np.testing.assert_allclose(run(out, x), np.broadcast_to(x, zeros.shape))


def test_legalize_and_alter_op_layout_use_the_operator_hooks():
    x, w = rand(1, 2, 5, 5), rand(4, 2, 3, 3)
    y = relay.nn.conv2d(relay.var("x", shape=x.shape), relay.var("w", shape=w.shape))
    mod = function_of(y)
    seen = []

    def legal(attrs, inputs, types):
        seen.append(([str(t) for t in types], attrs.groups))
        return relay.nn.relu(relay.nn.conv2d(*inputs)) if len(seen) == 1 else None

    ctx = tvm.transform.PassContext(opt_level=3)
    with TempOpAttr("nn.conv2d", "FTVMLegalize", legal), ctx:
        out = transform.Legalize()(mod)
    assert out["main"].body.op.name == "nn.relu"
    assert len(seen[0][0]) == 3  # data, weight, output
    want = np.maximum(conv_loops(x, w, (1, 1), (0,) * 4, (1, 1), 1), 0)
    np.testing.assert_allclose(run(out, x, w), want, rtol=1e-5, atol=1e-5)

    with TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", lambda a, i, t, o: None), ctx:
        assert tvm.ir.structural_equal(transform.AlterOpLayout()(mod), mod)

    def bad(attrs, inputs, tinfos, out_type):
        return relay.nn.conv2d(*inputs, data_layout="NCHW", padding=1)

    with (
        TempOpAttr("nn.conv2d", "FTVMAlterOpLayout", bad),
        ctx,
        pytest.raises(RelayTypeError, match="annotated to return"),
    ):
        transform.AlterOpLayout()(mod)  # the hook changed the output shape


def test_to_mixed_precision_runs_heavy_ops_in_the_narrow_type():
    x, w, b = rand(2, 8), rand(4, 8), rand(4)
    xv, wv = relay.var("x", shape=x.shape), relay.var("w", shape=w.shape)
    y = relay.nn.relu(relay.nn.dense(xv, wv) + relay.const(b))
    y = relay.nn.softmax(y)
    mod = function_of(y)
    out = transform.ToMixedPrecision("float16")(mod)
    body = out["main"].body
    # softmax stays float32; the add follows float32 because its bias is a float32 constant
    assert body.op.name == "nn.softmax" and out["main"].ret_type.dtype == "float32"
    dense = body.args[0].args[0].args[0].args[0]
    assert dense.op.name == "nn.dense" and dense.attrs.out_dtype == "float16"
    d16 = x.astype(np.float16).astype(np.float64) @ w.astype(np.float16).T.astype(np.float64)
    z = np.maximum(d16.astype(np.float16).astype(np.float32) + b, 0)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    np.testing.assert_allclose(run(out, x, w), e / e.sum(axis=1, keepdims=True), rtol=1e-3)


def test_to_mixed_precision_leaves_graphs_of_never_ops_alone():
    y = relay.nn.softmax(relay.var("x", shape=(2, 3)))
    mod = transform.InferType()(function_of(y))
    assert tvm.ir.structural_equal(transform.ToMixedPrecision("bfloat16")(mod), mod)
    # a follow op over a variable is converted: the variable can be cast (TVM's rule)
    relu = transform.InferType()(function_of(relay.nn.relu(relay.var("x", shape=(2, 3)))))
    assert transform.ToMixedPrecision("bfloat16")(relu)["main"].ret_type.dtype == "bfloat16"


def test_to_mixed_precision_keeps_the_output_type_when_asked():
    xv, wv = relay.var("x", shape=(1, 4)), relay.var("w", shape=(2, 4))
    mod = function_of(relay.nn.dense(xv, wv))
    cfg = {"relay.ToMixedPrecision.keep_orig_output_dtype": True}
    with tvm.transform.PassContext(config=cfg):
        out = transform.ToMixedPrecision("bfloat16")(mod)
    assert out["main"].ret_type.dtype == "float32"
    assert out["main"].body.op.name == "cast"


# -- executors ----------------------------------------------------------------------------


def test_vm_ignores_keywords_naming_no_input():
    x, w = relay.var("x", shape=(2, 3)), relay.var("w", shape=(3,))
    wv, xv = rand(3), rand(2, 3)
    mod = tvm.IRModule.from_expr(relay.Function([x, w], x * w))
    mod["main"] = relay.build_module.bind_params_by_name(mod["main"], {"w": wv})
    f = relay.create_executor("vm", mod=mod, device=tvm.cpu(), target="llvm").evaluate()
    np.testing.assert_allclose(f(xv, w=wv).numpy(), xv * wv, rtol=1e-6)


pytest.importorskip("relaykit.backends.dnnl")
needs_onednn = pytest.mark.skipif(
    not tvm.get_global_func("runtime.DNNLJSONRuntimeCreate", True), reason="oneDNN not installed"
)


def _dnnl_partition(mod: tvm.IRModule) -> tvm.IRModule:
    seq = tvm.transform.Sequential(
        [
            transform.MergeComposite(relay.op.contrib.dnnl.pattern_table()),
            transform.AnnotateTarget("dnnl"),
            transform.MergeCompilerRegions(),
            transform.PartitionGraph(),
        ]
    )
    with tvm.transform.PassContext(opt_level=3):
        return seq(mod)


@needs_onednn
def test_vm_runs_a_backend_function_with_a_tuple_output():
    x, y = relay.var("x", shape=(1, 3)), relay.var("y", shape=(1, 3))
    z = x + y
    mod = _dnnl_partition(function_of(relay.Tuple([z, z + y])))
    assert any("dnnl" in gv.name_hint for gv in mod.get_global_vars())
    xv, yv = rand(1, 3), rand(1, 3)
    f = relay.create_executor("vm", mod=mod, device=tvm.cpu(), target="llvm").evaluate()
    a, b = (t.numpy() for t in f(xv, yv))
    np.testing.assert_allclose(a, xv + yv, rtol=1e-6)
    np.testing.assert_allclose(b, xv + 2 * yv, rtol=1e-6)


@needs_onednn
@pytest.mark.parametrize("kind", ["graph", "vm"])
def test_dnnl_region_on_bfloat16_tensors_computes_in_float32(kind):
    x, w = rand(2, 16), rand(8, 16)
    xv = relay.var("x", shape=x.shape)
    y = relay.nn.relu(relay.nn.dense(xv, relay.const(w)))
    mod = transform.ToMixedPrecision("bfloat16")(function_of(y))
    mod = _dnnl_partition(transform.FoldConstant()(mod))
    assert any("dnnl" in gv.name_hint for gv in mod.get_global_vars())
    got = relay.create_executor(kind, mod=mod, device=tvm.cpu(), target="llvm").evaluate()(x)
    got = got.numpy()
    bf = ml_dtypes.bfloat16
    assert got.dtype == bf
    exact = x.astype(bf).astype(np.float64) @ w.astype(bf).astype(np.float64).T
    want = np.maximum(exact, 0).astype(np.float32).astype(bf)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2)


@needs_onednn
def test_dnnl_dense_accumulating_into_another_dense_output_is_right():
    # the later dense accumulates (oneDNN sum post-op) into the earlier one's result, and
    # writes the region's output buffer: the residual must be copied there first
    x, s, w, k, b = rand(4, 32), rand(4, 32), rand(16, 32), rand(16, 32), rand(16)
    xv, sv = relay.var("x", shape=x.shape), relay.var("s", shape=s.shape)
    y = relay.nn.bias_add(relay.nn.dense(xv, relay.const(w)), relay.const(b))
    y = relay.add(y, relay.nn.dense(sv, relay.const(k)))
    mod = _dnnl_partition(function_of(y))
    assert any("dnnl" in gv.name_hint for gv in mod.get_global_vars())
    got = run(mod, x, s, kind="graph")
    np.testing.assert_allclose(got, x @ w.T + b + s @ k.T, rtol=1e-4, atol=1e-4)


def _dnnl_function(params: list[relay.Var], body: relay.Expr) -> tvm.IRModule:
    """main calling a hand-built dnnl function whose every input is a region input."""
    f = relay.Function(params, body)
    f = f.with_attr("Primitive", tvm.tir.IntImm("int32", 1)).with_attr("Compiler", "dnnl")
    f = f.with_attr("global_symbol", "dnnl_hand_0")
    gv = relay.GlobalVar("dnnl_hand_0")
    mod = tvm.IRModule()
    mod[gv] = f
    outer = [relay.var(p.name_hint + "_o", p.type_annotation) for p in params]
    mod["main"] = relay.Function(outer, gv(*outer))
    return transform.InferType()(mod)


@needs_onednn
@pytest.mark.parametrize("kind", ["graph", "vm"])
def test_dnnl_regions_read_weights_and_statistics_given_at_run_time(kind):
    x, w = rand(1, 4, 6, 6), rand(4, 2, 3, 3)
    gamma, beta, mean = rand(4), rand(4), rand(4)
    var = RNG.uniform(0.5, 1.5, 4).astype("float32")
    d, k = rand(3, 5), rand(2, 5)
    ps = [
        relay.var("x", shape=x.shape),
        relay.var("w", shape=w.shape),
        *(relay.var(n, shape=(4,)) for n in ("g", "b", "m", "v")),
        relay.var("d", shape=d.shape),
        relay.var("k", shape=k.shape),
    ]
    conv = relay.nn.conv2d(ps[0], ps[1], padding=(1, 1), groups=2, kernel_size=(3, 3))
    bn = relay.nn.batch_norm(conv, *ps[2:6])[0]
    mod = _dnnl_function(ps, relay.Tuple([bn, relay.nn.dense(ps[6], ps[7])]))
    f = relay.create_executor(kind, mod=mod, device=tvm.cpu(), target="llvm").evaluate()
    got_bn, got_dense = (t.numpy() for t in f(x, w, gamma, beta, mean, var, d, k))
    c = conv_loops(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 2)
    along = (1, 4, 1, 1)
    want = (c - mean.reshape(along)) / np.sqrt(var.reshape(along) + 1e-5)
    want = want * gamma.reshape(along) + beta.reshape(along)
    np.testing.assert_allclose(got_bn, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_dense, d @ k.T, rtol=1e-5, atol=1e-5)


@needs_onednn
def test_dnnl_runs_conv1d_as_a_unit_height_conv2d():
    x, w = rand(1, 3, 20), rand(8, 3, 3)
    xv = relay.var("x", shape=x.shape)
    y = relay.nn.relu(relay.nn.conv1d(xv, relay.const(w), strides=2, padding=(1, 2), dilation=2))
    mod = _dnnl_partition(function_of(y))
    fns = [fn for gv, fn in mod.functions.items() if "dnnl" in gv.name_hint]
    assert len(fns) == 1
    want = np.maximum(conv_loops(x, w, (2,), (1, 2), (2,), 1), 0)
    np.testing.assert_allclose(run(mod, x, kind="graph"), want, rtol=1e-5, atol=1e-5)


@needs_onednn
@pytest.mark.parametrize(
    ("build", "x_shape", "w_shape", "kw"),
    [
        (
            relay.nn.conv3d,
            (1, 4, 5, 4, 6),
            (6, 2, 3, 2, 3),
            {"strides": (2, 1, 2), "padding": (1, 0, 1, 0, 1, 2), "groups": 2},
        ),
        (
            relay.nn.conv2d_transpose,
            (1, 4, 4, 5),
            (4, 3, 3, 3),
            {"strides": (2, 2), "padding": (1, 1), "output_padding": (1, 1), "groups": 2},
        ),
        (
            relay.nn.conv3d_transpose,
            (1, 2, 3, 4, 3),
            (2, 3, 2, 3, 2),
            {"strides": (2, 2, 2), "output_padding": (1, 1, 1)},
        ),
    ],
)
def test_dnnl_runs_3d_and_transposed_convolutions(build, x_shape, w_shape, kw):
    x, w = rand(*x_shape), rand(*w_shape)
    y = build(relay.var("x", shape=x_shape), relay.const(w), **kw)
    mod = _dnnl_partition(function_of(y))
    assert any("dnnl" in gv.name_hint for gv in mod.get_global_vars())
    n = len(x_shape) - 2
    pad = kw.get("padding", (0,) * n)
    pad = tuple(pad) * 2 if len(pad) == n else tuple(pad)
    if build is relay.nn.conv3d:
        want = conv_loops(x, w, kw["strides"], pad, (1,) * n, kw.get("groups", 1))
    else:
        want = conv_transpose_loops(
            x, w, kw["strides"], pad, kw["output_padding"], kw.get("groups", 1)
        )
    np.testing.assert_allclose(run(mod, x, kind="graph"), want, rtol=1e-4, atol=1e-4)


@needs_onednn
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_dnnl_runs_3d_pooling(kind):
    x = rand(1, 2, 5, 6, 4)
    pool = relay.nn.max_pool3d if kind == "max" else relay.nn.avg_pool3d
    y = pool(
        relay.var("x", shape=x.shape),
        pool_size=(2, 3, 2),
        strides=(2, 2, 1),
        padding=(0, 1, 0, 1, 0, 1),
    )
    mod = _dnnl_partition(function_of(y))
    assert any("dnnl" in gv.name_hint for gv in mod.get_global_vars())
    xp = np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 0), (0, 1)), constant_values=np.nan)
    out = np.empty((1, 2, 3, 3, 4), "float32")
    for i, j, k in itertools.product(range(3), range(3), range(4)):
        win = xp[:, :, 2 * i : 2 * i + 2, 2 * j : 2 * j + 3, k : k + 2]
        red = np.nanmax if kind == "max" else np.nanmean  # padding is never counted
        out[:, :, i, j, k] = red(win, axis=(2, 3, 4))
    np.testing.assert_allclose(run(mod, x, kind="graph"), out, rtol=1e-5, atol=1e-6)
