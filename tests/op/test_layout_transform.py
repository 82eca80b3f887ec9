"""layout_transform against element-by-element index arithmetic."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

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
