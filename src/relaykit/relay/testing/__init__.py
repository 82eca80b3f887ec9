"""TVM's ``relay.testing``: the built-in workloads (``relay.testing.vgg.get_workload``)."""

import sys

from relaykit.testing import *  # noqa: F403
from relaykit.testing import (
    byoc,
    dcgan,
    densenet,
    dqn,
    inception_v3,
    init,
    layers,
    lstm,
    mlp,
    mobilenet,
    resnet,
    squeezenet,
    temp_op_attr,
    vgg,
)

for _sub in (
    byoc, dcgan, densenet, dqn, inception_v3, init, layers, lstm, mlp, mobilenet, resnet,
    squeezenet, temp_op_attr, vgg,
):  # fmt: skip
    sys.modules.setdefault(f"{__name__}.{_sub.__name__.rsplit('.', 1)[-1]}", _sub)

__all__ = [
    "byoc",
    "dcgan",
    "densenet",
    "dqn",
    "inception_v3",
    "lstm",
    "squeezenet",
    "init",
    "layers",
    "mlp",
    "mobilenet",
    "resnet",
    "temp_op_attr",
    "vgg",
]
