"""Layout rules of operators with a channel axis or a layout attribute: batch norm,
``nn.l2_normalize``, ``nn.prelu``, resizes, and the QNN operators whose scales and
zero points are per channel (``qnn.requantize``, ``qnn.add`` and the other binary ones,
``qnn.concatenate``, ``qnn.avg_pool2d``).

>>> from relaykit.ir.layout import Layout
>>> from relaykit.ir.attrs import Attrs
>>> out = batch_norm_layout(Attrs({"axis": 3}), [Layout("NCHW")] + [Layout("C")] * 4,
...                         [Layout("NHWC")] + [Layout(None)] * 4, [])
>>> str(out.input_layouts[0]), out.new_attrs.axis
('NCHW', 1)
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.layout import Layout
from relaykit.ir.types import TensorType, TupleType

from .axis_rules import concatenate_layout
from .infer import (
    BUILTIN_RULES,
    InferCorrectLayoutOutput,
    broadcast_layout,
    pool_layout,
    with_attrs,
)

__all__ = [
    "batch_norm_layout",
    "norm_layout",
    "l2_normalize_layout",
    "prelu_layout",
    "resize_layout",
    "requantize_layout",
    "qnn_binary_layout",
    "qnn_concatenate_layout",
    "simulated_quantize_layout",
    "roi_layout",
    "upsampling_layout",
]

_C = Layout("C")


def _letter(layout: Layout, i: int) -> str:
    return layout.axes[i][0]


def _norm(attrs: Any, new_in: list[Layout] | None, old_in: list[Layout]) -> tuple[Layout, Any]:
    ret = old_in[0]
    if new_in is not None and old_in[0].defined and new_in[0].defined:
        ndim = old_in[0].ndim
        letter = _letter(old_in[0], int(attrs.axis) % ndim)
        attrs = with_attrs(attrs, axis=new_in[0].index_of(letter))
        ret = new_in[0]
    return ret, attrs


def batch_norm_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """Data in the new layout, the axis following the channel; statistics in ``C``."""
    ret, attrs = _norm(attrs, new_in, old_in)
    return InferCorrectLayoutOutput([ret, _C, _C, _C, _C], [ret, _C, _C], attrs)


def norm_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """Layer and instance norm: as batch norm, with one output."""
    ret, attrs = _norm(attrs, new_in, old_in)
    return InferCorrectLayoutOutput([ret] + [_C] * (len(old_in) - 1), [ret], attrs)


def l2_normalize_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """The normalised axes renumbered for the new layout."""
    ret = old_in[0]
    if new_in is not None and old_in[0].defined and new_in[0].defined:
        axes = [new_in[0].index_of(_letter(old_in[0], int(a))) for a in attrs.axis]
        if -1 not in axes:
            ret = new_in[0]
            attrs = with_attrs(attrs, axis=axes)
    return InferCorrectLayoutOutput([ret], [ret], attrs)


def prelu_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """The slope axis follows the channel; the slopes are per channel."""
    ret = old_in[0]
    if new_in is not None and old_in[0].defined and new_in[0].defined:
        letter = _letter(old_in[0], int(attrs.axis) % old_in[0].ndim)
        idx = new_in[0].index_of(letter)
        if idx >= 0 and new_in[0].factor_of(letter) == -1:
            ret = new_in[0]
            attrs = with_attrs(attrs, axis=idx)
    return InferCorrectLayoutOutput([ret, _C], [ret], attrs)


def resize_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """A resize follows its input's layout."""
    if new_in is not None and new_in[0].defined and old_in[0].defined:
        new, old, raw = new_in[0], old_in[0], Layout(attrs.layout)
        if not new.equals(old) and raw.equals(old) and new.ndim == old.ndim:
            attrs = with_attrs(attrs, layout=new.name)
    lay = Layout(attrs.layout)
    return InferCorrectLayoutOutput([lay], [lay], attrs)


def _is_scalar(t: Any) -> bool:
    return isinstance(t, TensorType) and len(t.shape) == 0


