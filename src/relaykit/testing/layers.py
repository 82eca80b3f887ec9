"""Layer wrappers that create their own parameters, as TVM's ``relay.testing.layers``.

Each wrapper names its parameters the way TVM's does (``<name>_weight``,
``<name>_bias``, ``<name>_gamma``, ``<name>_beta``, ``<name>_moving_mean``,
``<name>_moving_var``). TVM leaves those parameters untyped and lets type
inference deduce their shapes; relaykit's type inference does not deduce the
types of unannotated parameters, so the wrappers deduce the shape here, from
the static type of ``data`` and the layer's attributes, and annotate the new
parameter with it. The printed module is the same as TVM's.

>>> from relaykit.ir import Var, TensorType
>>> x = Var("data", TensorType((1, 3, 8, 8)))
>>> y = conv2d(x, channels=4, kernel_size=(3, 3), padding=(1, 1), name="conv0")
>>> str(y.args[1].type_annotation)
'Tensor[(4, 3, 3, 3), float32]'
>>> z = batch_norm_infer(y, name="bn0")
>>> [str(p.type_annotation) for p in z.tuple_value.args[1:]]
['Tensor[(4), float32]', 'Tensor[(4), float32]', 'Tensor[(4), float32]', 'Tensor[(4), float32]']
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.expr import Call, Constant, Expr, Tuple, TupleGetItem, TupleWrapper, Var
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op import nn

__all__ = [
    "batch_norm_infer",
    "conv2d",
    "dense_add_bias",
    "conv_kernel_layout",
    "static_type",
]

# Types deduced for nodes under construction. Nodes are immutable, so an entry
# never goes stale; it disappears with its node.
_DEDUCED: weakref.WeakKeyDictionary[Expr, Type] = weakref.WeakKeyDictionary()


def _var(name: str, shape: Sequence[int], dtype: str = "float32") -> Var:
    """``relay.var(name, shape=shape, dtype=dtype)``."""
    return Var(name, TensorType(shape, dtype))


def _known(node: Expr) -> Type | None:
    if node.has_checked_type:
        return node.checked_type
    return _DEDUCED.get(node)


def _deduce(node: Any, lookup: Any) -> Type:
    t = type(node)
    if t is Var:
        if node.type_annotation is None:
            raise IRError(
                f"cannot deduce a parameter shape: %{node.name_hint} has no type annotation; "
                f'give it one, e.g. relay.var({node.name_hint!r}, shape=(...), dtype="float32")'
            )
        return node.type_annotation
    if t is Call and type(node.op) is Op:
        rel = node.op.get_attr("FTypeRelation")
        if rel is None:
            raise IRError(f"operator {node.op.name} has no type relation")
        return rel([lookup(a) for a in node.args], node.attrs)
    if t is Tuple:
        return TupleType([lookup(f) for f in node.fields])
    if t is TupleGetItem:
        tt = lookup(node.tuple_value)
        if not isinstance(tt, TupleType):
            raise IRError(f"projection .{node.index} of a non-tuple of type {tt}")
        return tt.fields[node.index]
    raise IRError(
        f"cannot deduce the static type of a {t.__name__} node while building layers; "
        "pass the parameter explicitly (weight=..., gamma=...)"
    )


def static_type(expr: Any) -> Type:
    """The static type of a dataflow expression under construction.

    Uses each operator's type relation; already-typed nodes and earlier
    answers are reused, so building a network layer by layer stays linear.

    >>> from relaykit.ir import Var, TensorType
    >>> str(static_type(Var("x", TensorType((2, 3)))))
    'Tensor[(2, 3), float32]'
    """
    if isinstance(expr, TupleWrapper):
        expr = expr.tuple_value
    known = _known(expr)
    if known is not None:
        return known

    def lookup(n: Expr) -> Type:
        ty = _known(n)
        if ty is None:  # pragma: no cover - post-order guarantees children first
            raise IRError(f"internal error: no type for {type(n).__name__} child")
        return ty

    def skip(n: Expr) -> bool:
        return type(n) is Op or type(n) is Constant or _known(n) is not None

    for node in post_order(expr, skip=skip):
        _DEDUCED[node] = _deduce(node, lookup)
    return lookup(expr)


def _tensor_type(expr: Any, layer: str) -> TensorType:
    ty = static_type(expr)
    if not isinstance(ty, TensorType):
        raise IRError(f"{layer} expects a tensor input, got a value of type {ty}")
    return ty


def _require_name(name: str | None, layer: str) -> str:
    if not name:
        raise IRError(f"{layer} needs name=... to name the parameters it creates")
    return name


def batch_norm_infer(
    data: Expr,
    gamma: Expr | None = None,
    beta: Expr | None = None,
    moving_mean: Expr | None = None,
    moving_var: Expr | None = None,
    name: str | None = None,
    **kwargs: Any,
) -> Expr:
    """``nn.batch_norm(...)[0]``, creating ``<name>_gamma/_beta/_moving_mean/_moving_var``.

    ``kwargs`` go to ``nn.batch_norm`` (``axis``, ``epsilon``, ``center``, ``scale``).
    """
    if gamma is None or beta is None or moving_mean is None or moving_var is None:
        base = _require_name(name, "batch_norm_infer")
        ty = _tensor_type(data, "batch_norm_infer")
        axis = int(kwargs.get("axis", 1))
        if not -ty.ndim <= axis < ty.ndim:
            raise IRError(f"batch_norm_infer: axis {axis} is out of range for input {ty}")
        shape = (ty.shape[axis],)
        if gamma is None:
            gamma = _var(base + "_gamma", shape, ty.dtype)
        if beta is None:
            beta = _var(base + "_beta", shape, ty.dtype)
        if moving_mean is None:
            moving_mean = _var(base + "_moving_mean", shape, ty.dtype)
        if moving_var is None:
            moving_var = _var(base + "_moving_var", shape, ty.dtype)
    out = nn.batch_norm(data, gamma, beta, moving_mean, moving_var, **kwargs)
    return out[0]


def _conv_weight_shape(data: Expr, kwargs: dict[str, Any], layer: str) -> tuple[int, ...]:
    channels = kwargs.get("channels")
    kernel_size = kwargs.get("kernel_size")
    if channels is None or kernel_size is None:
        raise IRError(f"{layer} needs channels=... and kernel_size=... to create its weight")
    ty = _tensor_type(data, layer)
    data_layout = kwargs.get("data_layout", "NCHW")
    kernel_layout = kwargs.get("kernel_layout", "OIHW")
    if sorted(data_layout) != sorted("NCHW") or sorted(kernel_layout) != sorted("OIHW"):
        raise IRError(
            f"{layer}: unsupported layouts data_layout={data_layout!r}, "
            f"kernel_layout={kernel_layout!r}"
        )
    if ty.ndim != 4:
        raise IRError(f"{layer} expects a 4-d input, got {ty}")
    groups = int(kwargs.get("groups", 1))
    in_channels = ty.shape[data_layout.index("C")]
    if groups < 1 or in_channels % groups:
        raise IRError(f"{layer}: {in_channels} input channels cannot be split into {groups} groups")
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    dims = {"O": int(channels), "I": in_channels // groups, "H": int(kh), "W": int(kw)}
    return tuple(dims[c] for c in kernel_layout)


def conv2d(data: Expr, weight: Expr | None = None, name: str | None = None, **kwargs: Any) -> Expr:
    """``nn.conv2d`` creating ``<name>_weight`` when ``weight`` is not given.

    ``kwargs`` go to ``nn.conv2d``; ``channels`` and ``kernel_size`` are needed
    to create the weight. Its shape follows ``kernel_layout`` (``OIHW`` by default).
    """
    if weight is None:
        base = _require_name(name, "conv2d")
        shape = _conv_weight_shape(data, kwargs, "conv2d")
        weight = _var(base + "_weight", shape, _tensor_type(data, "conv2d").dtype)
    return nn.conv2d(data, weight, **kwargs)


def dense_add_bias(
    data: Expr,
    weight: Expr | None = None,
    bias: Expr | None = None,
    units: int | None = None,
    name: str | None = None,
    **kwargs: Any,
) -> Expr:
    """``nn.bias_add(nn.dense(data, weight, units), bias, axis=-1)``, creating
    ``<name>_weight`` of shape ``(units, in_features)`` and ``<name>_bias``."""
    if weight is None or bias is None:
        base = _require_name(name, "dense_add_bias")
        if units is None:
            raise IRError("dense_add_bias needs units=... to create its parameters")
        ty = _tensor_type(data, "dense_add_bias")
        if weight is None:
            weight = _var(base + "_weight", (int(units), ty.shape[-1]), ty.dtype)
        if bias is None:
            bias = _var(base + "_bias", (int(units),), ty.dtype)
    out = nn.dense(data, weight, units, **kwargs)
    return nn.bias_add(out, bias, axis=-1)


def conv_kernel_layout(data_layout: str, is_depthwise: bool = False) -> str:
    """The kernel layout that goes with ``data_layout`` (``NCHW`` -> ``OIHW``).

    >>> conv_kernel_layout("NHWC"), conv_kernel_layout("NHWC", is_depthwise=True)
    ('HWIO', 'HWOI')
    """
    conv_layout_map = {"NCHW": "OIHW", "NHWC": "HWIO"}
    depthwise_conv_layout_map = {"NCHW": "OIHW", "NHWC": "HWOI"}
    mapping = depthwise_conv_layout_map if is_depthwise else conv_layout_map
    if data_layout not in mapping:
        raise IRError(f"unknown data layout {data_layout!r}; expected one of {sorted(mapping)}")
    return mapping[data_layout]


def conv2d_transpose(
    data: Expr, weight: Expr | None = None, name: str | None = None, **kwargs: Any
) -> Expr:
    """``nn.conv2d_transpose`` creating ``<name>_weight`` when ``weight`` is not given.

    The weight shape follows ``kernel_layout`` (``IOHW`` by default): input
    channels, ``channels // groups``, then the kernel size.
    """
    if weight is None:
        base = _require_name(name, "conv2d_transpose")
        channels = kwargs.get("channels")
        kernel_size = kwargs.get("kernel_size")
        if channels is None or kernel_size is None:
            raise IRError("conv2d_transpose needs channels=... and kernel_size=... for its weight")
        ty = _tensor_type(data, "conv2d_transpose")
        data_layout = kwargs.get("data_layout", "NCHW")
        kernel_layout = kwargs.get("kernel_layout", "IOHW")
        if sorted(data_layout) != sorted("NCHW") or sorted(kernel_layout) != sorted("OIHW"):
            raise IRError(
                f"conv2d_transpose: unsupported layouts data_layout={data_layout!r}, "
                f"kernel_layout={kernel_layout!r}"
            )
        groups = int(kwargs.get("groups", 1))
        kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
        dims = {
            "I": ty.shape[data_layout.index("C")],
            "O": int(channels) // groups,
            "H": int(kh),
            "W": int(kw),
        }
        weight = _var(base + "_weight", tuple(dims[c] for c in kernel_layout), ty.dtype)
    return nn.conv2d_transpose(data, weight, **kwargs)
