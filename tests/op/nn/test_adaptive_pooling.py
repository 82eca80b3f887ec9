"""Global and adaptive 1-D / 3-D pools against a NumPy loop over PyTorch's bin rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relaykit import relay


def _loop(x, sizes, reduce):
    """Adaptive pooling of the trailing axes of an NC... array, one output box at a time."""
    spatial = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(sizes))
    for idx in np.ndindex(*sizes):
        box = tuple(
            slice(math.floor(i * n / o), math.ceil((i + 1) * n / o))
            for i, n, o in zip(idx, spatial, sizes, strict=True)
        )
        out[(slice(None), slice(None), *idx)] = reduce(
            x[(slice(None), slice(None), *box)], axis=tuple(range(2, x.ndim))
        )
    return out


def _run(call, x, xd):
    return relay.create_executor("debug").evaluate(relay.Function([x], call))(xd).numpy()


@pytest.mark.parametrize("kind, reduce", [("max", np.max), ("avg", np.mean)])
def test_1d_pools(kind, reduce):
    xd = np.random.RandomState(0).rand(2, 3, 7).astype("float32")
    x = relay.var("x", shape=xd.shape)
    adaptive = getattr(relay.nn, f"adaptive_{kind}_pool1d")
    np.testing.assert_allclose(_run(adaptive(x, 3), x, xd), _loop(xd, (3,), reduce), rtol=1e-6)
    glob = getattr(relay.nn, f"global_{kind}_pool1d")
    np.testing.assert_allclose(_run(glob(x), x, xd), _loop(xd, (1,), reduce), rtol=1e-6)
    nwc = xd.transpose(0, 2, 1).copy()
    y = relay.var("y", shape=nwc.shape)
    got = _run(adaptive(y, 4, layout="NWC"), y, nwc)
    np.testing.assert_allclose(got, _loop(xd, (4,), reduce).transpose(0, 2, 1), rtol=1e-6)


@pytest.mark.parametrize("kind, reduce", [("max", np.max), ("avg", np.mean)])
def test_3d_pools_keep_none_axes(kind, reduce):
    xd = np.random.RandomState(1).rand(1, 2, 5, 4, 6).astype("float32")
    x = relay.var("x", shape=xd.shape)
    call = getattr(relay.nn, f"adaptive_{kind}_pool3d")(x, (2, None, 4))
    got = _run(call, x, xd)
    np.testing.assert_allclose(got, _loop(xd, (2, 4, 4), reduce), rtol=1e-6)
    typed = relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([x], call)))
    assert str(typed["main"].ret_type) == "Tensor[(1, 2, 2, 4, 4), float32]"


def test_pad_with_negative_widths_crops():
    xd = np.arange(4 * 6, dtype="float32").reshape(4, 6)
    x = relay.var("x", shape=xd.shape)
    got = _run(relay.nn.pad(x, ((-1, 2), (3, -2)), 9.0), x, xd)
    want = np.pad(xd[1:, :4], ((0, 2), (3, 0)), constant_values=9.0)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(Exception, match="crops more"):
        _run(relay.nn.pad(x, ((-3, -2), (0, 0))), x, xd)


@pytest.mark.parametrize("name", ["max_pool3d", "avg_pool3d"])
def test_pool3d_ndhwc_is_the_transposed_ncdhw(name):
    xd = np.random.RandomState(2).rand(1, 2, 5, 4, 6).astype("float32")
    x = relay.var("x", shape=xd.shape)
    y = relay.var("y", shape=(1, 5, 4, 6, 2))
    pool = getattr(relay.nn, name)
    want = _run(pool(x, pool_size=(2, 2, 2), padding=(1, 0, 1, 0, 1, 1)), x, xd)
    got = _run(
        pool(y, pool_size=(2, 2, 2), padding=(1, 0, 1, 0, 1, 1), layout="NDHWC"),
        y,
        xd.transpose(0, 2, 3, 4, 1).copy(),
    )
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 4, 1), rtol=1e-6)
