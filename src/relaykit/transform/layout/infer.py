"""Layout inference: what layouts an operator's inputs must have, and which layout its
output then has (TVM's ``FInferCorrectLayout``).

A rule is ``rule(attrs, new_in_layouts, old_in_layouts, old_in_types) ->
InferCorrectLayoutOutput``: ``old_in_layouts`` are the layouts the producers had
before the pass (undefined when not known), ``new_in_layouts`` the ones they have now
(``None`` when the question is only about the original operator). The output names the
layout each input must be given, the output layouts, and the attributes the operator
takes in those layouts (an axis renumbered, for instance). A rule with an undefined
layout in its answer means "cannot follow": the pass then gives the operator its
inputs in their original layouts.

Rules are looked up in the operator attribute ``"FInferCorrectLayout"`` (set with
``relay.op.register_infer_correct_layout``) and then in :data:`BUILTIN_RULES`.

>>> from relaykit.ir.layout import Layout
>>> out = elemwise_layout(None, [Layout("NCHW")], [Layout("NHWC")], [])
>>> [str(x) for x in out.input_layouts], [str(x) for x in out.output_layouts]
(['NCHW'], ['NCHW'])
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from relaykit.ir.attrs import Attrs
from relaykit.ir.layout import UNDEF, Layout
from relaykit.ir.op import default_registry
from relaykit.ir.types import TensorType, TupleType
from relaykit.op.tensor import ELEMENTWISE

__all__ = [
    "InferCorrectLayoutOutput",
    "LayoutRule",
    "BUILTIN_RULES",
    "layout_rule",
    "elemwise_layout",
    "broadcast_layout",
    "try_transform_like",
    "adjust_subordinate_factors",
]


class InferCorrectLayoutOutput:
    """A rule's answer: input layouts, output layouts, the (possibly new) attributes."""

    def __init__(
        self, input_layouts: Sequence[Any], output_layouts: Sequence[Any], new_attrs: Any
    ) -> None:
        self.input_layouts = [_as_layout(x) for x in input_layouts]
        self.output_layouts = [_as_layout(x) for x in output_layouts]
        self.new_attrs = new_attrs


LayoutRule = Callable[
    [Any, "list[Layout] | None", "list[Layout]", "list[Any]"], InferCorrectLayoutOutput
]

BUILTIN_RULES: dict[str, LayoutRule] = {}


def _as_layout(x: Any) -> Layout:
    if x is None:
        return UNDEF
    return x if isinstance(x, Layout) else Layout(str(x))


def layout_rule(op_name: str) -> LayoutRule | None:
    """The layout rule of ``op_name``: a registered one first, else the built-in one."""
    fn = default_registry.get_attr(op_name, "FInferCorrectLayout")
    if callable(fn):
        return fn
    return BUILTIN_RULES.get(op_name)


def _rule(*names: str) -> Callable[[LayoutRule], LayoutRule]:
    def wrap(fn: LayoutRule) -> LayoutRule:
        for n in names:
            BUILTIN_RULES[n] = fn
        return fn

    return wrap


def _shape(t: Any) -> tuple[Any, ...]:
    return tuple(t.shape) if isinstance(t, TensorType) else ()


# -- elementwise and broadcasting --------------------------------------------------------------


def elemwise_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """Every input and the output in the one layout: the first new input layout, or the
    first known old one."""
    ret = UNDEF
    ret = new_in[0] if new_in is not None else next((x for x in old_in if x.defined), UNDEF)
    return InferCorrectLayoutOutput([ret] * len(old_in), [ret], attrs)


def adjust_subordinate_factors(src: Layout, old: Layout, old_shape: Sequence[Any]) -> Layout:
    """``src`` with each block factor set to 1 where the tensor (``old_shape`` in ``old``)
    has size 1 along that axis or lacks it (a broadcast operand cannot be split)."""
    axes: list[tuple[str, int]] = []
    for letter, factor in src.axes:
        if factor:
            primal = letter.upper()
            idx = old.index_of(primal)
            one = idx == -1 or (old_shape[idx] == 1 and old.index_of(letter) == -1)
            factor = 1 if one else src.factor_of(primal)
        axes.append((letter, factor))
    text = "".join(f"{f}{a}" if f else a for a, f in axes)
    return Layout(text) if text else Layout.scalar()


