"""``relay.op.dyn.image``: ``dyn.image.resize2d`` with a run-time output size, the N-d
``dyn.image.resize`` (ONNX Resize by run-time sizes or scales), and ONNX's ``Col2Im`` and
``AffineGrid`` with run-time shapes (``dyn.col2im``, ``dyn.affine_grid``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Constant, Expr
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, Type
from relaykit.op._relations import normalize_axis, resolve_dtype, tensor_arg
from relaykit.op.define import TypeRelError, make_call

from ._base import define_dyn_op, ints, shape_input, unknown

__all__ = ["resize2d"]

_RESIZE_ATTRS = {
    "layout": "NCHW",
    "method": "linear",
    "coordinate_transformation_mode": "half_pixel",
    "rounding_method": "",
    "cubic_alpha": -0.5,
    "cubic_exclude": 0,
    "extrapolation_value": 0.0,
    "out_dtype": "",
}


def _resize2d_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    if shape_input(arg_types, 1, "size") != 2:
        raise TypeRelError("size must hold two values (height, width)")
    layout = attrs.layout
    if data.ndim != 4 or sorted(layout) != sorted("NCHW"):
        raise TypeRelError(f"resize2d needs 4-D data in a layout like NCHW, got {data} {layout}")
    shape = list(data.shape)
    shape[layout.index("H")] = AnyDim()
    shape[layout.index("W")] = AnyDim()
    return TensorType(shape, resolve_dtype(attrs.out_dtype, data.dtype))


def _resize_convert(v: Sequence[Any], a: Attrs) -> tuple[list[Any], dict[str, Any]]:
    size = tuple(int(x) for x in np.asarray(v[1]).reshape(-1))
    roi = tuple(float(x) for x in np.asarray(v[2]).reshape(-1)) if len(v) > 2 else None
    attrs = {k: a[k] for k in _RESIZE_ATTRS}
    return [v[0]], {"size": size, "roi": roi or (0.0, 0.0, 0.0, 0.0), **attrs}


define_dyn_op(
    "dyn.image.resize2d",
    3,
    _resize2d_rel,
    static="image.resize2d",
    convert=_resize_convert,
    attrs=_RESIZE_ATTRS,
    value_inputs=(1, 2),
    doc="image.resize2d with a run-time (height, width) size and region of interest.",
)


def resize2d(
    data: Expr,
    size: Expr,
    roi: Any = None,
    layout: str = "NCHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "",
    cubic_alpha: float = -0.5,
    cubic_exclude: int = 0,
    extrapolation_value: float = 0.0,
    out_dtype: str = "",
) -> Call:
    """``data`` resized to the run-time ``size`` (two integers)."""
    if not isinstance(roi, Expr):
        roi = Constant(np.asarray(roi if roi is not None else (0.0,) * 4, dtype="float32"))
    return make_call(
        "dyn.image.resize2d",
        [data, size, roi],
        layout=layout,
        method=method,
        coordinate_transformation_mode=coordinate_transformation_mode,
        rounding_method=rounding_method,
        cubic_alpha=cubic_alpha,
        cubic_exclude=cubic_exclude,
        extrapolation_value=extrapolation_value,
        out_dtype=out_dtype,
    )


# -- N-d resize (ONNX Resize) ---------------------------------------------------------------------


def _resize_nd_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor_arg(arg_types, 0, "data")
    for i, what in ((1, "roi"), (2, "scales"), (3, "sizes")):
        tensor_arg(arg_types, i, what)
    return TensorType(unknown(data.ndim), data.dtype)


def resize_sizes(
    shape: Sequence[int],
    axes: Sequence[int],
    scales: np.ndarray,
    sizes: np.ndarray,
    policy: str = "stretch",
) -> tuple[list[int], list[float]]:
    """ONNX Resize's output sizes and per-axis scales from its ``scales`` or ``sizes``."""
    r = len(shape)
    full_scales = [1.0] * r
    full_sizes = list(shape)
    if sizes.size:
        for a, s in zip(axes, sizes.reshape(-1), strict=True):
            full_sizes[a] = int(s)
        full_scales = [o / i if i else 1.0 for o, i in zip(full_sizes, shape, strict=True)]
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(full_scales[a] for a in axes)
            full_scales = [s if i in axes else 1.0 for i in range(r)]
            full_sizes = [int(s * shape[i] + 0.5) if i in axes else shape[i] for i in range(r)]
    elif scales.size:
        for a, s in zip(axes, scales.reshape(-1), strict=True):
            full_scales[a] = float(s)
        full_sizes = [int(np.floor(d * s)) for d, s in zip(shape, full_scales, strict=True)]
    else:
        raise TypeRelError("resize needs either scales or sizes")
    return full_sizes, full_scales


