"""Global and adaptive pooling of 1-D and 3-D data: ``nn.global_max_pool1d``,
``nn.global_avg_pool1d``, ``nn.adaptive_max_pool1d``, ``nn.adaptive_avg_pool1d``,
``nn.adaptive_max_pool3d`` and ``nn.adaptive_avg_pool3d`` (the 2-D ones are in
:mod:`.pooling`).

An adaptive pool cuts each spatial axis of length ``n`` into ``o`` bins, bin ``i``
covering ``[floor(i * n / o), ceil((i + 1) * n / o))`` (PyTorch's and TVM's rule), and
takes the max or the mean of each box of bins; a global pool is the adaptive pool with one
bin per axis. ``output_size`` entries that are ``None`` keep that axis.

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 1, 5))
>>> f = relay.Function([x], adaptive_avg_pool1d(x, 2))
>>> data = np.arange(5, dtype="float32").reshape(1, 1, 5)  # bins [0, 3) and [2, 5)
>>> relay.create_executor("debug").evaluate(f)(data).numpy().tolist()
[[[1.0, 3.0]]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr
from relaykit.ir.types import TensorType, Type
from relaykit.op._numeric import as_out
from relaykit.op._relations import tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

from .geometry import adaptive_bounds, from_canonical, to_canonical

__all__ = [
    "global_max_pool1d",
    "global_avg_pool1d",
    "adaptive_max_pool1d",
    "adaptive_avg_pool1d",
    "adaptive_max_pool3d",
    "adaptive_avg_pool3d",
]

_CANONICAL = {1: "NCW", 3: "NCDHW"}


def _sizes(output_size: Any, rank: int) -> tuple[Any, ...]:
    """``output_size`` as one entry per spatial axis (None: keep the axis)."""
    if output_size is None:
        return (None,) * rank
    items = tuple(output_size) if isinstance(output_size, list | tuple) else (output_size,)
    if len(items) == 0:
        return (None,) * rank
    if len(items) == 1:
        items = items * rank
    if len(items) != rank:
        raise TypeRelError(f"output_size must have 1 or {rank} values, got {output_size!r}")
    return tuple(None if v is None else int(v) for v in items)


def _rel(rank: int, is_global: bool) -> Callable[[Sequence[Type], Attrs], Type]:
    canonical = _CANONICAL[rank]

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        layout = str(attrs.layout)
        if sorted(layout) != sorted(canonical) or data.ndim != rank + 2:
            raise TypeRelError(f"layout {layout!r} does not describe {data} (as {canonical})")
        sizes = (1,) * rank if is_global else _sizes(attrs.output_size, rank)
        if any(s is not None and s < 1 for s in sizes):
            raise TypeRelError(f"output_size must be positive, got {attrs.output_size!r}")
        shape = list(data.shape)
        for axis, size in zip(canonical[2:], sizes, strict=True):
            if size is not None:
                shape[layout.index(axis)] = size
        out_layout = str(attrs.out_layout or layout)
        if sorted(out_layout) != sorted(canonical):
            raise TypeRelError(f"out_layout {out_layout!r} is not a layout of {canonical}")
        by_axis = dict(zip(layout, shape, strict=True))
        return TensorType(tuple(by_axis[a] for a in out_layout), data.dtype)

    return rel


def _bins(x: np.ndarray, axis: int, bins: int, reduce: Any) -> np.ndarray:
    parts = []
    for lo, hi in zip(*adaptive_bounds(x.shape[axis], bins), strict=True):
        parts.append(reduce(np.take(x, range(lo, hi), axis=axis), axis=axis, keepdims=True))
    return np.concatenate(parts, axis=axis)


def _kernel(rank: int, is_global: bool, reduce: Any) -> Callable[..., np.ndarray]:
    canonical = _CANONICAL[rank]

    def kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        data = inputs[0]
        x = to_canonical(data, str(attrs.layout), canonical)
        work = x.astype(np.float64) if reduce is np.mean else x
        sizes = (1,) * rank if is_global else _sizes(attrs.output_size, rank)
        for i, size in enumerate(sizes):
            if size is not None:
                work = _bins(work, 2 + i, size, reduce)
        out = from_canonical(work, canonical, str(attrs.out_layout or attrs.layout))
        return as_out(out, data.dtype)

    return kernel


for _rank, _kind, _reduce in (
    (1, "max", np.max),
    (1, "avg", np.mean),
    (3, "max", np.max),
    (3, "avg", np.mean),
):
    _layout = _CANONICAL[_rank]
    define_op(
        f"nn.adaptive_{_kind}_pool{_rank}d",
        num_inputs=1,
        attrs={"output_size": None, "layout": _layout, "out_layout": ""},
        attrs_type_key=f"relay.attrs.AdaptivePool{_rank}DAttrs",
        type_rel=_rel(_rank, False),
        compute=_kernel(_rank, False, _reduce),
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        doc=f"{_rank}-D adaptive {_kind} pooling to output_size bins per axis.",
    )
    if _rank == 1:
        define_op(
            f"nn.global_{_kind}_pool1d",
            num_inputs=1,
            attrs={"layout": _layout, "out_layout": ""},
            attrs_type_key="relay.attrs.GlobalPool1DAttrs",
            type_rel=_rel(1, True),
            compute=_kernel(1, True, _reduce),
            pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
            doc=f"1-D global {_kind} pooling (one value per channel).",
        )


def _size_attr(output_size: Any) -> Any:
    if output_size is None:
        return None
    items = tuple(output_size) if isinstance(output_size, list | tuple) else (output_size,)
    return tuple(None if v is None else int(v) for v in items)


def global_max_pool1d(data: Expr, layout: str = "NCW", out_layout: str = "") -> Call:
    """The max of each channel over W (NCW or NWC)."""
    return make_call("nn.global_max_pool1d", [data], layout=layout, out_layout=out_layout)


def global_avg_pool1d(data: Expr, layout: str = "NCW", out_layout: str = "") -> Call:
    """The mean of each channel over W (NCW or NWC)."""
    return make_call("nn.global_avg_pool1d", [data], layout=layout, out_layout=out_layout)


def adaptive_max_pool1d(
    data: Expr, output_size: Any = None, layout: str = "NCW", out_layout: str = ""
) -> Call:
    """Max pooling of W into ``output_size`` bins."""
    return make_call(
        "nn.adaptive_max_pool1d",
        [data],
        output_size=_size_attr(output_size),
        layout=layout,
        out_layout=out_layout,
    )


def adaptive_avg_pool1d(
    data: Expr, output_size: Any = None, layout: str = "NCW", out_layout: str = ""
) -> Call:
    """Average pooling of W into ``output_size`` bins."""
    return make_call(
        "nn.adaptive_avg_pool1d",
        [data],
        output_size=_size_attr(output_size),
        layout=layout,
        out_layout=out_layout,
    )


def adaptive_max_pool3d(
    data: Expr, output_size: Any = None, layout: str = "NCDHW", out_layout: str = ""
) -> Call:
    """Max pooling of D, H and W into ``output_size`` bins each."""
    return make_call(
        "nn.adaptive_max_pool3d",
        [data],
        output_size=_size_attr(output_size),
        layout=layout,
        out_layout=out_layout,
    )


def adaptive_avg_pool3d(
    data: Expr, output_size: Any = None, layout: str = "NCDHW", out_layout: str = ""
) -> Call:
    """Average pooling of D, H and W into ``output_size`` bins each."""
    return make_call(
        "nn.adaptive_avg_pool3d",
        [data],
        output_size=_size_attr(output_size),
        layout=layout,
        out_layout=out_layout,
    )