def _isomorphic(lhs: Layout, rhs: Layout) -> bool:
    if lhs.ndim != rhs.ndim:
        return False
    to: dict[str, str] = {}
    back: dict[str, str] = {}
    for (la, lf), (ra, rf) in zip(lhs.axes, rhs.axes, strict=True):
        if bool(lf) != bool(rf) or lf != rf:
            return False
        if to.setdefault(la, ra) != ra or back.setdefault(ra, la) != la:
            return False
    return True


def try_transform_like(old: Layout, ref_old: Layout, ref_new: Layout) -> Layout:
    """The layout ``old`` (of a tensor broadcast against one in ``ref_old``) takes when
    that one moves to ``ref_new``; undefined when the two do not line up."""
    large, small = (ref_old, old) if ref_old.ndim > old.ndim else (old, ref_old)
    tail = large.sub_layout(large.ndim - small.ndim, small.ndim)
    rest = large.sub_layout(0, large.ndim - small.ndim)
    for letter, _ in rest.axes:
        if tail.contains(letter.upper()) or tail.contains(letter.lower()):
            return UNDEF
    if not _isomorphic(tail, small):
        return UNDEF
    if old.ndim == 0:
        return old
    mapping: dict[str, str] = {}
    used: set[str] = set()
    j, i = old.ndim - 1, ref_old.ndim - 1
    while j >= 0:
        ref = ref_old.axes[i][0].upper()
        mine = old.axes[j][0].upper()
        mapping[ref] = mine
        used.add(mine)
        i, j = i - 1, j - 1
    for k in range(ref_old.ndim - 1, -1, -1):
        ref = ref_old.axes[k][0].upper()
        if ref not in mapping:
            pick = (
                ref
                if ref not in used
                else next(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used)
            )
            mapping[ref] = pick
            used.add(pick)
    out = ""
    for letter, factor in ref_new.axes:
        m = mapping[letter.upper()]
        out += f"{factor}{m.lower()}" if factor else m
    return Layout(out)