def _resize_nd_convert(v: Sequence[Any], a: Attrs) -> tuple[list[Any], dict[str, Any]]:
    x = v[0]
    shape = tuple(int(d) for d in np.shape(x)) if isinstance(x, np.ndarray) else ()
    if not isinstance(x, np.ndarray):  # a fold (DynamicToStatic): the input's type knows it
        shape = tuple(int(d) for d in x.checked_type.shape)
    r = len(shape)
    axes = [normalize_axis(k, r, "resize axis") for k in a.axes] or list(range(r))
    sizes, scales = resize_sizes(
        shape, axes, np.asarray(v[2]), np.asarray(v[3]), a.keep_aspect_ratio_policy
    )
    roi = np.asarray(v[1]).reshape(-1)
    box: tuple[float, ...] = ()
    if a.coordinate_transformation_mode == "tf_crop_and_resize" and roi.size:
        lo, hi = [0.0] * r, [1.0] * r
        k = len(axes)
        for j, ax in enumerate(axes):
            lo[ax], hi[ax] = float(roi[j]), float(roi[j + k])
        box = tuple(lo + hi)
    return [x], {
        "size": tuple(sizes),
        "scales": tuple(scales),
        "roi": box,
        "method": a.method,
        "coordinate_transformation_mode": a.coordinate_transformation_mode,
        "rounding_method": a.rounding_method,
        "cubic_alpha": a.cubic_alpha,
        "cubic_exclude": a.cubic_exclude,
        "extrapolation_value": a.extrapolation_value,
        "antialias": a.antialias,
    }


define_dyn_op(
    "dyn.image.resize",
    4,
    _resize_nd_rel,
    static="image.resize",
    convert=_resize_nd_convert,
    attrs={
        "axes": (),
        "keep_aspect_ratio_policy": "stretch",
        "method": "linear",
        "coordinate_transformation_mode": "half_pixel",
        "rounding_method": "",
        "cubic_alpha": -0.75,
        "cubic_exclude": 0,
        "extrapolation_value": 0.0,
        "antialias": False,
    },
    value_inputs=(1, 2, 3),
    doc="N-d resize (ONNX Resize) to run-time sizes, or by run-time scales (empty sizes).",
)


def image_resize(
    data: Expr, roi: Expr, scales: Expr, sizes: Expr, **attrs: Any
) -> Call:  # pragma: no cover - thin
    """ONNX ``Resize`` of ``data`` with run-time ``roi``, ``scales`` and ``sizes`` (empty
    tensors for those not given)."""
    return make_call("dyn.image.resize", [data, roi, scales, sizes], **attrs)


# -- col2im and affine grids ----------------------------------------------------------------------


def col2im_ref(
    x: np.ndarray,
    image: Sequence[int],
    block: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
    strides: Sequence[int],
) -> np.ndarray:
    """ONNX ``Col2Im``: (N, C*prod(block), L) columns summed back into (N, C, *image)."""
    r = len(image)
    dil = tuple(dilations) or (1,) * r
    st = tuple(strides) or (1,) * r
    pd = tuple(pads) or (0,) * (2 * r)
    n, ck, length = x.shape
    k = int(np.prod(block))
    c = ck // k
    counts = [
        (image[i] + pd[i] + pd[r + i] - dil[i] * (block[i] - 1) - 1) // st[i] + 1 for i in range(r)
    ]
    if int(np.prod(counts)) != length:
        raise TypeRelError(f"input has {length} blocks, the geometry gives {np.prod(counts)}")
    cols = x.reshape(n, c, k, length)
    out = np.zeros((n, c, *image), dtype=x.dtype)
    for kk, offs in enumerate(np.ndindex(*block)):
        for ll, pos in enumerate(np.ndindex(*counts)):
            pixel = tuple(pos[i] * st[i] - pd[i] + offs[i] * dil[i] for i in range(r))
            if all(0 <= pixel[i] < image[i] for i in range(r)):
                index = (slice(None), slice(None), *pixel)
                out[index] += cols[:, :, kk, ll]
    return out


