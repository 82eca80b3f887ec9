"""``relay.qnn.requantize_config``: the rounding and compute dtype ``qnn.requantize`` uses
when a call leaves them ``"None"``.

A call's own ``rounding`` / ``compute_dtype`` wins; ``"None"`` takes the innermost
``with requantize_config(...)`` around the build (or run) that lowers the call, else
TVM's defaults, ``UPWARD`` and ``int64``.

>>> current_requantize_config().rounding
'UPWARD'
>>> with requantize_config(rounding="TONEAREST"):
...     current_requantize_config().rounding, current_requantize_config().compute_dtype
('TONEAREST', 'int64')
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from relaykit.errors import ArgumentError

from ._common import ROUNDINGS

__all__ = ["RequantizeConfig", "requantize_config", "current_requantize_config"]

COMPUTE_DTYPES = ("int64", "float32", "float64")


@dataclass(frozen=True)
class RequantizeConfig:
    """The defaults ``qnn.requantize`` takes for ``"None"`` attributes."""

    rounding: str = "UPWARD"
    compute_dtype: str = "int64"
    is_default: bool = False


_DEFAULT = RequantizeConfig(is_default=True)
_CURRENT: ContextVar[RequantizeConfig] = ContextVar("relaykit.requantize_config", default=_DEFAULT)


def current_requantize_config() -> RequantizeConfig:
    """The configuration in scope (TVM's ``current_requantize_config``)."""
    return _CURRENT.get()


@contextmanager
def requantize_config(
    rounding: str | None = None, compute_dtype: str | None = None
) -> Iterator[RequantizeConfig]:
    """Within the ``with`` block, ``qnn.requantize`` calls whose ``rounding`` or
    ``compute_dtype`` is ``"None"`` use these (unset ones keep the enclosing values)."""
    outer = _CURRENT.get()
    r = outer.rounding if rounding is None else str(rounding)
    c = outer.compute_dtype if compute_dtype is None else str(compute_dtype)
    if r not in ROUNDINGS:
        raise ArgumentError(f"requantize_config: rounding must be one of {ROUNDINGS}, got {r!r}")
    if c not in COMPUTE_DTYPES:
        raise ArgumentError(
            f"requantize_config: compute_dtype must be one of {COMPUTE_DTYPES}, got {c!r}"
        )
    cfg = RequantizeConfig(r, c)
    token = _CURRENT.set(cfg)
    try:
        yield cfg
    finally:
        _CURRENT.reset(token)
