"""Layout rules of operators that name axes: reductions, ``concatenate``, ``transpose``,
``squeeze``, ``strided_slice``, ``split``, ``nn.pad``, ``slice_like``, ``topk``.

Each follows its input's new layout where it can by renumbering the axes it names
(and dividing sizes along a blocked axis where they split evenly); where it cannot, it
asks for the input's original layout.

>>> from relaykit.ir.layout import Layout
>>> from relaykit.ir.attrs import Attrs
>>> from relaykit.ir.types import TensorType
>>> out = reduce_layout(Attrs({"axis": [3], "keepdims": False, "exclude": False}),
...                     [Layout("NCHW")], [Layout("NHWC")], [TensorType((1, 4, 4, 8), "float32")])
>>> str(out.input_layouts[0]), str(out.output_layouts[0]), list(out.new_attrs.axis)
('NCHW', 'NHW', [1])
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.layout import UNDEF, Layout
from relaykit.ir.types import TupleType

from .infer import BUILTIN_RULES, InferCorrectLayoutOutput, with_attrs

__all__ = [
    "reduce_layout",
    "concatenate_layout",
    "transpose_layout",
    "squeeze_layout",
    "strided_slice_layout",
    "split_layout",
    "pad_layout",
    "slice_like_layout",
    "topk_layout",
]

Layouts = "list[Layout] | None"


def _letter(layout: Layout, i: int) -> str:
    return layout.axes[i][0]


def _text(axes: list[tuple[str, int]]) -> str:
    return "".join(f"{f}{a}" if f else a for a, f in axes)


def _ints(value: Any) -> list[int]:
    if value is None:
        return []
    if isinstance(value, int):
        return [int(value)]
    return [int(v) for v in value]


def reduce_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """A reduction over the same named axes in the new layout."""
    ndim = len(types[0].shape)
    axis = _ints(getattr(attrs, "axis", None))
    exclude = bool(getattr(attrs, "exclude", False))
    keepdims = bool(getattr(attrs, "keepdims", False))
    given = sorted({a % ndim for a in axis}) if axis else list(range(ndim))
    r_axes = [i for i in range(ndim) if i not in given] if exclude and axis else given
    if not axis and exclude:
        r_axes = []

    def infer(layout: Layout) -> tuple[Layout, Layout, list[int]]:
        old_dims = {_letter(old_in[0], r) for r in r_axes}
        new_r: list[int] = []
        ins: list[tuple[str, int]] = []
        outs: list[tuple[str, int]] = []

        def push(dim: str, idx: int) -> bool:
            if (dim in old_dims) != exclude:
                new_r.append(idx)
                return True
            return False

        for idx, (letter, factor) in enumerate(layout.axes):
            if not factor:
                push(letter, idx)
                ins.append((letter, 0))
                if letter not in old_dims or keepdims:
                    outs.append((letter, 0))
            else:
                ins.append((letter, factor))
                if push(letter.upper(), idx):
                    if exclude:
                        outs.append((letter, factor))
                    elif keepdims:
                        outs.append((letter, 1))
                else:
                    outs.append((letter, factor))
        return Layout(_text(ins)), Layout(_text(outs)), new_r

    inferred_in = inferred_out = UNDEF
    if new_in is not None and r_axes and new_in[0].defined and old_in[0].defined:
        inferred_in, inferred_out, new_r = infer(new_in[0])
        attrs = with_attrs(attrs, axis=new_r)
    elif old_in and old_in[0].defined:
        inferred_in, inferred_out, _ = infer(old_in[0])
    ins = [inferred_in] * (2 if len(old_in) == 2 else 1)
    return InferCorrectLayoutOutput(ins, [inferred_out], attrs)


def concatenate_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """All inputs in one layout; the axis follows the concatenated dimension."""
    first = types[0].fields[0] if isinstance(types[0], TupleType) else types[0]
    axis = int(attrs.axis) % len(first.shape)  # type: ignore[union-attr]
    ret = UNDEF
    same = new_in is not None and all(n.equals(new_in[0]) for n in new_in)
    if new_in is not None and same and old_in[0].defined and new_in[0].defined:
        idx = new_in[0].index_of(_letter(old_in[0], axis))
        if idx >= 0:
            return InferCorrectLayoutOutput(
                [new_in[0]] * len(old_in), [new_in[0]], with_attrs(attrs, axis=idx)
            )
    ret = next((x for x in old_in if x.defined), UNDEF)
    if not ret.defined or ret.ndim <= axis or ret.axes[axis][1]:
        return InferCorrectLayoutOutput([UNDEF], [UNDEF], attrs)
    return InferCorrectLayoutOutput([ret] * len(old_in), [ret], attrs)


def transpose_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """The permutation renumbered for the new layout."""
    if not old_in or not old_in[0].defined:
        return InferCorrectLayoutOutput([UNDEF], [UNDEF], attrs)
    old = old_in[0]
    axes = _ints(getattr(attrs, "axes", None)) or list(range(old.ndim - 1, -1, -1))
    axes = [a % old.ndim for a in axes]
    in_layout = old
    if new_in is not None and new_in[0].defined:
        new = new_in[0]
        new_axes = [new.index_of(_letter(old, a)) for a in axes]
        if -1 not in new_axes and len(new_axes) == new.ndim:
            axes, in_layout = new_axes, new
    out = Layout(_text([in_layout.axes[a] for a in axes]))
    return InferCorrectLayoutOutput([in_layout], [out], with_attrs(attrs, axes=axes))


def squeeze_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """The squeezed axes renumbered for the new layout."""
    inferred = new_in[0] if new_in is not None else old_in[0]
    if not inferred.defined:
        return InferCorrectLayoutOutput([UNDEF], [UNDEF], attrs)
    shape = types[0].shape
    axis = getattr(attrs, "axis", None)
    axes = _ints(axis) if axis is not None else [i for i, d in enumerate(shape) if d == 1]
    if new_in is not None and old_in[0].defined:
        axes = [new_in[0].index_of(_letter(old_in[0], a)) for a in axes]
        attrs = with_attrs(attrs, axis=axes)
    drop = {a % inferred.ndim for a in axes}
    kept = [ax for i, ax in enumerate(inferred.axes) if i not in drop]
    out = Layout(_text(kept)) if kept else Layout.scalar()
    return InferCorrectLayoutOutput([inferred], [out], attrs)


def strided_slice_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """The slice bounds moved to the new layout's axes (divided along a blocked axis)."""
    layout = old_in[0]
    default = InferCorrectLayoutOutput([UNDEF], [UNDEF], attrs)
    if not layout.defined or new_in is None or not new_in[0].defined:
        return InferCorrectLayoutOutput([layout], [layout], attrs)
    new = new_in[0]
    shape = types[0].shape
    size_mode = getattr(attrs, "slice_mode", "end") == "size"
    begin, end = _ints(attrs.begin), _ints(attrs.end)
    strides = [1 if size_mode else s for s in _ints(attrs.strides)]
    old_name, new_name = layout.name, new.name
    if not old_name.startswith(new_name) and not new_name.startswith(old_name):
        if len(old_name) != len(new_name):
            return default
        return _slice_permuted(attrs, layout, new, shape, begin, end, strides)
    if len(old_name) < len(new_name):
        return _slice_blocked(attrs, layout, new, shape, begin, end, strides)
    return InferCorrectLayoutOutput([layout], [layout], attrs)


