"""PyTorch in: TorchScript (``from_pytorch``), ``torch.export`` programs
(``from_exported_program``) and ``torch.compile(model, backend="relaykit")``.

All three paths convert aten ops through one converter table
(:data:`~relaykit.frontend.pytorch.registry.CONVERTERS`). Importing this package
does not import torch; each entry point does, and raises a
:class:`~relaykit.errors.MissingDependencyError` naming the ``torch`` extra when
it is missing.

>>> from relaykit.frontend.pytorch import supported_ops
>>> {"conv2d", "linear", "scaled_dot_product_attention"} <= set(supported_ops())
True
"""

from __future__ import annotations

from . import (  # noqa: F401 - each module registers its converters
    ops_arrays,
    ops_attention,
    ops_layers,
    ops_math,
    ops_nn,
    ops_quantized,
    ops_quantized_decomposed,
    ops_rnn,
    ops_tensor,
)
from .exported import from_exported_program
from .registry import CONVERTERS, require_torch
from .torchscript import from_pytorch

__all__ = ["from_pytorch", "from_exported_program", "supported_ops", "require_torch"]


def supported_ops() -> list[str]:
    """The aten op names (without ``aten::``) the converter table knows."""
    return sorted(CONVERTERS)
