"""The quantization configuration: :func:`qconfig` (a ``with`` block) and
:func:`current_qconfig`, with TVM's fields and defaults.

>>> current_qconfig().nbit_input, current_qconfig().calibrate_mode
(8, 'global_scale')
>>> with qconfig(global_scale=4.0, skip_conv_layers=None):
...     current_qconfig().global_scale, current_qconfig().skip_conv_layers
(4.0, None)
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from relaykit.errors import ArgumentError

__all__ = ["QAnnotateKind", "QConfig", "current_qconfig", "kind2str", "qconfig"]


class QAnnotateKind:
    """What an annotated value is: TVM's ``QAnnotateKind`` (each has its own bit width)."""

    IDENTITY = 0
    INPUT = 1
    WEIGHT = 2
    ACTIVATION = 3


_KIND_NAMES = {0: "identity", 1: "input", 2: "weight", 3: "activation"}


def kind2str(kind: int) -> str:
    """``"input"`` for ``QAnnotateKind.INPUT``, and so on.

    >>> kind2str(QAnnotateKind.WEIGHT)
    'weight'
    """
    if kind not in _KIND_NAMES:
        raise ArgumentError(f"unknown QAnnotateKind {kind!r}; kinds are {sorted(_KIND_NAMES)}")
    return _KIND_NAMES[kind]


_CHOICES = {
    "calibrate_mode": ("global_scale", "kl_divergence", "percentile"),
    "weight_scale": ("power2", "max"),
    "rounding": ("UPWARD", "TONEAREST"),
    "partition_conversions": ("disabled", "enabled", "fully_integral"),
}
_INT_DTYPES = ("int8", "uint8", "int16", "int32", "int64")


@dataclass(frozen=True)
class QConfig:
    """How ``relay.quantize.quantize`` quantizes (made by :func:`qconfig`; immutable).

    Fields and defaults are TVM's. ``debug_enabled_ops``, when given, limits
    annotation to those operators; ``skip_conv_layers`` lists indices of the
    ``nn.conv2d`` calls (in order) left in float.
    """

    nbit_input: int = 8
    nbit_weight: int = 8
    nbit_activation: int = 32
    dtype_input: str = "int8"
    dtype_weight: str = "int8"
    dtype_activation: str = "int32"
    calibrate_mode: str = "global_scale"
    global_scale: float = 8.0
    weight_scale: str = "power2"
    skip_dense_layer: bool = True
    skip_conv_layers: tuple[int, ...] | None = (0,)
    do_simulation: bool = False
    round_for_shift: bool = True
    debug_enabled_ops: tuple[str, ...] | None = None
    rounding: str = "UPWARD"
    calibrate_chunk_by: int = -1
    partition_conversions: str = "disabled"

    def __post_init__(self) -> None:
        for key, allowed in _CHOICES.items():
            if getattr(self, key) not in allowed:
                raise ArgumentError(
                    f"qconfig: {key} must be one of {list(allowed)}, got {getattr(self, key)!r}"
                )
        for key in ("dtype_input", "dtype_weight", "dtype_activation"):
            if str(getattr(self, key)) not in _INT_DTYPES:
                raise ArgumentError(
                    f"qconfig: {key} must be an integer dtype {list(_INT_DTYPES)}, "
                    f"got {getattr(self, key)!r}"
                )
            object.__setattr__(self, key, str(getattr(self, key)))
        for key in ("nbit_input", "nbit_weight", "nbit_activation"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= 64:
                raise ArgumentError(f"qconfig: {key} must be an int in [2, 64], got {value!r}")
        if not float(self.global_scale) > 0:
            raise ArgumentError(f"qconfig: global_scale must be > 0, got {self.global_scale!r}")
        object.__setattr__(self, "global_scale", float(self.global_scale))
        object.__setattr__(self, "skip_conv_layers", _int_tuple(self.skip_conv_layers))
        if self.debug_enabled_ops is not None:
            ops = self.debug_enabled_ops
            ops = (ops,) if isinstance(ops, str) else ops
            object.__setattr__(self, "debug_enabled_ops", tuple(str(o) for o in ops))

    def guard(self, ref_call: Any) -> bool:
        """Whether annotation may rewrite ``ref_call`` (``debug_enabled_ops``)."""
        if self.debug_enabled_ops is None:
            return True
        return str(getattr(ref_call.op, "name", "")) in self.debug_enabled_ops

    def get_nbit_by_kind(self, kind: int) -> int:
        """The bit width of values of ``kind``."""
        value: int = getattr(self, "nbit_" + kind2str(kind))
        return value

    def get_dtype_by_kind(self, kind: int) -> str:
        """The dtype of values of ``kind``."""
        value: str = getattr(self, "dtype_" + kind2str(kind))
        return value

    def __enter__(self) -> QConfig:
        _stack().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _stack().pop()


def _int_tuple(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, int):
        value = [value]
    if not isinstance(value, Sequence):
        raise ArgumentError(f"qconfig: skip_conv_layers must be a list of ints, got {value!r}")
    return tuple(int(v) for v in value)


_DEFAULT = QConfig()
_LOCAL = threading.local()
_FIELDS = frozenset(f.name for f in fields(QConfig))


def _stack() -> list[QConfig]:
    stack: list[QConfig] | None = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = []
        _LOCAL.stack = stack
    return stack


def current_qconfig() -> QConfig:
    """The configuration of the innermost ``with qconfig(...)`` block (else the defaults)."""
    stack = _stack()
    return stack[-1] if stack else _DEFAULT


def qconfig(**kwargs: Any) -> QConfig:
    """A configuration with TVM's defaults, overridden by ``kwargs``; use it in a
    ``with`` block around ``relay.quantize.quantize``.

    Unknown keywords are ignored, as TVM's ``qconfig`` ignores them.

    >>> qconfig(nbit_input=4).nbit_input
    4
    """
    return QConfig(**{k: v for k, v in kwargs.items() if k in _FIELDS})
