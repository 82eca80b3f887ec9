"""Depthwise convolution on the host (the native kernel, and NumPy's stride phases and
shifted planes) against explicit loops in float64: strides, dilations, asymmetric padding,
channel multipliers, batches, and a layer big enough to be cut into blocks that run on
several threads."""

import contextlib

import numpy as np
import pytest

from relaykit.backends.host import conv as host_conv
from relaykit.backends.host import native as host_native
from relaykit.backends.host.kernels import Scratch, bind_kernel
from relaykit.ir.op import get_op
from relaykit.op.define import make_attrs
from relaykit.runtime.threads import get_policy

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True, params=["native", "numpy"])
def kernel_path(request):
    """Every test runs on the native kernel and on the NumPy fallback."""
    if request.param == "native":
        if host_conv.kernels() is None:
            pytest.skip("no C compiler: the native kernels are unavailable")
        ctx = contextlib.nullcontext()
    else:
        ctx = host_native.disabled()
    with ctx:
        yield request.param


def _reference(x, w, strides, pads, dilation):
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    mult = oc // c
    (sh, sw), (dh, dw) = strides, dilation
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype("f8"), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, oc, oh, ow))
    for o in range(oc):
        for i in range(kh):
            for j in range(kw):
                tap = xp[:, o // mult, i * dh : i * dh + (oh - 1) * sh + 1 : sh,
                         j * dw : j * dw + (ow - 1) * sw + 1 : sw]  # fmt: skip
                out[:, o] += w[o, 0, i, j] * tap
    return out


def _run(x, w, strides, pads, dilation, runs=2):
    c, oc = x.shape[1], w.shape[0]
    want = _reference(x, w, strides, pads, dilation)
    attrs = make_attrs(
        get_op("nn.conv2d"),
        dict(strides=strides, padding=pads, dilation=dilation, groups=c, channels=oc,
             kernel_size=w.shape[2:]),
    )  # fmt: skip
    out = np.full(want.shape, np.nan, "float32")
    measure = Scratch(None)
    bind_kernel("nn.conv2d", attrs, [x, w], [out], measure)
    arena = np.full(measure.peak + 64, 0xAB, np.uint8)  # garbage: pads must be rewritten
    run = bind_kernel("nn.conv2d", attrs, [x, w], [out], Scratch(arena))
    for _ in range(runs):
        run()
    return out, want


@pytest.mark.parametrize(
    "shape, k, strides, pads, dilation, mult",
    [
        ((1, 8, 9, 9), 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
        ((2, 5, 12, 10), 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
        ((1, 4, 11, 13), 3, (2, 1), (0, 1, 2, 0), (1, 1), 1),
        ((1, 3, 10, 10), 3, (1, 1), (2, 2, 2, 2), (2, 2), 2),
        ((1, 6, 17, 15), 5, (3, 2), (2, 1, 0, 3), (1, 2), 1),
        ((2, 3, 8, 8), 1, (2, 2), (0, 0, 0, 0), (1, 1), 3),
        ((1, 7, 7, 7), 3, (1, 1), (0, 0, 0, 0), (1, 1), 1),
        ((1, 2, 3, 4), 3, (1, 1), (4, 5, 3, 6), (1, 1), 1),  # outputs wholly in the padding
        ((1, 3, 1, 2), 3, (1, 1), (1, 1, 1, 1), (1, 1), 2),  # same-size 3x3, one row
        ((1, 3, 5, 1), 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),  # one column: the general path
        ((1, 3, 12, 13), 7, (2, 3), (3, 3, 3, 3), (1, 1), 1),
        ((1, 4, 16, 16), 3, (4, 4), (1, 1, 1, 1), (2, 3), 2),
    ],
)
def test_depthwise_matches_loops(shape, k, strides, pads, dilation, mult):
    x = RNG.standard_normal(shape).astype("float32")
    w = RNG.standard_normal((shape[1] * mult, 1, k, k)).astype("float32")
    got, want = _run(x, w, strides, pads, dilation)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_big_depthwise_in_blocks_on_threads(monkeypatch):
    policy = get_policy()
    state = policy.snapshot()
    policy.set_num_threads(2)
    monkeypatch.setattr(policy, "host_threads", lambda: 2)
    try:
        x = RNG.standard_normal((1, 96, 40, 40)).astype("float32")
        w = RNG.standard_normal((96, 1, 3, 3)).astype("float32")
        got, want = _run(x, w, (2, 2), (1, 1, 1, 1), (1, 1), runs=3)
    finally:
        policy.restore(state)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_depthwise_reads_weights_at_run_time():
    x = RNG.standard_normal((1, 4, 6, 6)).astype("float32")
    w = RNG.standard_normal((4, 1, 3, 3)).astype("float32")
    attrs = make_attrs(
        get_op("nn.conv2d"),
        dict(padding=(1, 1, 1, 1), groups=4, channels=4, kernel_size=(3, 3)),
    )
    out = np.empty((1, 4, 6, 6), "float32")
    measure = Scratch(None)
    bind_kernel("nn.conv2d", attrs, [x, w], [out], measure)
    run = bind_kernel(
        "nn.conv2d", attrs, [x, w], [out], Scratch(np.empty(measure.peak + 64, np.uint8))
    )
    w *= 2.0  # a weight buffer written by an earlier step
    x += 1.0
    run()
    want = _reference(x, w, (1, 1), (1, 1, 1, 1), (1, 1))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_depthwise_rewrites_its_padding_every_run(strides):
    """Other steps share the scratch arena: the zero borders of the phase planes are
    written on every run, not once."""
    x = RNG.standard_normal((1, 6, 9, 8)).astype("float32")
    w = RNG.standard_normal((6, 1, 3, 3)).astype("float32")
    attrs = make_attrs(
        get_op("nn.conv2d"),
        dict(strides=strides, padding=(1, 2, 2, 1), dilation=(1, 1), groups=6, channels=6,
             kernel_size=(3, 3)),
    )  # fmt: skip
    want = _reference(x, w, strides, (1, 2, 2, 1), (1, 1))
    out = np.full(want.shape, np.nan, "float32")
    measure = Scratch(None)
    bind_kernel("nn.conv2d", attrs, [x, w], [out], measure)
    arena = np.zeros(measure.peak + 64, np.uint8)
    run = bind_kernel("nn.conv2d", attrs, [x, w], [out], Scratch(arena))
    run()
    arena.fill(0xCD)  # another step used the arena meanwhile
    run()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
