"""Sampling grids: ``image.grid_sample`` and ``image.affine_grid``.

``grid_sample`` samples an (N, C, *spatial) tensor at the normalised
coordinates of a grid (``nearest``, ``linear`` or ``cubic``; ``zeros``,
``border`` or ``reflection`` padding), in any number of spatial dimensions.

``affine_grid(data, target_shape)`` turns (N, 2, 3) affine matrices into an
(N, 2, H, W) sampling grid of normalised ``(x, y)`` coordinates, the input of
``grid_sample``: the output points are spread evenly over [-1, 1] (corners
included).

>>> from relaykit import relay
>>> theta = relay.var("theta", shape=(1, 2, 3))
>>> affine_grid(theta, (4, 5)).attrs.target_shape
[4, 5]
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op import _numeric as num
from relaykit.op._relations import FLOAT_DTYPES, differ, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

__all__ = ["affine_grid", "grid_sample"]


# -- grid_sample ----------------------------------------------------------------------------------

_GS_METHODS = ("nearest", "linear", "cubic")
_GS_PADDING = ("zeros", "border", "reflection")


def _grid_sample_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    grid = tensor_arg(arg_types, 1, "grid")
    r = data.ndim - 2
    if (
        r < 1
        or grid.ndim != data.ndim
        or differ(grid.shape[1], r)
        or differ(grid.shape[0], data.shape[0])
    ):
        raise TypeRelError(
            f"grid must be (N, {max(r, 1)}, *out_spatial) for data {data}, got {grid}"
        )
    if attrs.method not in _GS_METHODS:
        raise TypeRelError(f"grid_sample method must be one of {', '.join(_GS_METHODS)}")
    if attrs.padding_mode not in _GS_PADDING:
        raise TypeRelError(f"padding_mode must be one of {', '.join(_GS_PADDING)}")
    batch = data.shape[0] if isinstance(data.shape[0], int) else grid.shape[0]
    return TensorType((batch, data.shape[1], *grid.shape[2:]), data.dtype)


def _reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    span = hi - lo
    below = lo - x
    above = x - hi
    out = x.copy()
    for dist, start, end, mask in ((below, lo, hi, x < lo), (above, hi, lo, x > hi)):
        n = np.trunc(dist / span) if span else np.zeros_like(dist)
        rem = dist - n * span
        even = np.mod(n, 2) == 0
        sign = 1.0 if start == lo else -1.0
        moved = np.where(even, start + sign * rem, end - sign * rem)
        out = np.where(mask, moved, out)
    return out


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    a = -0.75

    def k(x: np.ndarray) -> np.ndarray:
        x = np.abs(x)
        return np.where(
            x <= 1,
            ((a + 2) * x - (a + 3)) * x * x + 1,
            np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0),
        )

    return [k(t + 1), k(t), k(1 - t), k(2 - t)]


def _grid_sample_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, grid = inputs
    n, c = data.shape[:2]
    dims = data.shape[2:]
    r = len(dims)
    align = bool(attrs.align_corners)
    pad = attrs.padding_mode
    xt = np.moveaxis(data, 1, -1).astype(np.float64)  # (N, *D, C)
    coords = []
    bounds = []
    for i, d in enumerate(dims):
        g = grid[:, r - 1 - i].astype(np.float64)  # grid's first coordinate is the last axis
        x = (g + 1) / 2 * (d - 1) if align else ((g + 1) * d - 1) / 2
        lo, hi = (0.0, d - 1.0) if align else (-0.5, d - 0.5)
        if attrs.method == "nearest":
            x = np.rint(x)
        if pad == "border" and attrs.method != "cubic":  # cubic clamps each tap instead
            x = np.where((x < lo) | (x > hi), np.clip(x, 0, d - 1), x)
        elif pad == "reflection":
            x = _reflect(x, lo, hi)
        coords.append(x)
        bounds.append((lo, hi))

    def fetch(idx: list[np.ndarray]) -> np.ndarray:
        valid = np.ones(idx[0].shape, dtype=bool)
        fixed = []
        for i, (ix, d) in enumerate(zip(idx, dims, strict=True)):
            if pad == "zeros":
                valid &= (ix >= 0) & (ix < d)
                ix = np.clip(ix, 0, d - 1)
            elif pad == "border":
                ix = np.clip(ix, 0, d - 1)
            else:
                ix = np.clip(np.trunc(_reflect(ix.astype(np.float64), *bounds[i])), 0, d - 1)
            fixed.append(ix.astype(np.int64))
        batch = np.arange(n).reshape((n,) + (1,) * (idx[0].ndim - 1))
        vals = xt[tuple([batch, *fixed])]
        return vals * valid[..., None]

    out: np.ndarray | float
    if attrs.method == "nearest":
        out = fetch([x.astype(np.int64) for x in coords])
    else:
        taps = []
        for x in coords:
            x0 = np.floor(x)
            t = x - x0
            if attrs.method == "linear":
                taps.append([(x0, 1 - t), (x0 + 1, t)])
            else:
                w = _cubic_weights(t)
                taps.append([(x0 + k - 1, w[k]) for k in range(4)])
        out = 0.0
        for combo in itertools.product(*taps):
            weight = np.prod([w for _, w in combo], axis=0)
            out = out + fetch([ix.astype(np.int64) for ix, _ in combo]) * weight[..., None]
    out = np.moveaxis(np.asarray(out), -1, 1)
    return num.as_out(out.reshape((n, c, *grid.shape[2:])), data.dtype)


define_op(
    "image.grid_sample",
    num_inputs=2,
    attrs={"method": "linear", "layout": "NCHW", "padding_mode": "zeros", "align_corners": True},
    attrs_type_key="relay.attrs.GridSampleAttrs",
    type_rel=_grid_sample_rel,
    compute=_grid_sample_kernel,
    pattern=OpPattern.OPAQUE,
    doc="Sample data at the normalised coordinates of grid.",
)


def grid_sample(
    data: Expr,
    grid: Expr,
    method: str = "bilinear",
    layout: str = "NCHW",
    padding_mode: str = "zeros",
    align_corners: bool = True,
) -> Call:
    """Sample ``data`` (N, C, *spatial) at ``grid`` (N, ndim, *out_spatial), whose
    coordinate axis lists x (the last spatial axis) first, normalised to [-1, 1]
    (TVM's layout; ``method`` ``bilinear``/``linear``, ``nearest``, ``bicubic``/``cubic``)."""
    method = {"bilinear": "linear", "bicubic": "cubic"}.get(method, method)
    return make_call(
        "image.grid_sample",
        [data, grid],
        method=method,
        layout=layout,
        padding_mode=padding_mode,
        align_corners=bool(align_corners),
    )


# -- affine_grid ----------------------------------------------------------------------------------


def _affine_grid_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if data.ndim != 3 or data.shape[1:] != (2, 3) or data.dtype not in FLOAT_DTYPES:
        raise TypeRelError(f"affine_grid needs float (N, 2, 3) affine matrices, got {data}")
    h, w = (int(v) for v in attrs.target_shape)
    return TensorType((data.shape[0], 2, h, w), data.dtype)


def _affine_grid_kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    theta = inputs[0].astype(np.float64)
    h, w = (int(v) for v in attrs.target_shape)
    ys = np.linspace(-1.0, 1.0, h) if h > 1 else np.array([-1.0])
    xs = np.linspace(-1.0, 1.0, w) if w > 1 else np.array([-1.0])
    yy, xx = np.meshgrid(ys, xs, indexing="ij")
    points = np.stack([xx.ravel(), yy.ravel(), np.ones(h * w)])  # (3, H*W)
    out = np.einsum("nij,jk->nik", theta, points).reshape(theta.shape[0], 2, h, w)
    return out.astype(inputs[0].dtype)


define_op(
    "image.affine_grid",
    num_inputs=1,
    attrs={"target_shape": (1, 1)},
    attrs_type_key="relay.attrs.AffineGridAttrs",
    type_rel=_affine_grid_rel,
    compute=_affine_grid_kernel,
    pattern=OpPattern.INJECTIVE,
    doc="Sampling grid of (N, 2, 3) affine transforms.",
)


def affine_grid(data: Expr, target_shape: Sequence[int]) -> Call:
    """The (N, 2, H, W) ``(x, y)`` grid of the affine maps ``data`` over ``target_shape``."""
    shape = tuple(int(v) for v in target_shape)
    if len(shape) != 2:
        raise TypeRelError(f"affine_grid target_shape must be (height, width), got {shape}")
    return make_call("image.affine_grid", [data], target_shape=shape)