def _slice_permuted(
    attrs: Any,
    layout: Layout,
    new: Layout,
    shape: Any,
    begin: list[int],
    end: list[int],
    strides: list[int],
) -> InferCorrectLayoutOutput:
    """strided_slice bounds for a new layout that permutes the old one's axes."""
    default = InferCorrectLayoutOutput([UNDEF], [UNDEF], attrs)
    axes = getattr(attrs, "axes", None)
    nb: list[int] = []
    ne: list[int] = []
    ns: list[int] = []
    updates: dict[str, Any] = {}
    if axes is not None:
        updates["axes"] = [new.index_of(_letter(layout, a)) for a in _ints(axes)]
        nb, ne, ns = begin, end, strides
    else:
        for i in range(new.ndim):
            idx = layout.index_of(_letter(new, i))
            if idx == -1:
                return default
            ns.append(strides[idx] if idx < len(strides) else 1)
            nb.append(begin[idx] if idx < len(begin) else 0)
            ne.append(end[idx] if idx < len(end) else int(shape[idx]))
    updates.update(begin=nb, end=ne, strides=ns)
    return InferCorrectLayoutOutput([new], [new], with_attrs(attrs, **updates))


def _slice_blocked(
    attrs: Any,
    layout: Layout,
    new: Layout,
    shape: Any,
    begin: list[int],
    end: list[int],
    strides: list[int],
) -> InferCorrectLayoutOutput:
    """strided_slice bounds for a new layout that blocks the old one's axes."""
    default = InferCorrectLayoutOutput([UNDEF], [UNDEF], attrs)
    axes = getattr(attrs, "axes", None)
    size_mode = getattr(attrs, "slice_mode", "end") == "size"
    nb: list[int] = []
    ne: list[int] = []
    updates: dict[str, Any] = {}
    positions = _ints(axes) if axes is not None else list(range(len(begin)))
    for i, pos in enumerate(positions):
        letter = _letter(layout, pos)
        factor = new.factor_of(letter)
        b = begin[i] if i < len(begin) else 0
        if i < len(end):
            e = (int(shape[pos]) if end[i] < 0 else b + end[i]) if size_mode else end[i]
        else:
            e = int(shape[pos])
        if factor == -1:
            nb.append(b)
            ne.append(e)
            continue
        if i < len(strides) and strides[i] != 1:
            return default
        if b % factor or e % factor:
            return default
        nb.append(b // factor)
        ne.append(e // factor)
    if axes is not None:
        updates["axes"] = [new.index_of(_letter(layout, a)) for a in _ints(axes)]
    updates.update(begin=nb, end=ne)
    if size_mode:
        updates.update(slice_mode="end", strides=strides or [1])
    return InferCorrectLayoutOutput([new], [new], with_attrs(attrs, **updates))


def split_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """The split axis renumbered; split points divided along a blocked axis."""
    ndim = len(types[0].shape)
    axis = int(attrs.axis) % ndim
    ios = attrs.indices_or_sections
    count = int(ios) if isinstance(ios, int) else len(list(ios)) + 1
    ret = UNDEF
    if new_in is not None and old_in[0].defined and new_in[0].defined:
        letter = _letter(old_in[0], axis)
        new_axis = new_in[0].index_of(letter)
        factor = new_in[0].factor_of(letter)
        updates: dict[str, Any] = {"axis": new_axis}
        divisible = True
        if factor > 1 and not isinstance(ios, int):
            points = [int(v) for v in ios]
            divisible = all(p % factor == 0 for p in points)
            if divisible:
                updates["indices_or_sections"] = [p // factor for p in points]
        ret = new_in[0] if divisible else old_in[0]
        attrs = with_attrs(attrs, **updates)
    elif old_in[0].defined:
        ret = old_in[0]
    return InferCorrectLayoutOutput([ret], [ret] * count, attrs)


def pad_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """Pad widths moved to the new layout's axes; a blocked axis must not be padded."""
    ret = old_in[0]
    if new_in is not None and new_in[0].defined and old_in[0].defined:
        widths = {a: list(w) for (a, _), w in zip(old_in[0].axes, attrs.pad_width, strict=True)}
        new_widths: list[Any] = []
        ok = True
        for letter, factor in new_in[0].axes:
            if not factor and letter in widths:
                new_widths.append(widths[letter])
                continue
            primal = widths.get(letter.upper())
            if primal is None:
                ok = False
                break
            new_widths.append(primal)
            if any(int(w) != 0 for w in primal):
                ok = False
        if ok:
            ret = new_in[0]
            attrs = with_attrs(attrs, pad_width=[tuple(w) for w in new_widths])
    return InferCorrectLayoutOutput([ret, Layout.scalar()], [ret], attrs)


def slice_like_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """Both inputs in the new layout, the sliced axes renumbered."""
    axes = getattr(attrs, "axes", None)
    if new_in is not None and old_in[0].defined and new_in[0].defined and axes:
        new_axes = [new_in[0].index_of(_letter(old_in[0], int(a))) for a in axes]
        if -1 not in new_axes:
            return InferCorrectLayoutOutput(
                [new_in[0], new_in[0]], [new_in[0]], with_attrs(attrs, axes=new_axes)
            )
    return InferCorrectLayoutOutput([old_in[0], old_in[1]], [old_in[1]], attrs)


def topk_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """``topk`` along the same named axis."""
    n_out = 2 if str(getattr(attrs, "ret_type", "both")) == "both" else 1
    ndim = len(types[0].shape)
    axis = int(attrs.axis) % ndim
    if new_in is not None and old_in[0].defined and new_in[0].defined:
        letter = _letter(old_in[0], axis)
        idx = new_in[0].index_of(letter)
        if idx >= 0 and new_in[0].factor_of(letter) == -1:
            return InferCorrectLayoutOutput(
                [new_in[0]], [new_in[0]] * n_out, with_attrs(attrs, axis=idx)
            )
    ret = old_in[0]
    return InferCorrectLayoutOutput([ret], [ret] * n_out, attrs)


for _n in ("sum", "all", "any", "max", "min", "prod", "mean", "variance", "std", "argmax",
           "argmin", "logsumexp"):  # fmt: skip
    BUILTIN_RULES[_n] = reduce_layout
BUILTIN_RULES["concatenate"] = concatenate_layout
BUILTIN_RULES["transpose"] = transpose_layout
BUILTIN_RULES["squeeze"] = squeeze_layout
BUILTIN_RULES["strided_slice"] = strided_slice_layout
BUILTIN_RULES["split"] = split_layout
BUILTIN_RULES["nn.pad"] = pad_layout
BUILTIN_RULES["slice_like"] = slice_like_layout
BUILTIN_RULES["topk"] = topk_layout
