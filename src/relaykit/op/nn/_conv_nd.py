"""1-D and 3-D convolutions and their transposes: ``nn.conv1d``, ``nn.conv3d``,
``nn.conv1d_transpose``, ``nn.conv3d_transpose``, with TVM's attributes and defaults.

The type relations and kernels are written once for any number of spatial axes
(``nn.conv2d`` keeps its own, tuned 2-D kernel). Layouts are permutations of
``NCW``/``NCDHW`` for data, ``OIW``/``OIDHW`` for weights (``IOW``/``IODHW`` for the
transposes). Padding is ``(before..., after...)`` per spatial axis: one value pads
every side, one value per axis pads both sides of that axis.

The kernels move data to channels-first order, take the strided windows
(``sliding_window_view``) and contract them with the weights in one ``einsum``
over the groups, in float64 (as the 2-D kernels), so they are the reference the
backends are checked against.

>>> import numpy as np
>>> x = np.arange(5, dtype="float32").reshape(1, 1, 5)
>>> w = np.ones((1, 1, 3), "float32")
>>> from relaykit.ir.op import default_registry
>>> attrs = conv1d(relay_var((1, 1, 5)), relay_var((1, 1, 3))).attrs
>>> conv_nd_kernel(1, transpose=False)([x, w], attrs).tolist()
[[[3.0, 6.0, 9.0]]]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from relaykit.errors import AttrError
from relaykit.ir.attrs import Attrs
from relaykit.ir.expr import Call, Expr, Var
from relaykit.ir.types import TensorType, Type, check_dtype
from relaykit.op._numeric import as_out
from relaykit.op._relations import differ, resolve_dtype, static, tensor_arg
from relaykit.op.define import OpPattern, TypeRelError, define_op, make_call

from ._kernels import _from_canonical, _out_dtype, _to_canonical
from ._relations import layout_perm, to_layout

__all__ = [
    "conv1d",
    "conv3d",
    "conv1d_transpose",
    "conv3d_transpose",
    "conv_nd_kernel",
    "relay_var",
]

_SPATIAL = {1: "W", 3: "DHW"}


def relay_var(shape: Sequence[int], dtype: str = "float32") -> Var:
    """A variable of a tensor type (for examples)."""
    return Var("v", TensorType(tuple(shape), dtype))


def _tuple(value: Any, n: int, what: str) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    vals = tuple(int(v) for v in value)
    if len(vals) == 1:
        return vals * n
    if len(vals) != n:
        raise AttrError(f"{what} must have 1 or {n} values, got {value!r}")
    return vals


def _padding(value: Any, n: int) -> tuple[int, ...]:
    """(before..., after...) from 1, n or 2n values (TVM's get_pad_tuple1d/3d)."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * (2 * n)
    vals = tuple(int(v) for v in value)
    if len(vals) == 1:
        return vals * (2 * n)
    if len(vals) == n:
        return vals + vals
    if len(vals) != 2 * n:
        raise AttrError(f"padding must have 1, {n} or {2 * n} values, got {value!r}")
    return vals


def _canonical_shape(t: TensorType, layout: str, canonical: str, what: str) -> tuple[Any, ...]:
    if t.ndim != len(canonical):
        raise TypeRelError(
            f"{what} must be a {len(canonical)}-D tensor in layout {layout}, got {t}"
        )
    return tuple(t.shape[p] for p in layout_perm(layout, canonical))


def _geometry(attrs: Attrs, n: int) -> tuple[tuple[int, ...], ...]:
    strides = _tuple(attrs.strides, n, "strides")
    dilation = _tuple(attrs.dilation, n, "dilation")
    padding = _padding(attrs.padding, n)
    if any(s < 1 for s in strides + dilation) or any(p < 0 for p in padding):
        raise TypeRelError(
            f"strides {strides} and dilation {dilation} must be positive and padding "
            f"{padding} non-negative"
        )
    return strides, dilation, padding


def _check_common(
    data: TensorType, weight: TensorType, attrs: Attrs, kernel: tuple[Any, ...], n: int
) -> int:
    if data.dtype != weight.dtype:
        raise TypeRelError(f"data and weight must have the same dtype, got {data} and {weight}")
    groups = attrs.groups
    if not isinstance(groups, int) or groups < 1:
        raise TypeRelError(f"groups must be a positive integer, got {groups!r}")
    if attrs.kernel_size is not None and _tuple(attrs.kernel_size, n, "kernel_size") != kernel:
        raise TypeRelError(
            f"kernel_size={tuple(attrs.kernel_size)} but the weight {weight} has a "
            f"{'x'.join(map(str, kernel))} kernel"
        )
    return groups


def _conv_rel(n: int) -> Callable[[Sequence[Type], Attrs], Type]:
    data_c, weight_c = "NC" + _SPATIAL[n], "OI" + _SPATIAL[n]

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        weight = tensor_arg(arg_types, 1, "weight")
        batch, c, *size = _canonical_shape(data, attrs.data_layout, data_c, "data")
        o, i, *kernel = _canonical_shape(weight, attrs.kernel_layout, weight_c, "weight")
        groups = _check_common(data, weight, attrs, tuple(kernel), n)
        if differ(c, i * groups):
            raise TypeRelError(
                f"data has {c} input channels but the weight {weight} expects {i} per group x "
                f"{groups} groups = {i * groups}"
            )
        if static(o) and o % groups:
            raise TypeRelError(f"the {o} output channels are not divisible by groups={groups}")
        if attrs.channels is not None and differ(attrs.channels, o):
            raise TypeRelError(f"channels={attrs.channels} but the weight {weight} has {o} filters")
        strides, dilation, padding = _geometry(attrs, n)
        out = []
        for ax in range(n):
            eff = (kernel[ax] - 1) * dilation[ax] + 1
            span = size[ax] + padding[ax] + padding[n + ax] - eff
            if static(span) and span < 0:
                raise TypeRelError(
                    f"the kernel window ({eff} with dilation) on spatial axis {ax} is larger "
                    f"than the padded input ({size[ax]} + {padding[ax] + padding[n + ax]})"
                )
            out.append(span // strides[ax] + 1)
        shape = to_layout((batch, o, *out), data_c, attrs.out_layout or attrs.data_layout)
        return TensorType(shape, resolve_dtype(attrs.out_dtype, data.dtype))

    return rel


def _conv_transpose_rel(n: int) -> Callable[[Sequence[Type], Attrs], Type]:
    data_c, weight_c = "NC" + _SPATIAL[n], "IO" + _SPATIAL[n]

    def rel(arg_types: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor_arg(arg_types, 0, "data")
        weight = tensor_arg(arg_types, 1, "weight")
        batch, c, *size = _canonical_shape(data, attrs.data_layout, data_c, "data")
        i, og, *kernel = _canonical_shape(weight, attrs.kernel_layout, weight_c, "weight")
        groups = _check_common(data, weight, attrs, tuple(kernel), n)
        if static(c) and c % groups:
            raise TypeRelError(f"groups={groups} must divide the {c} input channels")
        if differ(c, i):
            raise TypeRelError(f"data has {c} input channels but the weight {weight} expects {i}")
        o = og * groups
        if attrs.channels is not None and differ(attrs.channels, o):
            raise TypeRelError(
                f"channels={attrs.channels} but the weight gives {o} output channels"
            )
        strides, dilation, padding = _geometry(attrs, n)
        out_pad = _tuple(attrs.output_padding or 0, n, "output_padding")
        out = []
        for ax in range(n):
            if not 0 <= out_pad[ax] < max(strides[ax], dilation[ax]):
                raise TypeRelError(
                    f"output_padding {out_pad} must be smaller than the stride or the dilation"
                )
            size_ax = (
                (size[ax] - 1) * strides[ax]
                - padding[ax]
                - padding[n + ax]
                + dilation[ax] * (kernel[ax] - 1)
                + out_pad[ax]
                + 1
            )
            if static(size_ax) and size_ax < 1:
                raise TypeRelError(f"the padding {padding} leaves an empty output")
            out.append(size_ax)
        shape = to_layout((batch, o, *out), data_c, attrs.out_layout or attrs.data_layout)
        return TensorType(shape, resolve_dtype(attrs.out_dtype, data.dtype))

    return rel


def _acc(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.int64) if dtype.kind in "iub" else np.dtype(np.float64)


def _conv_forward(x: np.ndarray, w: np.ndarray, attrs: Attrs, n: int) -> np.ndarray:
    """Channels-first x (N, C, *S) and w (O, C/g, *K), float64 -> (N, O, *OS)."""
    strides, dilation, padding = _geometry(attrs, n)
    batch = x.shape[0]
    o, cg, *kernel = w.shape
    g = attrs.groups
    pads = ((0, 0), (0, 0), *((padding[a], padding[n + a]) for a in range(n)))
    xp = np.pad(x, pads)
    eff = tuple((kernel[a] - 1) * dilation[a] + 1 for a in range(n))
    win = sliding_window_view(xp, eff, axis=tuple(range(2, 2 + n)))
    idx = (
        slice(None),
        slice(None),
        *(slice(None, None, s) for s in strides),
        *(slice(None, None, d) for d in dilation),
    )
    win = win[idx]  # (N, C, *OS, *K)
    out_sizes = win.shape[2 : 2 + n]
    win = win.reshape(batch, g, cg, *out_sizes, *kernel)
    wg = w.reshape(g, o // g, cg, *kernel)
    sp, kk = "pqr"[:n], "ijk"[:n]
    out = np.einsum(f"zgc{sp}{kk},goc{kk}->zgo{sp}", win, wg, optimize=True)
    return out.reshape(batch, o, *out_sizes)


def _conv_backward(x: np.ndarray, w: np.ndarray, attrs: Attrs, n: int) -> np.ndarray:
    """Transposed convolution: channels-first x (N, C, *S), w (C, O/g, *K)."""
    strides, dilation, padding = _geometry(attrs, n)
    out_pad = _tuple(attrs.output_padding or 0, n, "output_padding")
    batch, c, *size = x.shape
    _, og, *kernel = w.shape
    g = attrs.groups
    cg = c // g
    xg = x.reshape(batch, g, cg, *size)
    wg = w.reshape(g, cg, og, *kernel)
    full = [
        (size[a] - 1) * strides[a] + (kernel[a] - 1) * dilation[a] + 1 + out_pad[a]
        for a in range(n)
    ]
    buf = np.zeros((batch, g, og, *full), dtype=x.dtype)
    letters = "pqr"[:n]
    lead: tuple[Any, ...] = (slice(None), slice(None), slice(None))
    for tap in itertools.product(*(range(k) for k in kernel)):  # one strided add per kernel tap
        wt = wg[lead + tuple(tap)]  # (G, Cg, OG)
        contrib = np.einsum(f"zgc{letters},gco->zgo{letters}", xg, wt, optimize=True)
        dst = tuple(
            slice(
                tap[a] * dilation[a],
                tap[a] * dilation[a] + (size[a] - 1) * strides[a] + 1,
                strides[a],
            )
            for a in range(n)
        )
        buf[lead + dst] += contrib
    crop = tuple(slice(padding[a], full[a] - padding[n + a]) for a in range(n))
    out = buf[lead + crop]
    return out.reshape(batch, g * og, *out.shape[3:])


def conv_nd_kernel(n: int, transpose: bool) -> Callable[[Sequence[np.ndarray], Attrs], np.ndarray]:
    """The NumPy kernel of the ``n``-D (transposed) convolution."""
    data_c = "NC" + _SPATIAL[n]
    weight_c = ("IO" if transpose else "OI") + _SPATIAL[n]

    def kernel(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        data, weight = inputs
        out_dtype = _out_dtype(attrs, data)
        acc = _acc(out_dtype)
        x = _to_canonical(data, attrs.data_layout, data_c).astype(acc, copy=False)
        w = _to_canonical(weight, attrs.kernel_layout, weight_c).astype(acc, copy=False)
        out = _conv_backward(x, w, attrs, n) if transpose else _conv_forward(x, w, attrs, n)
        out = _from_canonical(out, data_c, attrs.out_layout or attrs.data_layout)
        return as_out(out, out_dtype)

    return kernel


def _conv_attrs(n: int) -> dict[str, Any]:
    return {
        "strides": (1,) * n,
        "padding": (0,) * n,
        "dilation": (1,) * n,
        "groups": 1,
        "channels": None,
        "kernel_size": None,
        "data_layout": "NC" + _SPATIAL[n],
        "kernel_layout": "OI" + _SPATIAL[n],
        "out_layout": "",
        "out_dtype": "",
    }


def _conv_transpose_attrs(n: int) -> dict[str, Any]:
    return {
        "channels": None,
        "kernel_size": None,
        "strides": (1,) * n,
        "output_padding": (0,) * n,
        "padding": (0,) * n,
        "dilation": (1,) * n,
        "groups": 1,
        "data_layout": "NC" + _SPATIAL[n],
        "kernel_layout": "IO" + _SPATIAL[n],
        "out_layout": "",
        "out_dtype": "",
    }


for _n in (1, 3):
    define_op(
        f"nn.conv{_n}d",
        num_inputs=2,
        attrs=_conv_attrs(_n),
        attrs_type_key=f"relay.attrs.Conv{_n}DAttrs",
        type_rel=_conv_rel(_n),
        compute=conv_nd_kernel(_n, transpose=False),
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        doc=f"{_n}-D convolution.",
    )
    define_op(
        f"nn.conv{_n}d_transpose",
        num_inputs=2,
        attrs=_conv_transpose_attrs(_n),
        attrs_type_key=f"relay.attrs.Conv{_n}DTransposeAttrs",
        type_rel=_conv_transpose_rel(_n),
        compute=conv_nd_kernel(_n, transpose=True),
        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
        doc=f"{_n}-D transposed convolution.",
    )


def _opt_tuple(value: Any, n: int) -> tuple[int, ...] | None:
    return None if value is None else _tuple(value, n, "kernel_size")


def _make_conv(name: str, n: int, data: Expr, weight: Expr, **kw: Any) -> Call:
    kw["strides"] = _tuple(kw["strides"], n, "strides")
    kw["dilation"] = _tuple(kw["dilation"], n, "dilation")
    kw["padding"] = _padding(kw["padding"], n)
    kw["kernel_size"] = _opt_tuple(kw["kernel_size"], n)
    kw["channels"] = None if kw["channels"] is None else int(kw["channels"])
    kw["groups"] = int(kw["groups"])
    kw["out_dtype"] = check_dtype(kw["out_dtype"]) if kw["out_dtype"] else ""
    if "output_padding" in kw:
        kw["output_padding"] = _tuple(kw["output_padding"], n, "output_padding")
    return make_call(name, [data, weight], **kw)


def conv1d(
    data: Expr,
    weight: Expr,
    strides: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCW",
    kernel_layout: str = "OIW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """1-D convolution; ``padding`` is normalised to (left, right)."""
    return _make_conv(
        "nn.conv1d", 1, data, weight, strides=strides, padding=padding, dilation=dilation,
        groups=groups, channels=channels, kernel_size=kernel_size, data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype,
    )  # fmt: skip


def conv3d(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1, 1),
    padding: Any = (0, 0, 0),
    dilation: Any = (1, 1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCDHW",
    kernel_layout: str = "OIDHW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """3-D convolution; ``padding`` is normalised to (front, top, left, back, bottom, right)."""
    return _make_conv(
        "nn.conv3d", 3, data, weight, strides=strides, padding=padding, dilation=dilation,
        groups=groups, channels=channels, kernel_size=kernel_size, data_layout=data_layout,
        kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype,
    )  # fmt: skip


def conv1d_transpose(
    data: Expr,
    weight: Expr,
    strides: Any = (1,),
    padding: Any = (0,),
    dilation: Any = (1,),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCW",
    kernel_layout: str = "IOW",
    out_layout: str = "",
    output_padding: Any = (0,),
    out_dtype: str = "",
) -> Call:
    """1-D transposed convolution (the gradient of :func:`conv1d` with respect to its data)."""
    return _make_conv(
        "nn.conv1d_transpose", 1, data, weight, strides=strides, padding=padding,
        dilation=dilation, groups=groups, channels=channels, kernel_size=kernel_size,
        data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
        output_padding=output_padding, out_dtype=out_dtype,
    )  # fmt: skip


def conv3d_transpose(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1, 1),
    padding: Any = (0, 0, 0),
    dilation: Any = (1, 1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: Any = None,
    data_layout: str = "NCDHW",
    kernel_layout: str = "IODHW",
    out_layout: str = "",
    output_padding: Any = (0, 0, 0),
    out_dtype: str = "",
) -> Call:
    """3-D transposed convolution (the gradient of :func:`conv3d` with respect to its data)."""
    return _make_conv(
        "nn.conv3d_transpose", 3, data, weight, strides=strides, padding=padding,
        dilation=dilation, groups=groups, channels=channels, kernel_size=kernel_size,
        data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
        output_padding=output_padding, out_dtype=out_dtype,
    )  # fmt: skip
