"""relay.image.resize1d/2d/3d: TVM's argument order, layouts, methods and coordinate modes,
checked against a direct per-pixel computation written here."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import RelayTypeError


def _src(y: int, n_in: int, n_out: int, mode: str) -> float:
    scale = n_out / n_in
    if mode == "align_corners":
        return 0.0 if n_out == 1 else y * (n_in - 1) / (n_out - 1)
    if mode == "asymmetric":
        return y / scale
    return (y + 0.5) / scale - 0.5  # half_pixel


def _axis_1d(x: np.ndarray, n_out: int, method: str, mode: str) -> np.ndarray:
    """Resize the last axis of ``x`` one output position at a time."""
    n_in = x.shape[-1]
    out = np.empty((*x.shape[:-1], n_out))
    for y in range(n_out):
        s = _src(y, n_in, n_out, mode)
        if method == "nearest_neighbor":
            i = int(np.floor(s + 0.5)) if mode == "align_corners" else int(np.floor(s))
            out[..., y] = x[..., min(max(i, 0), n_in - 1)]
        else:
            lo = int(np.floor(s))
            t = s - lo
            a, b = min(max(lo, 0), n_in - 1), min(max(lo + 1, 0), n_in - 1)
            out[..., y] = (1 - t) * x[..., a] + t * x[..., b]
    return out


def _reference(x: np.ndarray, size: tuple[int, ...], layout: str, method: str, mode: str):
    out = x.astype(np.float64)
    for axis, n_out in zip([i for i, c in enumerate(layout) if c in "DHW"], size, strict=True):
        out = np.moveaxis(_axis_1d(np.moveaxis(out, axis, -1), n_out, method, mode), -1, axis)
    return out


CASES = [
    ("NCW", (2, 3, 5), (11,)),
    ("NWC", (2, 5, 3), (11,)),
    ("NCHW", (1, 2, 4, 5), (9, 7)),
    ("NHWC", (1, 4, 5, 2), (9, 7)),
    ("NCDHW", (1, 2, 3, 4, 2), (5, 6, 4)),
    ("NDHWC", (1, 3, 4, 2, 2), (5, 6, 4)),
]


@pytest.mark.parametrize("layout,shape,size", CASES)
@pytest.mark.parametrize("method", ["nearest_neighbor", "linear"])
@pytest.mark.parametrize("mode", ["asymmetric", "align_corners", "half_pixel"])
def test_resize_matches_direct_computation(layout, shape, size, method, mode):
    rank = len(size)
    x = np.random.default_rng(0).uniform(size=shape).astype("float32")
    v = relay.var("x", shape=shape)
    resize = getattr(relay.image, f"resize{rank}d")
    call = resize(v, size, None, layout, method, coordinate_transformation_mode=mode)
    assert "size=" in call.astext()
    out = relay.create_executor("graph").evaluate(relay.Function([v], call))(x).numpy()
    np.testing.assert_allclose(out, _reference(x, size, layout, method, mode), rtol=1e-5, atol=1e-6)


def test_resize2d_output_type_follows_layout():
    v = relay.var("x", shape=(1, 8, 8, 3))
    f = relay.Function([v], relay.image.resize2d(v, (16, 4), layout="NHWC"))
    out_type = relay.transform.InferType()(relay.IRModule.from_expr(f))["main"].ret_type
    assert out_type == relay.TensorType((1, 16, 4, 3), "float32")


def test_resize_rejects_unknown_layout_and_method():
    v = relay.var("x", shape=(1, 3, 8, 8))
    for call in (
        relay.image.resize2d(v, (4, 4), layout="HWCN"),
        relay.image.resize2d(v, (4, 4), method="bicubic"),
    ):
        with pytest.raises(RelayTypeError):
            relay.transform.InferType()(relay.IRModule.from_expr(call))