def _broadcast_pair(
    new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> tuple[list[Layout], list[Layout]]:
    shapes = [_shape(types[0]), _shape(types[1])]
    old_large = 0 if len(shapes[0]) >= len(shapes[1]) else 1
    lays = list(old_in[:2])
    default = ([UNDEF, UNDEF], [UNDEF])
    if not lays[0].defined and not lays[1].defined:
        out = default
    elif not lays[0].defined or not lays[1].defined:
        d = 0 if lays[0].defined else 1
        u = 1 - d
        if len(shapes[d]) >= len(shapes[u]):
            lays[u] = lays[d].sub_layout(len(shapes[d]) - len(shapes[u]), len(shapes[u]))
            out = (list(lays), [lays[d]])
        else:
            out = default
    else:
        out = (list(lays), [lays[old_large]])
    if new_in is None:
        return out
    ret = new_in[old_large]
    large = 0 if new_in[0].ndim_primal >= new_in[1].ndim_primal else 1
    small = 1 - large
    if not lays[small].defined or not lays[large].defined or not new_in[large].defined:
        return default
    tgt = try_transform_like(lays[small], lays[large], new_in[large])
    if not tgt.defined:
        return default
    new_small = adjust_subordinate_factors(tgt, lays[small], shapes[small])
    lays[large], lays[small] = new_in[large], new_small
    return lays, [ret]


def broadcast_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """Two broadcasting inputs: the smaller follows the larger's layout."""
    ins, outs = _broadcast_pair(new_in, old_in, types)
    return InferCorrectLayoutOutput(ins, outs, attrs)


for _name, _row in ELEMENTWISE.items():
    BUILTIN_RULES[_name] = elemwise_layout if _row.arity == 1 else broadcast_layout
for _n in (
    "cast", "cast_like", "reinterpret", "clip", "fixed_point_multiply", "nn.relu",
    "nn.leaky_relu", "nn.dropout", "annotation.stop_fusion", "annotation.cast_hint",
    "annotation.checkpoint", "annotation.compiler_begin", "annotation.compiler_end",
    "on_device", "device_copy",
):  # fmt: skip
    BUILTIN_RULES[_n] = elemwise_layout


# -- operators with a layout attribute ------------------------------------------------------------


@_rule(
    "nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv2d_transpose", "nn.conv3d_transpose",
    "nn.contrib_depthwise_conv2d_NCHWc",
    "nn.contrib_conv2d_winograd_without_weight_transform",
    "nn.contrib_conv2d_gemm_without_weight_transform", "nn.conv2d_backward_weight",
)  # fmt: skip
def conv_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """A convolution's inputs in its ``data_layout`` / ``kernel_layout``; the output in
    ``out_layout`` (``data_layout`` when empty)."""
    out = attrs.out_layout or attrs.data_layout
    return InferCorrectLayoutOutput([attrs.data_layout, attrs.kernel_layout], [out], attrs)


@_rule("nn.contrib_conv2d_NCHWc")
def conv_nchwc_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """As :func:`conv_layout`; with an ``OIHW{i}i{o}o`` kernel and no ``out_layout`` the
    output is blocked as the kernel's outputs (``NCHW{o}c``), as the operator computes."""
    out = attrs.out_layout
    if not out:
        m = re.fullmatch(r"OIHW(\d+)i(\d+)o", str(attrs.kernel_layout))
        out = f"NCHW{m.group(2)}c" if m else attrs.data_layout
    return InferCorrectLayoutOutput([attrs.data_layout, attrs.kernel_layout], [out], attrs)


@_rule("nn.deformable_conv2d")
def deformable_conv_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """Data and offsets in ``data_layout``, the kernel in ``kernel_layout``."""
    out = attrs.out_layout or attrs.data_layout
    return InferCorrectLayoutOutput(
        [attrs.data_layout, attrs.data_layout, attrs.kernel_layout], [out], attrs
    )


@_rule("qnn.conv2d", "qnn.conv2d_transpose")
def qnn_conv_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """As a convolution; zero points and scales are per channel (``C``)."""
    out = attrs.out_layout or attrs.data_layout
    ins = [attrs.data_layout, attrs.kernel_layout] + ["C"] * 4
    return InferCorrectLayoutOutput(ins, [out], attrs)


@_rule(
    "nn.max_pool1d", "nn.avg_pool1d", "nn.max_pool2d", "nn.avg_pool2d", "nn.max_pool3d",
    "nn.avg_pool3d", "nn.global_max_pool2d", "nn.global_avg_pool2d",
    "nn.adaptive_max_pool1d", "nn.adaptive_avg_pool1d", "nn.adaptive_max_pool2d",
    "nn.adaptive_avg_pool2d", "nn.adaptive_max_pool3d", "nn.adaptive_avg_pool3d",
)  # fmt: skip
def pool_layout(
    attrs: Any, new_in: list[Layout] | None, old_in: list[Layout], types: list[Any]
) -> InferCorrectLayoutOutput:
    """A pool follows its input's layout unless an ``out_layout`` is fixed."""
    if not getattr(attrs, "out_layout", "") and new_in is not None and new_in[0].defined:
        attrs = attrs.with_updates(layout=new_in[0].name)
    return InferCorrectLayoutOutput([attrs.layout], [attrs.layout], attrs)


def tuple_len(t: Any) -> int:
    """How many tensors a (tuple) type holds."""
    return len(t.fields) if isinstance(t, TupleType) else 1


def with_attrs(attrs: Any, **updates: Any) -> Any:
    """``attrs`` with ``updates`` (kept as an :class:`Attrs`)."""
    return attrs.with_updates(**updates) if isinstance(attrs, Attrs) else attrs
