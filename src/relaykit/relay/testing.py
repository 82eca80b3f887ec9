"""TVM's ``relay.testing``: the built-in workloads (``relay.testing.vgg.get_workload``)."""

import sys

from relaykit.testing import *  # noqa: F403
from relaykit.testing import init, layers, mlp, mobilenet, resnet, vgg

for _sub in (init, layers, mlp, mobilenet, resnet, vgg):
    sys.modules.setdefault(f"{__name__}.{_sub.__name__.rsplit('.', 1)[-1]}", _sub)

__all__ = ["init", "layers", "mlp", "mobilenet", "resnet", "vgg"]
