"""Input-type solvers of the ``nn.*`` operators (TVM's weight-shape deduction).

A solver is the ``"FTypeSolveInputs"`` attribute of an operator:
``solver(arg_types, attrs) -> [Type | None per input]``. The type checker calls it
when some inputs of a call have no known type yet (an :class:`IncompleteType`, e.g.
``relay.var("weight")`` without a shape) and unifies each unknown input with what
the solver returns; ``None`` means "cannot say". Known inputs are returned as they
are, so the relation then checks the call as usual.

>>> from relaykit.ir.attrs import Attrs
>>> from relaykit.ir.types import IncompleteType, TensorType
>>> attrs = Attrs({"axis": 1})
>>> [str(t) for t in bias_add_solve([TensorType((2, 8, 4)), IncompleteType()], attrs)]
['Tensor[(2, 8, 4), float32]', 'Tensor[(8), float32]']
"""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.ir.attrs import Attrs
from relaykit.ir.types import IncompleteType, TensorType, Type
from relaykit.op._relations import normalize_axis
from relaykit.op.define import TypeRelError, default_registry

from ._relations import layout_perm, pair, to_layout

__all__ = [
    "conv2d_solve",
    "conv2d_transpose_solve",
    "dense_solve",
    "bias_add_solve",
    "channel_vectors_solve",
]

Solved = list[Type | None]


def _known_data(arg_types: Sequence[Type]) -> TensorType | None:
    data = arg_types[0] if arg_types else None
    return data if isinstance(data, TensorType) else None


def _fill(arg_types: Sequence[Type], i: int, make: object) -> Solved:
    """``arg_types`` with input ``i`` replaced by ``make()`` when it is unknown."""
    out: Solved = list(arg_types)
    if i < len(out) and isinstance(out[i], IncompleteType):
        out[i] = make()  # type: ignore[operator]
    return out


def _kernel_hw(attrs: Attrs, op: str) -> tuple[int, int]:
    if attrs.kernel_size is None or attrs.channels is None:
        raise TypeRelError(
            f"cannot deduce the shape of the weight of {op}: it has no type annotation and "
            "the call does not give both channels= and kernel_size=; give those attributes "
            "or annotate the weight"
        )
    return pair(attrs.kernel_size, "kernel_size")


def conv2d_solve(arg_types: Sequence[Type], attrs: Attrs) -> Solved:
    """The weight of ``nn.conv2d`` from the data, ``channels``, ``kernel_size`` and
    ``groups``: ``(channels, in_channels / groups, kh, kw)`` in ``kernel_layout``."""
    data = _known_data(arg_types)
    if data is None or not isinstance(arg_types[1], IncompleteType):
        return list(arg_types)
    kh, kw = _kernel_hw(attrs, "nn.conv2d")
    if data.ndim != 4:
        raise TypeRelError(f"data must be a 4-D tensor in layout {attrs.data_layout}, got {data}")
    c = data.shape[layout_perm(attrs.data_layout, "NCHW")[1]]
    groups = attrs.groups
    if not isinstance(groups, int) or groups < 1 or c % groups:
        raise TypeRelError(f"groups={groups!r} must be a positive divisor of the {c} channels")
    oihw = (attrs.channels, c // groups, kh, kw)
    return _fill(
        arg_types, 1, lambda: TensorType(to_layout(oihw, "OIHW", attrs.kernel_layout), data.dtype)
    )


def conv2d_transpose_solve(arg_types: Sequence[Type], attrs: Attrs) -> Solved:
    """The weight of ``nn.conv2d_transpose``: ``(in_channels, channels / groups, kh, kw)``
    in ``kernel_layout`` (``IOHW`` by default)."""
    data = _known_data(arg_types)
    if data is None or not isinstance(arg_types[1], IncompleteType):
        return list(arg_types)
    kh, kw = _kernel_hw(attrs, "nn.conv2d_transpose")
    if data.ndim != 4:
        raise TypeRelError(f"data must be a 4-D tensor in layout {attrs.data_layout}, got {data}")
    c = data.shape[layout_perm(attrs.data_layout, "NCHW")[1]]
    groups = attrs.groups
    if not isinstance(groups, int) or groups < 1 or attrs.channels % groups:
        raise TypeRelError(
            f"groups={groups!r} must be a positive divisor of channels={attrs.channels}"
        )
    iohw = (c, attrs.channels // groups, kh, kw)
    return _fill(
        arg_types, 1, lambda: TensorType(to_layout(iohw, "IOHW", attrs.kernel_layout), data.dtype)
    )


def dense_solve(arg_types: Sequence[Type], attrs: Attrs) -> Solved:
    """The weight of ``nn.dense``: ``(units, in_features)``."""
    data = _known_data(arg_types)
    if data is None or not isinstance(arg_types[1], IncompleteType):
        return list(arg_types)
    if attrs.units is None:
        raise TypeRelError(
            "cannot deduce the shape of the weight of nn.dense: it has no type annotation "
            "and the call does not give units=; give units= or annotate the weight"
        )
    if data.ndim < 1:
        raise TypeRelError(f"data must have at least one dimension, got {data}")
    return _fill(arg_types, 1, lambda: TensorType((attrs.units, data.shape[-1]), data.dtype))


def _axis_vector(data: TensorType, attrs: Attrs, what: str) -> TensorType:
    axis = normalize_axis(attrs.axis, data.ndim, f"{what} axis")
    return TensorType((data.shape[axis],), data.dtype)


def bias_add_solve(arg_types: Sequence[Type], attrs: Attrs) -> Solved:
    """The bias of ``nn.bias_add``: a vector as long as the data's ``axis``."""
    data = _known_data(arg_types)
    if data is None:
        return list(arg_types)
    return _fill(arg_types, 1, lambda: _axis_vector(data, attrs, "bias_add"))


def channel_vectors_solve(arg_types: Sequence[Type], attrs: Attrs) -> Solved:
    """Every input after the data of ``nn.batch_norm`` / ``nn.layer_norm`` /
    ``nn.prelu`` (gamma, beta, moving mean and variance, alpha): a vector as long as
    the data's ``axis``."""
    data = _known_data(arg_types)
    if data is None:
        return list(arg_types)
    out: Solved = list(arg_types)
    for i in range(1, len(out)):
        if isinstance(out[i], IncompleteType):
            out[i] = _axis_vector(data, attrs, "normalisation")
    return out


for _name, _solver in (
    ("nn.conv2d", conv2d_solve),
    ("nn.conv2d_transpose", conv2d_transpose_solve),
    ("nn.dense", dense_solve),
    ("nn.bias_add", bias_add_solve),
    ("nn.batch_norm", channel_vectors_solve),
    ("nn.layer_norm", channel_vectors_solve),
    ("nn.prelu", channel_vectors_solve),
):
    default_registry.set_attr(_name, "FTypeSolveInputs", _solver)
