"""layout_transform against element-by-element index arithmetic."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ArgumentError
from relaykit.op import TypeRelError


def test_nchw_to_nhwc_is_a_transpose(run, tvar):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype("float32")
    out = run(relay.layout_transform(tvar("x", x.shape), "NCHW", "NHWC"), x)
    for n, c, h, w in itertools.product(*map(range, x.shape)):
        assert out[n, h, w, c] == x[n, c, h, w]


def test_blocking_and_unblocking_channels(run, tvar):
    x = np.arange(2 * 8 * 3 * 2, dtype="float32").reshape(2, 8, 3, 2)
    blocked = run(relay.layout_transform(tvar("x", x.shape), "NCHW", "NCHW4c"), x)
    assert blocked.shape == (2, 2, 3, 2, 4)
    for n, c, h, w in itertools.product(*map(range, x.shape)):
        assert blocked[n, c // 4, h, w, c % 4] == x[n, c, h, w]
    back = run(relay.layout_transform(tvar("y", blocked.shape), "NCHW4c", "NHWC2c"), blocked)
    assert back.shape == (2, 3, 2, 4, 2)
    for n, c, h, w in itertools.product(*map(range, x.shape)):
        assert back[n, h, w, c // 2, c % 2] == x[n, c, h, w]


def test_bad_layouts_are_reported(rel, tvar):
    with pytest.raises(ArgumentError, match="layout"):
        relay.layout_transform(tvar("x", (1, 2)), "N2", "NC")
    with pytest.raises(TypeRelError, match="blocks of 4"):
        rel(relay.layout_transform(tvar("x", (1, 6, 2, 2)), "NCHW", "NCHW4c"))
    with pytest.raises(TypeRelError, match="same axes"):
        rel(relay.layout_transform(tvar("x", (1, 6, 2, 2)), "NCHW", "NCDW"))


def test_an_axis_blocked_twice_splits_most_significant_block_first() -> None:
    w = np.arange(128 * 64 * 3 * 3, dtype="float32").reshape(128, 64, 3, 3)
    x = relay.var("x", shape=w.shape)
    y = relay.layout_transform(x, "OIHW", "OHWI16i64o2i")
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    got = relay.create_executor("debug", mod=mod).evaluate()(w).numpy()
    assert got.shape == (2, 3, 3, 2, 16, 64, 2)
    # element (o, i, h, w) sits at [o // 64, h, w, i // 32, (i % 32) // 2, o % 64, i % 2]
    o, i, h, ww = np.meshgrid(*(np.arange(n) for n in w.shape), indexing="ij")
    want = np.empty_like(got)
    want[o // 64, h, ww, i // 32, (i % 32) // 2, o % 64, i % 2] = w
    np.testing.assert_array_equal(got, want)
