"""``tvm.relay.build_module``: ``build``, ``optimize``, ``create_executor`` and
``bind_params_by_name``.

>>> import numpy as np
>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,)); w = relay.var("w", shape=(2,))
>>> f = bind_params_by_name(relay.Function([x, w], x * w), {"w": np.ones(2, "float32")})
>>> [p.name_hint for p in f.params]
['x']
"""

from __future__ import annotations

from relaykit.execution.build_module import GraphExecutorFactoryModule, build, optimize
from relaykit.execution.interpreter import create_executor
from relaykit.transform.bind import bind_params_by_name

__all__ = [
    "build",
    "create_executor",
    "bind_params_by_name",
    "optimize",
    "GraphExecutorFactoryModule",
]
