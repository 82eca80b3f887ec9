"""``tvm.relay.backend.executor_factory``: what ``relay.build`` returns.

relaykit builds for the graph executor only, so its factory is
:class:`GraphExecutorFactoryModule`, which is also the ``ExecutorFactoryModule`` a
script may test with ``isinstance``.
"""

from relaykit.execution.build_module import GraphExecutorFactoryModule

ExecutorFactoryModule = GraphExecutorFactoryModule

__all__ = ["ExecutorFactoryModule", "GraphExecutorFactoryModule"]
