"""1-D/3-D and transposed convolutions, 1-D/3-D and adaptive pools, resizing, arg
reductions and sorts as ahead-of-time C, each compared with NumPy in float64 written
here (odd sizes, padding, strides, groups, dilation)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.execution.aot import c_emitters
from relaykit.ir.op import default_registry

rng = np.random.default_rng(11)


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


def _sub(path, name):
    (path / name).mkdir()
    return path / name


def _model(args, body):
    return tvm.IRModule.from_expr(relay.Function(args, body))


def _conv_ref(x, w, stride, pad, dil, groups):
    """N-d convolution, NC... / OI..., in float64: a sum over taps and input channels."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    r = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pad[i], pad[i + r]) for i in range(r)])
    o, cg = w.shape[:2]
    og = o // groups
    k = w.shape[2:]
    osz = [(xp.shape[2 + i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(r)]
    out = np.zeros((x.shape[0], o, *osz))
    for g in range(groups):
        xs = xp[:, g * cg : (g + 1) * cg]
        for tap in itertools.product(*[range(n) for n in k]):
            sl = tuple(
                slice(tap[i] * dil[i], tap[i] * dil[i] + stride[i] * (osz[i] - 1) + 1, stride[i])
                for i in range(r)
            )
            patch = xs[(slice(None), slice(None), *sl)]
            wt = w[(slice(g * og, (g + 1) * og), slice(None), *tap)]
            out[:, g * og : (g + 1) * og] += np.einsum("nc...,oc->no...", patch, wt)
    return out


def _conv_transpose_ref(x, w, stride, pad, dil, groups, out_pad):
    """Transposed N-d convolution (weight I, O/groups, k...) by scattering each input."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    r = x.ndim - 2
    cin, og = w.shape[:2]
    k = w.shape[2:]
    cg = cin // groups
    full = [
        (x.shape[2 + i] - 1) * stride[i] + (k[i] - 1) * dil[i] + 1 + out_pad[i] for i in range(r)
    ]
    buf = np.zeros((x.shape[0], og * groups, *full))
    for idx in itertools.product(*[range(n) for n in x.shape[2:]]):
        for tap in itertools.product(*[range(n) for n in k]):
            pos = tuple(idx[i] * stride[i] + tap[i] * dil[i] for i in range(r))
            for g in range(groups):
                xv = x[(slice(None), slice(g * cg, (g + 1) * cg), *idx)]  # (N, cg)
                wv = w[(slice(g * cg, (g + 1) * cg), slice(None), *tap)]  # (cg, og)
                buf[(slice(None), slice(g * og, (g + 1) * og), *pos)] += xv @ wv
    crop = tuple(slice(pad[i], full[i] - pad[i + r]) for i in range(r))
    return buf[(slice(None), slice(None), *crop)]


@pytest.mark.parametrize(
    "cin,cout,length,k,stride,pad,dil,groups",
    [(3, 8, 17, 3, 2, (1, 2), 1, 1), (6, 8, 13, 5, 1, (2, 2), 2, 2), (4, 4, 9, 3, 1, (1, 1), 1, 4)],
)
def test_conv1d(aot, tmp_path, cin, cout, length, k, stride, pad, dil, groups):
    x = relay.var("x", shape=(2, cin, length))
    w = _f32(cout, cin // groups, k)
    y = relay.nn.conv1d(x, relay.const(w), strides=stride, padding=pad, dilation=dil, groups=groups)
    data = _f32(2, cin, length)
    want = _conv_ref(data, w, (stride,), pad, (dil,), groups)
    (got,), *_ = aot(_model([x], y), None, [data], [(want.shape, "float32")], tmp_path)
    _close(got, want)


def test_conv1d_nwc(aot, tmp_path):
    x = relay.var("x", shape=(1, 11, 4))
    w = _f32(3, 4, 6)  # WIO
    y = relay.nn.conv1d(x, relay.const(w), strides=2, padding=(1, 0), data_layout="NWC",
                        kernel_layout="WIO")  # fmt: skip
    data = _f32(1, 11, 4)
    want = _conv_ref(data.transpose(0, 2, 1), w.transpose(2, 1, 0), (2,), (1, 0), (1,), 1)
    want = want.transpose(0, 2, 1)
    (got,), *_ = aot(_model([x], y), None, [data], [(want.shape, "float32")], tmp_path)
    _close(got, want)


def test_conv3d_groups_dilation_and_ndhwc(aot, tmp_path):
    x = relay.var("x", shape=(1, 4, 5, 7, 6))
    w1 = _f32(6, 2, 3, 2, 3)
    c1 = relay.nn.conv3d(x, relay.const(w1), strides=(1, 2, 1), padding=(1, 0, 1, 1, 1, 0),
                         dilation=(1, 1, 2), groups=2)  # fmt: skip
    data = _f32(1, 4, 5, 7, 6)
    want1 = _conv_ref(data, w1, (1, 2, 1), (1, 0, 1, 1, 1, 0), (1, 1, 2), 2)
    (got,), *_ = aot(_model([x], c1), None, [data], [(want1.shape, "float32")], tmp_path)
    _close(got, want1)

    xn = relay.var("x", shape=(1, 5, 7, 6, 4))
    w2 = _f32(3, 3, 3, 4, 5)  # DHWIO
    c2 = relay.nn.conv3d(xn, relay.const(w2), padding=(1, 1, 1), data_layout="NDHWC",
                         kernel_layout="DHWIO")  # fmt: skip
    data2 = data.transpose(0, 2, 3, 4, 1).copy()
    want2 = _conv_ref(data, w2.transpose(4, 3, 0, 1, 2), (1, 1, 1), (1,) * 6, (1, 1, 1), 1)
    want2 = want2.transpose(0, 2, 3, 4, 1)
    (got2,), *_ = aot(
        _model([xn], c2), None, [data2], [(want2.shape, "float32")], _sub(tmp_path, "b")
    )
    _close(got2, want2)


@pytest.mark.parametrize(
    "rank,stride,pad,dil,groups,out_pad",
    [
        (2, (2, 2), (1, 1, 1, 1), (1, 1), 1, (1, 1)),
        (2, (3, 1), (0, 2, 1, 0), (1, 2), 2, (2, 0)),
        (1, (2,), (1, 2), (1,), 1, (1,)),
        (1, (1,), (0, 0), (2,), 3, (0,)),
        (3, (2, 1, 2), (1, 0, 0, 0, 1, 1), (1, 1, 1), 1, (1, 0, 0)),
    ],
)
def test_conv_transpose(aot, tmp_path, rank, stride, pad, dil, groups, out_pad):
    cin, og = 6, 2
    spatial = {1: (9,), 2: (5, 7), 3: (3, 4, 5)}[rank]
    ksz = {1: (3,), 2: (3, 2), 3: (2, 3, 3)}[rank]
    x = relay.var("x", shape=(2, cin, *spatial))
    w = _f32(cin, og, *ksz)
    fn = {1: relay.nn.conv1d_transpose, 2: relay.nn.conv2d_transpose,
          3: relay.nn.conv3d_transpose}[rank]  # fmt: skip
    y = fn(x, relay.const(w), strides=stride, padding=pad, dilation=dil, groups=groups,
           output_padding=out_pad, channels=og * groups, kernel_size=ksz)  # fmt: skip
    data = _f32(2, cin, *spatial)
    want = _conv_transpose_ref(data, w, stride, pad, dil, groups, out_pad)
    (got,), *_ = aot(_model([x], y), None, [data], [(want.shape, "float32")], tmp_path)
    _close(got, want)


def _pool_ref(x, k, s, pad, dil, kind, include_pad=False, out=None):
    """N-d pooling (NC...) in float64, by enumerating each window."""
    x = x.astype(np.float64)
    r = x.ndim - 2
    n = x.shape[2:]
    if out is None:
        out = [(n[i] + pad[i] + pad[i + r] - dil[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(r)]
    res = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*[range(v) for v in out]):
        vals, count = [], 0
        for tap in itertools.product(*[range(v) for v in k]):
            pos = [o[i] * s[i] - pad[i] + tap[i] * dil[i] for i in range(r)]
            inside = all(0 <= pos[i] < n[i] for i in range(r))
            padded = all(-pad[i] <= pos[i] < n[i] + pad[i + r] for i in range(r))
            if inside:
                vals.append(x[(slice(None), slice(None), *pos)])
            count += inside or (include_pad and padded)
        stack = np.stack(vals)
        res[(slice(None), slice(None), *o)] = (
            stack.max(0) if kind == "max" else stack.sum(0) / count
        )
    return res


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("include_pad", [False, True])
def test_pool1d_and_pool3d(aot, tmp_path, kind, include_pad):
    x1 = relay.var("x", shape=(2, 3, 13))
    f1 = relay.nn.max_pool1d if kind == "max" else relay.nn.avg_pool1d
    kw = {} if kind == "max" else {"count_include_pad": include_pad}
    y1 = f1(x1, pool_size=3, strides=2, padding=(1, 2), dilation=2, **kw)
    d1 = _f32(2, 3, 13)
    want1 = _pool_ref(d1, (3,), (2,), (1, 2), (2,), kind, include_pad)
    (got1,), *_ = aot(_model([x1], y1), None, [d1], [(want1.shape, "float32")], tmp_path)
    _close(got1, want1)

    x3 = relay.var("x", shape=(1, 2, 5, 6, 7))
    f3 = relay.nn.max_pool3d if kind == "max" else relay.nn.avg_pool3d
    y3 = f3(x3, pool_size=(2, 3, 2), strides=(1, 2, 2), padding=(1, 1, 0, 0, 1, 1), **kw)
    d3 = _f32(1, 2, 5, 6, 7)
    want3 = _pool_ref(d3, (2, 3, 2), (1, 2, 2), (1, 1, 0, 0, 1, 1), (1, 1, 1), kind, include_pad)
    (got3,), *_ = aot(_model([x3], y3), None, [d3], [(want3.shape, "float32")], _sub(tmp_path, "b"))
    _close(got3, want3)


def _adaptive_ref(x, out, kind):
    r = x.ndim - 2
    n = x.shape[2:]
    res = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*[range(v) for v in out]):
        sl = tuple(
            slice((o[i] * n[i]) // out[i], -((-(o[i] + 1) * n[i]) // out[i])) for i in range(r)
        )
        win = x[(slice(None), slice(None), *sl)].astype(np.float64)
        axes = tuple(range(2, 2 + r))
        res[(slice(None), slice(None), *o)] = win.max(axes) if kind == "max" else win.mean(axes)
    return res


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_adaptive_and_global_pools(aot, tmp_path, kind):
    x = relay.var("x", shape=(1, 3, 7, 10))
    d = _f32(1, 3, 7, 10)
    f2 = getattr(relay.nn, f"adaptive_{kind}_pool2d")
    y = f2(x, output_size=(3, 4))
    want = _adaptive_ref(d, (3, 4), kind)
    (got,), *_ = aot(_model([x], y), None, [d], [(want.shape, "float32")], tmp_path)
    _close(got, want)

    x1 = relay.var("x", shape=(2, 3, 11))
    d1 = _f32(2, 3, 11)
    y1 = relay.Tuple([getattr(relay.nn, f"adaptive_{kind}_pool1d")(x1, output_size=4),
                      getattr(relay.nn, f"global_{kind}_pool1d")(x1)])  # fmt: skip
    outs = [((2, 3, 4), "float32"), ((2, 3, 1), "float32")]
    (g4, g1), *_ = aot(_model([x1], y1), None, [d1], outs, _sub(tmp_path, "b"))
    _close(g4, _adaptive_ref(d1, (4,), kind))
    _close(g1, _adaptive_ref(d1, (1,), kind))

    x3 = relay.var("x", shape=(1, 2, 5, 6, 7))
    d3 = _f32(1, 2, 5, 6, 7)
    y3 = getattr(relay.nn, f"adaptive_{kind}_pool3d")(x3, output_size=(2, 3, 4))
    want3 = _adaptive_ref(d3, (2, 3, 4), kind)
    (got3,), *_ = aot(_model([x3], y3), None, [d3], [(want3.shape, "float32")], _sub(tmp_path, "c"))
    _close(got3, want3)


def _linear_axis(n_in, n_out, mode):
    """(n_out, n_in) linear interpolation matrix of one axis, written out."""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        if mode == "align_corners":
            src = o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        elif mode == "asymmetric":
            src = o * n_in / n_out
        else:  # half_pixel
            src = (o + 0.5) * n_in / n_out - 0.5
        src = min(max(src, 0.0), n_in - 1)
        lo = int(np.floor(src))
        hi = min(lo + 1, n_in - 1)
        m[o, lo] += 1 - (src - lo)
        m[o, hi] += src - lo
    return m


def _nearest_axis(n_in, n_out):
    """asymmetric coordinates, floor rounding (TVM's default for nearest)."""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        m[o, min(int(np.floor(o * n_in / n_out)), n_in - 1)] = 1
    return m


@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric"])
def test_resize2d_linear_and_nearest(aot, tmp_path, mode):
    x = relay.var("x", shape=(1, 3, 5, 7))
    d = _f32(1, 3, 5, 7)
    lin = relay.image.resize2d(x, (9, 4), method="linear", coordinate_transformation_mode=mode)
    near = relay.image.resize2d(x, (8, 11), method="nearest_neighbor",
                                coordinate_transformation_mode="asymmetric")  # fmt: skip
    outs = [((1, 3, 9, 4), "float32"), ((1, 3, 8, 11), "float32")]
    (g1, g2), *_ = aot(_model([x], relay.Tuple([lin, near])), None, [d], outs, tmp_path)
    dd = d.astype(np.float64)
    want1 = np.einsum("ih,jw,nchw->ncij", _linear_axis(5, 9, mode), _linear_axis(7, 4, mode), dd)
    want2 = np.einsum("ih,jw,nchw->ncij", _nearest_axis(5, 8), _nearest_axis(7, 11), dd)
    _close(g1, want1)
    _close(g2, want2)


def test_resize1d_resize3d_and_upsampling(aot, tmp_path):
    x1 = relay.var("x", shape=(2, 3, 6))
    d1 = _f32(2, 3, 6)
    y1 = relay.image.resize1d(x1, (10,), method="linear")
    (g1,), *_ = aot(_model([x1], y1), None, [d1], [((2, 3, 10), "float32")], tmp_path)
    _close(g1, np.einsum("iw,ncw->nci", _linear_axis(6, 10, "half_pixel"), d1.astype(np.float64)))

    x3 = relay.var("x", shape=(1, 2, 3, 4, 5))
    d3 = _f32(1, 2, 3, 4, 5)
    y3 = relay.image.resize3d(x3, (5, 3, 7), method="linear",
                              coordinate_transformation_mode="align_corners")  # fmt: skip
    (g3,), *_ = aot(
        _model([x3], y3), None, [d3], [((1, 2, 5, 3, 7), "float32")], _sub(tmp_path, "b")
    )
    ax = [_linear_axis(n, m, "align_corners") for n, m in ((3, 5), (4, 3), (5, 7))]
    _close(g3, np.einsum("ad,bh,cw,nkdhw->nkabc", *ax, d3.astype(np.float64)))

    x = relay.var("x", shape=(1, 2, 3, 5))
    d = _f32(1, 2, 3, 5)
    up_n = relay.nn.upsampling(x, scale_h=2, scale_w=3)
    up_b = relay.nn.upsampling(x, scale_h=2, scale_w=2, method="bilinear", align_corners=True)
    outs = [((1, 2, 6, 15), "float32"), ((1, 2, 6, 10), "float32")]
    (gn, gb), *_ = aot(_model([x], relay.Tuple([up_n, up_b])), None, [d], outs, _sub(tmp_path, "c"))
    _close(gn, d.astype(np.float64).repeat(2, axis=2).repeat(3, axis=3))
    ab = [_linear_axis(3, 6, "align_corners"), _linear_axis(5, 10, "align_corners")]
    _close(gb, np.einsum("ih,jw,nchw->ncij", *ab, d.astype(np.float64)))


def test_arg_reductions_sorts_and_topk(aot, tmp_path):
    x = relay.var("x", shape=(3, 7, 5))
    d = _f32(3, 7, 5)
    d[1, 2, :] = d[1, 4, :]  # ties: the lower index wins (stable order)
    dd = d.astype(np.float64)
    outs = relay.Tuple([
        relay.argmax(x, axis=1), relay.argmin(x, axis=[0, 2], keepdims=True),
        relay.sort(x, axis=1), relay.argsort(x, axis=1, is_ascend=False),
        relay.topk(x, k=3, axis=1, ret_type="both"), relay.topk(x, k=2, axis=-1, is_ascend=True,
                                                                ret_type="indices"),
    ])  # fmt: skip
    types = [((3, 5), "int32"), ((1, 7, 1), "int32"), ((3, 7, 5), "float32"),
             ((3, 7, 5), "int32"), ((3, 3, 5), "float32"), ((3, 3, 5), "int32"),
             ((3, 7, 2), "int32")]  # fmt: skip
    got, *_ = aot(_model([x], outs), None, [d], types, tmp_path)
    _close(got[0], np.argmax(dd, axis=1).astype("int32"))
    flat = dd.transpose(1, 0, 2).reshape(7, -1)
    _close(got[1], np.argmin(flat, axis=1).astype("int32").reshape(1, 7, 1))
    _close(got[2], np.sort(dd, axis=1))
    desc = np.argsort(-dd, axis=1, kind="stable").astype("int32")
    _close(got[3], desc)
    _close(got[4], np.take_along_axis(dd, desc[:, :3], axis=1))
    _close(got[5], desc[:, :3])
    _close(got[6], np.argsort(dd, axis=-1, kind="stable")[..., :2].astype("int32"))


#: Operators the graph executor runs that the ahead-of-time C cannot lower yet. Dynamic
#: (``dyn.*``), random and ``qnn.*`` operators are left out: ahead-of-time builds are
#: static, random operators have no deterministic C, and QNN is canonicalised to integer
#: Relay before lowering. ``nn.batch_norm``/``nn.dropout`` are rewritten away by
#: SimplifyInference; annotations by the build's passes.
KNOWN_GAPS = {
    "adv_index", "annotation.cast_hint", "annotation.checkpoint", "annotation.compiler_begin",
    "annotation.compiler_end", "argwhere", "debug", "det", "device_copy",
    "fixed_point_multiply", "image.affine_grid", "image.crop_and_resize", "image.dilation2d",
    "image.grid_sample", "ml.tfidf_vectorizer", "nn.batch_norm",
    "nn.contrib_conv2d_NCHWc", "nn.cross_entropy", "nn.cross_entropy_with_logits",
    "memory.alloc_storage", "memory.alloc_tensor", "memory.kill", "nn.deformable_conv2d",
    "nn.dropout", "vm.reshape_tensor", "vm.shape_of",  # the VM's memory dialect
    "on_device", "reinterpret", "relay.op.annotation.simulated_quantize",
    "segment_sum", "sparse_fill_empty_rows",
    "sparse_reshape", "sparse_to_dense", "stft", "strided_set", "unique",
    "vision.all_class_non_max_suppression", "vision.get_valid_counts", "vision.multibox_prior",
    "vision.multibox_transform_loc", "vision.non_max_suppression", "vision.roi_align",
    "vision.roi_pool",
    # training-only gradient operators, sparse kernels, and the newest tensor helpers
    "nn.avg_pool2d_grad", "nn.conv2d_backward_weight", "nn.max_pool2d_grad", "nn.nll_loss",
    "nn.sparse_conv2d", "nn.sparse_dense", "matrix_set_diag", "sequence_mask",
}  # fmt: skip


def test_operators_without_c_lowering_are_the_known_gaps():
    runnable = {
        n
        for n in default_registry.ops_with_attr("FCompute")
        if not n.startswith(("dyn.", "random.", "qnn."))
    }
    missing = {n for n in runnable if n not in c_emitters}
    assert missing - KNOWN_GAPS == set(), "new operators without C: add a lowering"
    assert KNOWN_GAPS - missing == set(), "these gained a C lowering: drop them from the list"


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_depthwise_weight_with_a_channel_multiplier(aot, tmp_path, rank):
    # TVM's (C, M, *K) weight for groups == C: filter c*M + m is weight[c, m]
    c, mult = 4, 3
    size = (7, 6, 5)[:rank]
    x = relay.var("x", shape=(1, c, *size))
    w = _f32(c, mult, *(3,) * rank)
    conv = {1: relay.nn.conv1d, 2: relay.nn.conv2d, 3: relay.nn.conv3d}[rank]
    y = conv(x, relay.const(w), groups=c, channels=c * mult, kernel_size=(3,) * rank, padding=1)
    data = _f32(1, c, *size)
    grouped = w.reshape(c * mult, 1, *w.shape[2:])
    want = _conv_ref(data, grouped, (1,) * rank, (1,) * (2 * rank), (1,) * rank, c)
    (got,), *_ = aot(_model([x], y), None, [data], [(want.shape, "float32")], tmp_path)
    _close(got, want)


@pytest.mark.parametrize(("op", "axis"), [("instance", 1), ("instance", 3), ("group", 1)])
def test_instance_and_group_norm(aot, tmp_path, op, axis):
    shape = (2, 4, 3, 5) if axis == 1 else (2, 3, 5, 4)
    c, groups = 4, 2 if op == "group" else 4
    x = relay.var("x", shape=shape)
    gv, bv = _f32(c), _f32(c)
    g, b = relay.const(gv), relay.const(bv)
    if op == "group":
        y = relay.nn.group_norm(x, g, b, num_groups=groups, axis=axis, epsilon=1e-3)
    else:
        y = relay.nn.instance_norm(x, g, b, axis=axis, epsilon=1e-3)
    data = _f32(*shape)
    xm = np.moveaxis(data.astype(np.float64), axis, 1).reshape(2, groups, -1)
    norm = (xm - xm.mean(axis=2, keepdims=True)) / np.sqrt(xm.var(axis=2, keepdims=True) + 1e-3)
    norm = np.moveaxis(norm.reshape(np.moveaxis(data, axis, 1).shape), 1, axis)
    bshape = [1] * 4
    bshape[axis] = c
    want = norm * gv.reshape(bshape) + bv.reshape(bshape)
    (got,), *_ = aot(_model([x], y), None, [data], [(want.shape, "float32")], tmp_path)
    _close(got, want)
