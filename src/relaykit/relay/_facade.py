"""Helpers of the TVM facade: module paths that forward to relaykit, and names left out.

:func:`forward` makes a facade module (``relaykit.relay.op.nn.nn``) answer with the
names of the relaykit module that implements it, for attribute access, ``from ... import``
and ``import *``.

A TVM module path that relaykit leaves out of scope (operator strategies and TE/TIR
schedules, GPU and accelerator backends, RPC, frameworks other than ONNX and PyTorch)
still imports, so a script's ``import`` lines work; each of its public names is an
:class:`Unsupported` placeholder that raises :class:`~relaykit.errors.UnsupportedFeatureError`
(saying why) when it is called, subclassed or used.

>>> names = unsupported("tvm.relay.op.strategy.cuda", ["conv2d_strategy_cuda"], GPU)
>>> names["conv2d_strategy_cuda"]()
Traceback (most recent call last):
...
relaykit.errors.UnsupportedFeatureError: tvm.relay.op.strategy.cuda.conv2d_strategy_cuda is \
not available in relaykit: GPU and accelerator backends are out of its scope (it compiles \
for the host CPU)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, NoReturn

from relaykit.errors import UnsupportedFeatureError

__all__ = [
    "forward",
    "Unsupported",
    "unsupported",
    "module_getattr",
    "SCHEDULES",
    "GPU",
    "FRAMEWORK",
    "NOT_YET",
    "AUTOTUNING",
]

#: Why a name is left out: one sentence, read after "is not available in relaykit: ".
SCHEDULES = (
    "TVM's operator strategies and TE/TIR schedules are out of its scope (relaykit runs "
    "operators with its own host kernels; there is nothing to schedule)"
)
GPU = "GPU and accelerator backends are out of its scope (it compiles for the host CPU)"
FRAMEWORK = (
    "relaykit imports ONNX and PyTorch models only; export the model to ONNX and use "
    "relay.frontend.from_onnx"
)
NOT_YET = "relaykit does not implement it yet"
AUTOTUNING = (
    "tuning-based search through TVM's own runtime (AutoTVM, MetaSchedule, Collage's "
    "measuring helpers) is out of its scope; measured placement is relaykit.tuning"
)


class Unsupported:
    """Stands for a TVM name relaykit does not provide; any use raises a typed error."""

    __slots__ = ("_qualname", "_reason")

    def __init__(self, qualname: str, reason: str) -> None:
        object.__setattr__(self, "_qualname", qualname)
        object.__setattr__(self, "_reason", reason)

    def _raise(self) -> NoReturn:
        raise UnsupportedFeatureError(
            f"{self._qualname} is not available in relaykit: {self._reason}"
        )

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._raise()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self._raise()

    def __mro_entries__(self, bases: tuple[Any, ...]) -> NoReturn:
        self._raise()

    def __repr__(self) -> str:
        return f"<{self._qualname}: not available in relaykit>"


def unsupported(module: str, names: Iterable[str], reason: str) -> dict[str, Unsupported]:
    """Placeholders for ``module``'s ``names`` (``globals().update(...)`` them)."""
    return {name: Unsupported(f"{module}.{name}", reason) for name in names}


def module_getattr(module: str, reason: str) -> Any:
    """A module ``__getattr__`` that answers any other public name with the typed error."""

    def __getattr__(name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        raise UnsupportedFeatureError(f"{module}.{name} is not available in relaykit: {reason}")

    return __getattr__


def forward(
    impl: ModuleType,
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__, __getattr__, __dir__`` for a facade module that re-exports ``impl``."""
    names = list(getattr(impl, "__all__", [n for n in vars(impl) if not n.startswith("_")]))

    def __getattr__(name: str) -> Any:
        try:
            return getattr(impl, name)
        except AttributeError:
            raise AttributeError(
                f"module {impl.__name__!r} (TVM's facade) has no attribute {name!r}"
            ) from None

    def __dir__() -> list[str]:
        return sorted(set(names) | set(dir(impl)))

    return names, __getattr__, __dir__
