"""TVM's ``relay.testing``: the built-in workloads (``relay.testing.vgg.get_workload``).

It is :mod:`relaykit.testing` under TVM's name: the same helpers, and each submodule of
:mod:`relaykit.testing` also importable as ``relaykit.relay.testing.<name>``. The list of
submodules is read from that package, so that a new workload is written down once.
"""

import sys
from types import ModuleType
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError
from relaykit.ir.types import TensorType
from relaykit.runtime.ndarray import Device, cpu
from relaykit.testing import *  # noqa: F403
from relaykit.testing import byoc as byoc  # these two are not in relaykit.testing.__all__
from relaykit.testing import temp_op_attr as temp_op_attr


def _np_randn_from_type(t: Any, scale: float = 1.0, mean: float = 0.0) -> Any:
    """A random NumPy array of the shape and dtype of the tensor type ``t``."""
    if not isinstance(t, TensorType):
        raise ArgumentError(f"_np_randn_from_type needs a tensor type, got {t}")
    return np.random.normal(mean, scale, size=t.concrete_shape).astype(t.dtype)


def enabled_targets() -> list[tuple[str, Device]]:
    """The targets this machine can run, with their devices: the host CPU only."""
    return [("llvm", cpu(0))]


__all__ = sorted(
    name
    for name, value in list(globals().items())
    if isinstance(value, ModuleType) and value.__name__ == f"relaykit.testing.{name}"
)

for _name in __all__:
    sys.modules.setdefault(f"{__name__}.{_name}", globals()[_name])

from relaykit.relay.prelude import Prelude  # noqa: E402 - re-exported as TVM does

from . import nat, py_converter  # noqa: E402 - TVM's modules, re-exported as TVM does
from .nat import count, make_nat_expr, make_nat_value  # noqa: E402
from .py_converter import run_as_python  # noqa: E402

__all__ += [
    "enabled_targets",
    "nat",
    "py_converter",
    "count",
    "make_nat_expr",
    "make_nat_value",
    "run_as_python",
    "Prelude",
]
