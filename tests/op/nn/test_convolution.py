"""nn.conv2d and nn.conv2d_transpose against naive loops."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from relaykit import op
from relaykit.ir import TensorType
from relaykit.op import TypeRelError, nn


def naive_conv2d(x, w, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """NCHW x OIHW convolution by explicit loops over every output and tap."""
    n, _c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    pt, pl, pb, pr = padding
    sh, sw = strides
    dh, dw = dilation
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for b, f, i, j in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = f // og
        acc = 0.0
        for ci, a, e in itertools.product(range(cg), range(kh), range(kw)):
            y = i * sh + a * dh - pt
            z = j * sw + e * dw - pl
            if 0 <= y < h and 0 <= z < wd:
                acc += float(x[b, g * cg + ci, y, z]) * float(w[f, ci, a, e])
        out[b, f, i, j] = acc
    return out


def naive_conv2d_transpose(x, w, strides, padding, dilation, groups, output_padding):
    """Transposed convolution by scattering every input element (weight IOHW)."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = c // groups
    sh, sw = strides
    dh, dw = dilation
    pt, pl, pb, pr = padding
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + output_padding[0]
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + output_padding[1]
    full = np.zeros((n, og * groups, full_h, full_w))
    for b, ci, i, j, o, a, e in itertools.product(
        range(n), range(c), range(h), range(wd), range(og), range(kh), range(kw)
    ):
        g = ci // cg
        full[b, g * og + o, i * sh + a * dh, j * sw + e * dw] += x[b, ci, i, j] * w[ci, o, a, e]
    return full[:, :, pt : full_h - pb, pl : full_w - pr]


CONV_CASES = [
    # (data shape NCHW, weight shape OIHW, kwargs)
    ((1, 3, 7, 7), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 2), {"strides": (2, 2), "padding": 1}),
    ((1, 2, 8, 8), (3, 2, 3, 3), {"dilation": 2, "padding": (2, 1)}),
    ((1, 2, 6, 7), (2, 2, 2, 3), {"padding": (1, 0, 2, 1), "strides": (1, 2)}),
    ((1, 4, 6, 6), (6, 2, 3, 3), {"groups": 2, "padding": 1}),
    ((1, 4, 6, 6), (4, 1, 3, 3), {"groups": 4, "padding": 1, "strides": 2}),  # depthwise
    ((1, 3, 5, 5), (6, 1, 3, 3), {"groups": 3}),  # depthwise, multiplier 2
]


@pytest.mark.parametrize("dshape, wshape, kwargs", CONV_CASES)
def test_conv2d_nchw_against_loops(dshape, wshape, kwargs, run, tvar, rng):
    x = rng.standard_normal(dshape).astype("float32")
    w = rng.standard_normal(wshape).astype("float32")
    call = nn.conv2d(tvar("x", dshape), tvar("w", wshape), **kwargs)
    out = run(call, x, w)
    want = naive_conv2d(
        x, w, call.attrs.strides, call.attrs.padding, call.attrs.dilation, call.attrs.groups
    )
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dshape, wshape, kwargs", CONV_CASES[:2] + CONV_CASES[5:6])
def test_conv2d_nhwc_hwio_against_loops(dshape, wshape, kwargs, run, tvar, rng):
    x = rng.standard_normal(dshape).astype("float32")
    w = rng.standard_normal(wshape).astype("float32")
    xh = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    wh = np.ascontiguousarray(w.transpose(2, 3, 1, 0))
    call = nn.conv2d(
        tvar("x", xh.shape),
        tvar("w", wh.shape),
        data_layout="NHWC",
        kernel_layout="HWIO",
        **kwargs,
    )
    out = run(call, xh, wh)
    want = naive_conv2d(
        x, w, call.attrs.strides, call.attrs.padding, call.attrs.dilation, call.attrs.groups
    )
    np.testing.assert_allclose(out, want.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)


def test_conv2d_out_layout_and_int8(run, tvar, rng):
    x = rng.integers(-100, 100, size=(1, 2, 4, 4)).astype("int8")
    w = rng.integers(-100, 100, size=(3, 2, 2, 2)).astype("int8")
    call = nn.conv2d(
        tvar("x", x.shape, "int8"), tvar("w", w.shape, "int8"), out_dtype="int32", out_layout="NHWC"
    )
    out = run(call, x, w)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, naive_conv2d(x, w).transpose(0, 2, 3, 1).astype("int32"))


def test_conv2d_attrs_follow_tvm():
    from relaykit.ir import TensorType as T
    from relaykit.ir import Var

    call = nn.conv2d(
        Var("x", T((1, 3, 8, 8))),
        Var("w", T((8, 3, 3, 3))),
        strides=2,
        padding=1,
        kernel_size=3,
        channels=8,
    )
    assert call.attrs.type_key == "relay.attrs.Conv2DAttrs"
    assert list(call.attrs) == [
        "strides",
        "padding",
        "dilation",
        "groups",
        "channels",
        "kernel_size",
        "data_layout",
        "kernel_layout",
        "out_layout",
        "out_dtype",
    ]
    assert call.attrs.strides == (2, 2) and call.attrs.padding == (1, 1, 1, 1)
    assert call.attrs.kernel_size == (3, 3) and call.attrs.dilation == (1, 1)
    assert op.get("nn.conv2d").attrs_schema["padding"] == (0, 0)
    assert nn.get_pad_tuple2d((3, 1)) == (3, 1, 3, 1)


