"""PaddlePaddle in: ``from_paddle`` takes a ``paddle.jit.load`` layer or a static
program, in Paddle 3's PIR or in the older ProgramDesc form, and converts its ops
through one converter table (:data:`~relaykit.frontend.paddle.registry.CONVERTERS`).
Importing this package does not import paddle; ``from_paddle`` does, and raises a
:class:`~relaykit.errors.MissingDependencyError` naming the ``paddle`` extra when it
is missing.

>>> from relaykit.frontend.paddle import CONVERTERS
>>> {"conv2d", "batch_norm", "pool2d", "matmul"} <= set(CONVERTERS)
True
"""

from __future__ import annotations

from .importer import from_paddle
from .registry import CONVERTERS

__all__ = ["CONVERTERS", "from_paddle"]