def _col2im_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    x = tensor_arg(arg_types, 0, "data")
    r = shape_input(arg_types, 1, "image_shape")
    shape_input(arg_types, 2, "block_shape")
    return TensorType((x.shape[0], AnyDim(), *unknown(r)), x.dtype)


define_dyn_op(
    "dyn.col2im",
    3,
    _col2im_rel,
    kernel=lambda ins, attrs: col2im_ref(
        np.asarray(ins[0]),
        ints(ins[1]),
        ints(ins[2]),
        attrs.dilations,
        attrs.pads,
        attrs.strides,
    ),
    attrs={"dilations": (), "pads": (), "strides": ()},
    doc="ONNX Col2Im with a run-time image shape and block shape.",
)


def col2im(
    data: Expr,
    image_shape: Expr,
    block_shape: Expr,
    dilations: Sequence[int] = (),
    pads: Sequence[int] = (),
    strides: Sequence[int] = (),
) -> Call:
    """ONNX ``Col2Im`` with run-time ``image_shape`` and ``block_shape``."""
    return make_call(
        "dyn.col2im",
        [data, image_shape, block_shape],
        dilations=tuple(int(v) for v in dilations),
        pads=tuple(int(v) for v in pads),
        strides=tuple(int(v) for v in strides),
    )


def affine_base_grid(spatial: Sequence[int], align_corners: bool) -> np.ndarray:
    """The (P, r + 1) homogeneous normalised coordinates (x first, then a column of ones)
    of every point of a grid of ``spatial`` sizes, as ONNX ``AffineGrid`` places them."""
    axes = []
    for d in spatial:
        if align_corners:
            axes.append(np.linspace(-1.0, 1.0, d) if d > 1 else np.zeros(1))
        else:
            axes.append((2 * np.arange(d) + 1) / d - 1)
    mesh = np.meshgrid(*axes, indexing="ij")  # per spatial axis, in (D,) H, W order
    coords = [m.reshape(-1) for m in reversed(mesh)]  # x first, as the grid stores it
    return np.stack([*coords, np.ones_like(coords[0])], axis=1)


def affine_grid_ref(theta: np.ndarray, size: Sequence[int], align_corners: bool) -> np.ndarray:
    """ONNX ``AffineGrid``: the (N, *spatial, r) sampling grid of the affine maps
    ``theta`` (N, r, r + 1) over normalised coordinates of the spatial sizes."""
    n, spatial = size[0], size[2:]
    base = affine_base_grid(spatial, align_corners)
    grid = np.einsum("pk,nrk->npr", base, theta.astype(np.float64))
    return grid.reshape(n, *spatial, len(spatial)).astype(theta.dtype)


def _affine_grid_rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
    theta = tensor_arg(arg_types, 0, "theta")
    m = shape_input(arg_types, 1, "size")
    return TensorType((*unknown(m - 1), m - 2), theta.dtype)


define_dyn_op(
    "dyn.affine_grid",
    2,
    _affine_grid_rel,
    kernel=lambda ins, attrs: affine_grid_ref(
        np.asarray(ins[0]), ints(ins[1]), bool(attrs.align_corners)
    ),
    attrs={"align_corners": False},
    doc="ONNX AffineGrid for a run-time output size (N, C, spatial...).",
)


def affine_grid(theta: Expr, size: Expr, align_corners: bool = False) -> Call:
    """ONNX ``AffineGrid`` of ``theta`` over the run-time ``size``."""
    return make_call("dyn.affine_grid", [theta, size], align_corners=bool(align_corners))