def test_conv2d_relation(rel, tvar):
    call = nn.conv2d(
        tvar("x", (2, 4, 9, 9)), tvar("w", (8, 2, 3, 3)), strides=2, padding=1, groups=2
    )
    assert rel(call) == TensorType((2, 8, 5, 5))
    nhwc = nn.conv2d(
        tvar("x", (1, 9, 9, 4)), tvar("w", (3, 3, 4, 8)), data_layout="NHWC", kernel_layout="HWIO"
    )
    assert rel(nhwc) == TensorType((1, 7, 7, 8))


@pytest.mark.parametrize(
    "dshape, wshape, kwargs, message",
    [
        ((1, 3, 8, 8), (4, 2, 3, 3), {}, r"3 input channels but the weight .* expects 2 per group"),
        ((1, 4, 8, 8), (3, 2, 3, 3), {"groups": 2}, "not divisible by groups=2"),
        ((1, 3, 8, 8), (4, 3, 3, 3), {"channels": 5}, "channels=5 but the weight"),
        ((1, 3, 8, 8), (4, 3, 3, 3), {"kernel_size": 5}, r"kernel_size=\(5, 5\)"),
        ((1, 3, 8), (4, 3, 3, 3), {}, "data must be a 4-D tensor in layout NCHW"),
        ((1, 3, 2, 2), (4, 3, 3, 3), {}, "larger than the padded input"),
        ((1, 3, 8, 8), (4, 3, 3, 3), {"data_layout": "NCWX"}, "unsupported layout 'NCWX'"),
    ],
)
def test_conv2d_relation_errors(dshape, wshape, kwargs, message, rel, tvar):
    with pytest.raises(TypeRelError, match=message):
        rel(nn.conv2d(tvar("x", dshape), tvar("w", wshape), **kwargs))


def test_conv2d_of_different_dtypes_takes_the_data_dtype_or_out_dtype(rel, tvar):
    # as TVM's relation: the weight's dtype does not have to be the data's
    half = rel(nn.conv2d(tvar("x", (1, 3, 8, 8)), tvar("w", (4, 3, 3, 3), "float16")))
    assert half == TensorType((1, 4, 6, 6), "float32")
    call = nn.conv2d(tvar("x", (1, 3, 8, 8), "uint8"), tvar("w", (4, 3, 3, 3), "int8"),
                     out_dtype="int32")  # fmt: skip
    assert rel(call) == TensorType((1, 4, 6, 6), "int32")


CONV_T_CASES = [
    ((1, 2, 4, 4), (2, 3, 3, 3), {}),
    ((1, 2, 4, 5), (2, 3, 3, 3), {"strides": 2, "padding": 1, "output_padding": 1}),
    ((2, 4, 3, 3), (4, 2, 2, 3), {"groups": 2, "strides": (2, 1), "padding": (0, 1)}),
    ((1, 2, 3, 3), (2, 1, 3, 3), {"dilation": 2, "padding": (1, 2, 0, 1)}),
]


@pytest.mark.parametrize("dshape, wshape, kwargs", CONV_T_CASES)
def test_conv2d_transpose_against_loops(dshape, wshape, kwargs, run, tvar, rng):
    x = rng.standard_normal(dshape).astype("float32")
    w = rng.standard_normal(wshape).astype("float32")
    call = nn.conv2d_transpose(tvar("x", dshape), tvar("w", wshape), **kwargs)
    out = run(call, x, w)
    a = call.attrs
    want = naive_conv2d_transpose(
        x, w, a.strides, a.padding, a.dilation, a.groups, a.output_padding
    )
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_conv2d_transpose_is_adjoint_of_conv2d(run, tvar, rng):
    # <conv2d(x, w), y> == <x, conv2d_transpose(y, w)>: an independent check of both kernels.
    x = rng.standard_normal((1, 4, 9, 9))
    w = rng.standard_normal((6, 2, 3, 3))  # OIHW for conv2d, groups=2
    kwargs = {"strides": 2, "padding": (1, 2, 0, 1), "dilation": 1, "groups": 2}
    y_call = nn.conv2d(tvar("x", x.shape, "float64"), tvar("w", w.shape, "float64"), **kwargs)
    y = run(y_call, x, w)
    r = rng.standard_normal(y.shape)
    # conv2d_transpose with groups takes weight (in=6, out/groups=2, kh, kw): same array, IOHW.
    t_call = nn.conv2d_transpose(
        tvar("r", r.shape, "float64"),
        tvar("w", w.shape, "float64"),
        **kwargs,
        output_padding=(1, 1),
    )
    xt = run(t_call, r, w)
    assert xt.shape == x.shape
    np.testing.assert_allclose(np.sum(y * r), np.sum(x * xt), rtol=1e-10)


def test_conv2d_transpose_relation_errors(rel, tvar):
    with pytest.raises(TypeRelError, match="output_padding"):
        x, w = tvar("x", (1, 2, 4, 4)), tvar("w", (2, 3, 3, 3))
        rel(nn.conv2d_transpose(x, w, output_padding=-1))
    with pytest.raises(TypeRelError, match="data has 3 input channels but the weight"):
        rel(nn.conv2d_transpose(tvar("x", (1, 3, 4, 4)), tvar("w", (2, 3, 3, 3))))
    assert op.get("nn.conv2d_transpose").attrs_schema["kernel_layout"] == "IOHW"