def requantize_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """Data in the new layout (blocks kept only with scalar scales), ``axis`` following
    the channel; scales and zero points per channel."""
    if new_in is not None and old_in[0].defined and new_in[0].defined:
        ndim = len(types[0].shape)
        axis = int(attrs.axis)
        axis = ndim - 1 if axis == -1 else axis
        old_dim = _letter(old_in[0], axis)
        scalar = _is_scalar(types[1]) and _is_scalar(types[2])
        kept: list[tuple[str, int]] = []
        new_axis = axis
        for letter, factor in new_in[0].axes:
            if letter == old_dim:
                new_axis = len(kept)
            if not factor or scalar:
                kept.append((letter, factor))
        lay = Layout("".join(f"{f}{a}" if f else a for a, f in kept))
        return InferCorrectLayoutOutput(
            [lay, _C, _C, _C, _C], [lay], with_attrs(attrs, axis=new_axis)
        )
    return InferCorrectLayoutOutput([old_in[0], _C, _C, _C, _C], [old_in[0]], attrs)


def qnn_binary_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """As a broadcasting binary operator; scales and zero points per channel."""
    out = broadcast_layout(attrs, new_in[:2] if new_in is not None else None, old_in[:2], types[:2])
    return InferCorrectLayoutOutput(
        out.input_layouts + [_C] * (len(old_in) - 2), out.output_layouts, attrs
    )


def qnn_concatenate_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """As ``concatenate``; every scale and zero point per channel."""
    n = len(types[0].fields) if isinstance(types[0], TupleType) else 1
    out = concatenate_layout(
        attrs, new_in[:n] if new_in is not None else None, old_in[:n], [types[0]]
    )
    return InferCorrectLayoutOutput(
        out.input_layouts + [_C] * (len(old_in) - n), out.output_layouts, out.new_attrs
    )


def qnn_pool_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """As a pool; scales and zero points per channel."""
    out = pool_layout(attrs, new_in[:1] if new_in is not None else None, old_in[:1], types[:1])
    return InferCorrectLayoutOutput(
        out.input_layouts + [_C] * (len(old_in) - 1), out.output_layouts, out.new_attrs
    )


def simulated_quantize_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """Simulated quantization follows its data; scale and clip bounds are per channel."""
    ret = new_in[0] if new_in is not None else old_in[0]
    return InferCorrectLayoutOutput([ret, _C, _C, _C], [ret], attrs)


def roi_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """ROI align/pool: data in the ``layout`` attribute; the boxes as they are."""
    lay = Layout(attrs.layout)
    return InferCorrectLayoutOutput([lay, _ROIS], [lay], attrs)


def upsampling_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """Upsampling follows a new layout that keeps its spatial axes where they were,
    unsplit (blocked channels are fine)."""
    if new_in is not None and new_in[0].defined:
        new, raw = new_in[0], Layout(attrs.layout)
        same = all(
            new.index_of(a) == raw.index_of(a) and not new.contains(a.lower())
            for a in "DHW"
            if raw.contains(a)
        )
        if same:
            attrs = with_attrs(attrs, layout=new.name)
    lay = Layout(attrs.layout)
    return InferCorrectLayoutOutput([lay], [lay], attrs)


_ROIS = Layout("NR")
BUILTIN_RULES["nn.upsampling"] = upsampling_layout
BUILTIN_RULES["nn.upsampling3d"] = upsampling_layout  # (num_rois, 5) boxes: never moved
BUILTIN_RULES["relay.op.annotation.simulated_quantize"] = simulated_quantize_layout
BUILTIN_RULES["vision.roi_align"] = roi_layout
BUILTIN_RULES["vision.roi_pool"] = roi_layout
BUILTIN_RULES["nn.batch_norm"] = batch_norm_layout
BUILTIN_RULES["nn.layer_norm"] = norm_layout
BUILTIN_RULES["nn.instance_norm"] = norm_layout
BUILTIN_RULES["nn.l2_normalize"] = l2_normalize_layout
BUILTIN_RULES["nn.prelu"] = prelu_layout
for _n in ("image.resize1d", "image.resize2d"):
    BUILTIN_RULES[_n] = resize_layout
BUILTIN_RULES["qnn.requantize"] = requantize_layout
for _n in ("qnn.add", "qnn.subtract", "qnn.mul"):
    BUILTIN_RULES[_n] = qnn_binary_layout
BUILTIN_RULES["qnn.concatenate"] = qnn_concatenate_layout
BUILTIN_RULES["qnn.avg_pool2d"] = qnn_pool_layout
