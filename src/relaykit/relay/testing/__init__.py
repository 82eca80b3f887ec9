"""TVM's ``relay.testing``: the built-in workloads (``relay.testing.vgg.get_workload``)."""

import sys

from relaykit.testing import *  # noqa: F403
from relaykit.testing import byoc, init, layers, mlp, mobilenet, resnet, temp_op_attr, vgg

for _sub in (byoc, init, layers, mlp, mobilenet, resnet, temp_op_attr, vgg):
    sys.modules.setdefault(f"{__name__}.{_sub.__name__.rsplit('.', 1)[-1]}", _sub)

__all__ = [
    "byoc",
    "init",
    "layers",
    "mlp",
    "mobilenet",
    "resnet",
    "temp_op_attr",
    "vgg",
]
