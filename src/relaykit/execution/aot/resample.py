"""C emitters of resizing: ``image.resize`` (N-d), ``image.resize1d/2d/3d``,
``nn.upsampling`` and ``nn.upsampling3d``.

Resizing is separable: each output coordinate of a resized axis reads a few input
coordinates with fixed weights (nearest: one, linear: two, cubic: four). Those taps
are computed at build time by the operator's own per-axis interpolation
(:func:`relaykit.op.image.axis_weights`) and written as constant tables; the kernel
sums the products of the taps of every resized axis. Extrapolated coordinates
(``tf_crop_and_resize``) read ``extrapolation_value``.
"""

from __future__ import annotations

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.op.image.resize import axis_weights, resize_nd_attrs
from relaykit.op.nn.upsampling import upsampling_resize_attrs

from .emit import KernelContext, c_float, contiguous_strides, register_c_emitter

__all__: list[str] = []


def _nd_attrs(ctx: KernelContext) -> Attrs:
    """The N-d ``image.resize`` attributes of this call (every axis has a size)."""
    x, o = ctx.ins[0], ctx.outs[0]
    name = ctx.node.name
    if name == "image.resize":
        return ctx.attrs
    rank = len(x.shape) - 2
    attrs = ctx.attrs
    if name.startswith("nn.upsampling"):
        attrs = upsampling_resize_attrs(attrs, o.shape, rank)
    return resize_nd_attrs(attrs, x.shape, rank)


@register_c_emitter(
    "image.resize",
    "image.resize1d",
    "image.resize2d",
    "image.resize3d",
    "nn.upsampling",
    "nn.upsampling3d",
)
def _resize(ctx: KernelContext) -> None:
    x, o = ctx.ins[0], ctx.outs[0]
    nd = _nd_attrs(ctx)
    r = len(x.shape)
    size = [int(v) for v in nd["size"]]
    if size != list(o.shape):
        raise ctx.error(f"resize to {size} for an output of shape {list(o.shape)}")
    scales = nd["scales"] or tuple(
        (n_out / n_in if n_in else 1.0) for n_out, n_in in zip(size, x.shape, strict=True)
    )
    roi = nd["roi"] or ()
    xs = contiguous_strides(x.shape)
    taps: dict[int, tuple[str, str, int]] = {}  # axis -> (index table, weight table, taps)
    masks: list[str] = []
    for axis in range(r):
        n_in, n_out = x.shape[axis], size[axis]
        axis_roi = (float(roi[axis]), float(roi[axis + r])) if roi else (0.0, 1.0)
        if n_in == n_out and np.isclose(scales[axis], 1.0) and axis_roi == (0.0, 1.0):
            continue
        w, extra = axis_weights(n_in, n_out, float(scales[axis]), axis_roi, nd)
        nnz = max(int(np.count_nonzero(w, axis=1).max()) if w.size else 1, 1)
        idx = np.zeros((n_out, nnz), dtype=np.int64)
        wt = np.zeros((n_out, nnz))
        for row in range(n_out):
            cols = np.flatnonzero(w[row])
            idx[row, : cols.size] = cols
            wt[row, : cols.size] = w[row, cols]
        ti = ctx.table("int32_t", idx.reshape(-1).tolist(), f"ix{axis}_")
        tw = ctx.float_table(wt.reshape(-1).tolist(), f"w{axis}_")
        taps[axis] = (ti, tw, nnz)
        if extra is not None and np.any(extra):
            tm = ctx.table("int32_t", np.asarray(extra, dtype=np.int64).tolist(), f"ex{axis}_")
            masks.append(f"{tm}[y{axis}]")
    os_ = contiguous_strides(o.shape)
    for a in range(r):
        ctx.line("  " * a + f"for (int64_t y{a} = 0; y{a} < {o.shape[a]}; ++y{a})")
    ind = "  " * r
    ctx.line(ind + "{")
    oi = " + ".join(f"y{a} * {os_[a]}" for a in range(r)) or "0"
    value = c_float(float(nd["extrapolation_value"]), "float64")
    if masks:
        ctx.line(
            ind + f"  if ({' || '.join(masks)}) {{ o0[{oi}] = ({o.ctype}){value}; continue; }}"
        )
    ctx.line(ind + "  double acc = 0;")
    depth = 1
    for a, (_, _, n) in taps.items():
        ctx.line(ind + "  " * depth + f"for (int64_t t{a} = 0; t{a} < {n}; ++t{a})")
    terms = []
    weight = []
    for a in range(r):
        if a in taps:
            ti, tw, n = taps[a]
            terms.append(f"{ti}[y{a} * {n} + t{a}] * {xs[a]}")
            weight.append(f"{tw}[y{a} * {n} + t{a}]")
        else:
            terms.append(f"y{a} * {xs[a]}")
    xi = " + ".join(terms) or "0"
    ctx.line(ind + "  " * depth + f"  acc += {' * '.join([*weight, f'(double)a0[{xi}]'])};")
    if o.dtype in ("float32", "float64"):
        ctx.line(ind + f"  o0[{oi}] = ({o.ctype})acc;")
    else:
        info = np.iinfo(o.dtype)
        ctx.line(ind + "  acc = nearbyint(acc);")
        ctx.line(ind + f"  if (acc < {int(info.min)}.0) acc = {int(info.min)}.0;")
        ctx.line(ind + f"  if (acc > {int(info.max)}.0) acc = {int(info.max)}.0;")
        ctx.line(ind + f"  o0[{oi}] = ({o.ctype})acc;")
    ctx.line(ind + "}")
