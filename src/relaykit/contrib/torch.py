"""``tvm.contrib.torch``: a torch model compiled by relaykit, used as a torch module.

``optimize_torch(model, example_inputs)`` traces the model, compiles it with relaykit and
returns a :class:`GraphExecutorFactoryWrapper` (an ``nn.Module``) that runs the build;
see :mod:`relaykit.frontend.pytorch.optimize` for what relaykit tunes instead of
MetaSchedule. TVM's other names here (``as_torch`` for TVMScript, the TorchScript
custom classes ``GraphModule``/``VMModule``/``TraceTvmModule``/``PyTorchTVMModule``)
raise :class:`~relaykit.errors.UnsupportedFeatureError`. Importing this module imports
torch (the ``torch`` extra).

>>> import torch
>>> from relaykit.contrib.torch import optimize_torch
>>> fast = optimize_torch(torch.nn.ReLU(), torch.randn(3), max_trials_global=0)
>>> fast(torch.tensor([-1.0, 0.5, 2.0])).tolist()
[0.0, 0.5, 2.0]
"""

from __future__ import annotations

from typing import NoReturn

from relaykit.errors import UnsupportedFeatureError
from relaykit.frontend.pytorch.optimize import GraphExecutorFactoryWrapper, optimize_torch

__all__ = ["GraphExecutorFactoryWrapper", "optimize_torch"]

INSTEAD = (
    "relaykit has no TVMScript and no TorchScript custom classes; compile a torch model with "
    "tvm.contrib.torch.optimize_torch(model, example_inputs) or "
    'torch.compile(model, backend="relaykit")'
)


def __getattr__(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.contrib.torch", name, INSTEAD)
