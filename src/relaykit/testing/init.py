"""Parameter initialisers and ``create_workload``, as TVM's ``relay.testing.init``.

A parameter is initialised by the end of its name: ``*weight`` by the
initialiser's rule (Xavier by default), ``*bias`` and ``*beta`` and ``*mean``
to 0, ``*gamma`` and ``*var`` to 1. The random stream is NumPy's legacy
``RandomState(seed)`` drawn in parameter order, the same numbers TVM's
``np.random.seed(seed)`` gives, without touching NumPy's global generator.

>>> from relaykit.ir import Function, Var, TensorType
>>> from relaykit.op import nn
>>> x = Var("data", TensorType((1, 4)))
>>> w = Var("fc_weight", TensorType((2, 4)))
>>> mod, params = create_workload(Function([x, w], nn.dense(x, w)))
>>> sorted(params), params["fc_weight"].shape
(['fc_weight'], (2, 4))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.errors import IRError
from relaykit.ir.expr import Expr
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType
from relaykit.runtime.ndarray import NDArray
from relaykit.transform.infer_type import InferType

__all__ = ["Initializer", "Xavier", "Constant", "create_workload"]


class Initializer:
    """Base class of initialisers: dispatches on the end of the parameter name.

    Subclasses override ``_init_weight(name, arr)`` and draw random numbers
    from ``self.rng``, which :func:`create_workload` seeds.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self.rng = np.random.RandomState(0)

    def seed(self, seed: int) -> None:
        """Restart the random stream at ``seed``."""
        self.rng = np.random.RandomState(seed)

    def __call__(self, desc: str, arr: np.ndarray) -> None:
        """Fill ``arr`` in place for the parameter called ``desc``."""
        if desc.endswith("weight"):
            self._init_weight(desc, arr)
        elif desc.endswith("bias"):
            self._init_bias(desc, arr)
        elif desc.endswith("gamma"):
            self._init_gamma(desc, arr)
        elif desc.endswith("beta"):
            self._init_beta(desc, arr)
        elif desc.endswith("mean"):
            self._init_mean(desc, arr)
        elif desc.endswith("var"):
            self._init_var(desc, arr)
        else:
            self._init_default(desc, arr)

    def _init_bias(self, _: str, arr: np.ndarray) -> None:
        arr[...] = 0.0

    def _init_gamma(self, _: str, arr: np.ndarray) -> None:
        arr[...] = 1.0

    def _init_beta(self, _: str, arr: np.ndarray) -> None:
        arr[...] = 0.0

    def _init_mean(self, _: str, arr: np.ndarray) -> None:
        arr[...] = 0.0

    def _init_var(self, _: str, arr: np.ndarray) -> None:
        arr[...] = 1.0

    def _init_weight(self, name: str, arr: np.ndarray) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define _init_weight")

    def _init_default(self, name: str, _: np.ndarray) -> None:
        raise IRError(
            f"no initialisation rule for parameter {name!r}: names must end in "
            '"weight", "bias", "gamma", "beta", "mean" or "var"; pass the value yourself'
        )


class Xavier(Initializer):
    """Xavier initialisation of weights: uniform in ``[-s, s]``, ``s = sqrt(magnitude / factor)``.

    ``factor`` is the average (``"avg"``), input (``"in"``) or output
    (``"out"``) fan of the weight, counting the kernel area for convolutions.

    >>> init = Xavier()
    >>> w = np.zeros((4, 2, 3, 3), "float32")
    >>> init("conv_weight", w)
    >>> bool(np.abs(w).max() <= np.sqrt(3 / 27.0))
    True
    """

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type != "uniform":
            raise IRError(f"unknown Xavier random type {rnd_type!r}; relaykit supports 'uniform'")
        if factor_type not in ("avg", "in", "out"):
            raise IRError(f"unknown Xavier factor type {factor_type!r}; use 'avg', 'in' or 'out'")
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name: str, arr: np.ndarray) -> None:
        shape = arr.shape
        if len(shape) < 2:
            raise IRError(
                f"Xavier initializer cannot be applied to vector {name}: it needs at least 2-d"
            )
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        if self.factor_type == "avg":
            factor = (fan_in + fan_out) / 2.0
        elif self.factor_type == "in":
            factor = fan_in
        else:
            factor = fan_out
        if "depthwise" in name:  # TVM's hack for mobilenet's sparse connectivity
            factor = hw_scale
        scale = np.sqrt(self.magnitude / factor)
        _fill_uniform(self.rng, arr, -scale, scale)


def _fill_uniform(rng: np.random.RandomState, arr: np.ndarray, low: float, high: float) -> None:
    """``arr[...] = rng.uniform(low, high, arr.shape)`` without a float64 copy of all of it.

    The legacy generator draws the same numbers in chunks as in one call.
    """
    flat = arr.reshape(-1) if arr.flags.c_contiguous else None
    if flat is None or flat.size <= _CHUNK:
        arr[...] = rng.uniform(low, high, size=arr.shape)
        return
    for start in range(0, flat.size, _CHUNK):
        stop = min(start + _CHUNK, flat.size)
        flat[start:stop] = rng.uniform(low, high, size=stop - start)


_CHUNK = 1 << 20


class Constant(Initializer):
    """Weights filled with ``1 / size`` (so each weight tensor sums to 1)."""

    def _init_weight(self, name: str, arr: np.ndarray) -> None:
        arr[...] = 1.0 / arr.size


def create_workload(
    net: Expr | IRModule,
    initializer: Initializer | Callable[[str, np.ndarray], None] | None = None,
    seed: int = 0,
) -> tuple[IRModule, dict[str, NDArray]]:
    """A type-checked module for ``net`` and generated values of its parameters.

    Every parameter of ``main`` except ``data`` gets a value; the same
    ``seed`` always gives the same values. ``initializer`` is an
    :class:`Initializer` or, as TVM allows, any ``fn(name, array)`` that fills
    ``array`` in place; such a function gets NumPy's global generator seeded
    with ``seed`` (as TVM seeds it).
    """
    mod = net if isinstance(net, IRModule) else IRModule.from_expr(net)
    mod = InferType()(mod)
    init = initializer if initializer is not None else Xavier()
    if isinstance(init, Initializer):
        init.seed(seed)
    else:
        np.random.seed(seed)
    params: dict[str, NDArray] = {}
    for param in mod["main"].params:
        name = param.name_hint
        if name == "data":
            continue
        ty = param.checked_type
        if not isinstance(ty, TensorType):
            raise IRError(f"parameter %{name} has non-tensor type {ty}; cannot initialise it")
        value = np.zeros(ty.shape, dtype=ty.dtype)
        init(name, value)
        params[name] = NDArray(value)  # fresh array: wrap it, no copy
    return mod, params
