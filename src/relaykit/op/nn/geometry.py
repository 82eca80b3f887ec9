"""Spatial geometry of the ``nn.*`` operators: layouts, window attributes, output sizes.

The one public place for what the operators' relations and kernels, the host kernels
and the backends (ccompiler, dnnl) compute from a convolution's or a pooling's
attributes:

- layouts: :func:`layout_perm`, :func:`to_layout`, :func:`canonical_shape`, and for
  NumPy arrays :func:`to_canonical` / :func:`from_canonical`. A layout is any
  permutation of the canonical letters: data ``NCHW``/``NHWC``, conv kernels
  ``OIHW``/``HWIO``/``OHWI``..., transposed-conv kernels ``IOHW``...;
- window attributes as the relations read them, checked: :func:`pair`, :func:`pad4`;
  as the constructors normalise them: :func:`get_pad_tuple2d` (TVM's), :func:`attr_pair`;
- output sizes: :func:`conv_out_size`, :func:`pool2d_out_size` (TVM's ``ceil_mode``),
  :func:`pool_out_size` (PyTorch's and ONNX's), :func:`adaptive_output_size`;
- :func:`windows`: the strided window view of a padded NCHW array.

>>> layout_perm("NHWC", "NCHW")
(0, 3, 1, 2)
>>> pad4((1, 2))
(1, 2, 1, 2)
>>> conv_out_size(8, 3, 2, 1, 1, 1, "kernel height")
4
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from relaykit.errors import AttrError
from relaykit.ir.types import TensorType
from relaykit.op._relations import static
from relaykit.op.define import TypeRelError
from relaykit.op.layout import blocked_shape, primal_sizes, transform_layout

__all__ = [
    "layout_perm",
    "to_layout",
    "canonical_shape",
    "to_canonical",
    "from_canonical",
    "pair",
    "pad4",
    "get_pad_tuple2d",
    "attr_pair",
    "conv_out_size",
    "pool2d_out_size",
    "pool_out_size",
    "adaptive_output_size",
    "adaptive_bounds",
    "windows",
]


# -- layouts --------------------------------------------------------------------------------------


def layout_perm(layout: str, canonical: str) -> tuple[int, ...]:
    """The axes permutation that transposes ``layout`` to ``canonical`` order."""
    if sorted(layout) != sorted(canonical):
        raise TypeRelError(
            f"unsupported layout {layout!r}: relaykit supports permutations of {canonical!r} "
            f"(such as {canonical!r} or {canonical[0] + canonical[2:] + canonical[1]!r})"
        )
    return tuple(layout.index(c) for c in canonical)


def _blocked(layout: str, canonical: str) -> bool:
    """Whether ``layout`` splits blocks off ``canonical``'s axes (``NCHW16c``)."""
    if not any(ch.isdigit() for ch in layout):
        return False
    primal = "".join(ch for ch in layout if ch.isupper())
    layout_perm(primal, canonical)
    return True


def to_layout(shape: Sequence[int], canonical: str, layout: str) -> tuple[int, ...]:
    """A shape given in ``canonical`` order rearranged into ``layout`` (blocks split)."""
    if _blocked(layout, canonical):
        return blocked_shape(dict(zip(canonical, shape, strict=True)), layout)
    layout_perm(layout, canonical)
    return tuple(shape[canonical.index(c)] for c in layout)


def canonical_shape(t: TensorType, layout: str, canonical: str, what: str) -> tuple[Any, ...]:
    """The shape of ``t`` (in ``layout``) in ``canonical`` order; ``what`` names ``t``."""
    if _blocked(layout, canonical):
        sizes = primal_sizes(t.shape, layout)
        return tuple(sizes[c] for c in canonical)
    if t.ndim != len(canonical):
        raise TypeRelError(
            f"{what} must be a {len(canonical)}-D tensor in layout {layout}, got {t}"
        )
    perm = layout_perm(layout, canonical)
    return tuple(t.shape[p] for p in perm)


def to_canonical(x: np.ndarray, layout: str, canonical: str) -> np.ndarray:
    """The array ``x`` (in ``layout``) transposed to ``canonical`` order (a view)."""
    if _blocked(layout, canonical):
        return transform_layout(x, layout, canonical)
    perm = layout_perm(layout, canonical)
    return x if perm == tuple(range(x.ndim)) else np.transpose(x, perm)


def from_canonical(x: np.ndarray, canonical: str, layout: str) -> np.ndarray:
    """The array ``x`` (in ``canonical`` order) transposed to ``layout``, contiguous."""
    if _blocked(layout, canonical):
        return transform_layout(x, canonical, layout)
    perm = tuple(canonical.index(c) for c in layout)
    return x if perm == tuple(range(x.ndim)) else np.ascontiguousarray(np.transpose(x, perm))


# -- window attributes ----------------------------------------------------------------------------


def pair(value: Any, what: str = "value", minimum: int = 1) -> tuple[int, int]:
    """An (h, w) pair from an int or a 1- or 2-element list, each at least ``minimum``."""
    vals = (value,) if isinstance(value, int) else tuple(value or ())
    if len(vals) == 1:
        vals = (vals[0], vals[0])
    if len(vals) != 2 or any(not isinstance(v, int) or v < minimum for v in vals):
        kind = "positive integers" if minimum == 1 else f"integers >= {minimum}"
        raise TypeRelError(f"{what} must be two {kind}, got {value!r}")
    return vals[0], vals[1]


