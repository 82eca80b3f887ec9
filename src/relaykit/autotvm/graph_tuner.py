"""``tvm.autotvm.graph_tuner``: TVM's layout tuners, which relaykit does not have.

They choose a data layout per convolution (NCHW[x]c) and the layout transforms
between them; relaykit's host kernels run one layout (NCHW), so there is nothing
to choose. The classes import; making one raises
:class:`~relaykit.errors.UnsupportedFeatureError`.

>>> try:
...     DPTuner(None, {}, "log.json", [], "llvm")
... except UnsupportedFeatureError as exc:
...     print(type(exc).__name__)
UnsupportedFeatureError
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import UnsupportedFeatureError

__all__ = ["BaseGraphTuner", "DPTuner", "PBQPTuner"]

INSTEAD = (
    "relaykit's host kernels run one layout (NCHW), so there is no layout to tune; "
    "tune the kernels' algorithms with autotvm's tuners and apply_history_best"
)


class BaseGraphTuner:
    """A graph (layout) tuner: refused in relaykit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise UnsupportedFeatureError.for_name(
            "tvm.autotvm.graph_tuner", type(self).__name__, INSTEAD
        )


class DPTuner(BaseGraphTuner):
    """TVM's dynamic-programming layout tuner: refused in relaykit."""


class PBQPTuner(BaseGraphTuner):
    """TVM's PBQP layout tuner: refused in relaykit."""