def pad4(padding: Any, what: str = "padding") -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from 1, 2 or 4 values, as TVM's ``GetPaddingHeightWidth``."""
    vals = (padding,) if isinstance(padding, int) else tuple(padding or (0,))
    if len(vals) == 1:
        vals = vals * 4
    elif len(vals) == 2:
        vals = (vals[0], vals[1], vals[0], vals[1])
    if len(vals) != 4 or any(not isinstance(v, int) or v < 0 for v in vals):
        raise TypeRelError(f"{what} must be 1, 2 or 4 non-negative integers, got {padding!r}")
    return vals


def get_pad_tuple2d(padding: Any) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from an int, a 2-tuple (h, w) or a 4-tuple, as TVM.

    >>> get_pad_tuple2d(1), get_pad_tuple2d((1, 2)), get_pad_tuple2d((1, 2, 3, 4))
    ((1, 1, 1, 1), (1, 2, 1, 2), (1, 2, 3, 4))
    """
    if isinstance(padding, (int, np.integer)):
        pad_h = pad_w = int(padding) * 2
    else:
        vals = tuple(int(p) for p in padding)
        if len(vals) == 4:
            return vals[0], vals[1], vals[2], vals[3]
        if len(vals) != 2:
            raise AttrError(f"padding must have 1, 2 or 4 values, got {padding!r}")
        pad_h, pad_w = vals[0] * 2, vals[1] * 2
    top, left = (pad_h + 1) // 2, (pad_w + 1) // 2
    return top, left, pad_h - top, pad_w - left


def attr_pair(value: Any) -> Any:
    """A constructor's (h, w) attribute: an int twice, a sequence as ints, ``None`` kept."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    return tuple(int(v) for v in value)


# -- output sizes ---------------------------------------------------------------------------------


def conv_out_size(
    size: int, k: int, stride: int, dil: int, pad_lo: int, pad_hi: int, what: str
) -> int:
    """Output length of a convolution along one axis; ``what`` names the kernel axis."""
    eff = (k - 1) * dil + 1
    span = size + pad_lo + pad_hi - eff
    if static(span) and span < 0:
        raise TypeRelError(
            f"the {what} window ({eff} with dilation) is larger than the padded input ({size} + "
            f"{pad_lo + pad_hi})"
        )
    return span // stride + 1


def pool2d_out_size(size: int, k: int, s: int, d: int, lo: int, hi: int, ceil_mode: bool) -> int:
    """Output length of a pooling window, with TVM's ``ceil_mode`` rule."""
    eff = (k - 1) * d + 1
    span = size + lo + hi - eff
    if static(span) and span < 0:
        raise TypeRelError(
            f"the pooling window ({eff} with dilation) is larger than the padded input "
            f"({size} + {lo + hi})"
        )
    return (span + (s - 1 if ceil_mode else 0)) // s + 1


def pool_out_size(size: int, k: int, s: int, d: int, lo: int, hi: int, ceil_mode: bool) -> int:
    """Output length of one pooled axis (PyTorch/ONNX rule in ceil mode: the last window
    must start inside the input or its leading padding)."""
    span = (size + lo + hi - d * (k - 1) - 1) / s + 1
    if not ceil_mode:
        return math.floor(span)
    out = math.ceil(span)
    if (out - 1) * s >= size + lo:
        out -= 1
    return out


def adaptive_output_size(output_size: Any, h: int, w: int) -> tuple[int, int]:
    """(oh, ow) of an adaptive pool; an empty size keeps the input, ``None`` keeps one dim."""
    size = tuple(output_size or ()) if not isinstance(output_size, int) else (output_size,)
    if not size:
        return h, w
    if len(size) == 1:
        size = size * 2
    if len(size) != 2:
        raise TypeRelError(f"output_size must have 1 or 2 entries, got {output_size!r}")
    oh = h if size[0] is None else size[0]
    ow = w if size[1] is None else size[1]
    if not isinstance(oh, int) or not isinstance(ow, int) or oh < 1 or ow < 1:
        raise TypeRelError(f"output_size must be positive integers, got {output_size!r}")
    return oh, ow


# -- windows --------------------------------------------------------------------------------------


def adaptive_bounds(size: int, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``[start, end)`` of each of ``bins`` adaptive-pooling bins over an axis of
    ``size``: bin ``i`` covers ``[floor(i * size / bins), ceil((i + 1) * size / bins))``
    (PyTorch's and TVM's rule).

    >>> [b.tolist() for b in adaptive_bounds(5, 2)]
    [[0, 2], [3, 5]]
    """
    i = np.arange(bins)
    return (i * size) // bins, -((-(i + 1) * size) // bins)


def windows(
    x: np.ndarray,
    kh: int,
    kw: int,
    strides: tuple[int, int],
    dilation: tuple[int, int],
    out_hw: tuple[int, int],
) -> np.ndarray:
    """The (N, C, OH, OW, KH, KW) strided window view of an already-padded NCHW array."""
    (sh, sw), (dh, dw) = strides, dilation
    eff_h, eff_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    win = sliding_window_view(x, (eff_h, eff_w), axis=(2, 3))
    return win[:, :, ::sh, ::sw, ::dh, ::dw][:, :, : out_hw[0], : out_hw[1]]
