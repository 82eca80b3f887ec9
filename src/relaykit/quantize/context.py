"""The state annotation keeps while it walks a function: the simulated-quantize node
made for each (value, kind), how many ``nn.conv2d`` calls it has seen (for
``skip_conv_layers``) and whether quantization has stopped (after
``nn.global_avg_pool2d``). TVM's ``QuantizeContext``.

>>> with quantize_context() as ctx:
...     ctx.stopped
False
"""

from __future__ import annotations

import threading
from typing import Any

from relaykit.ir.expr import Call

from .config import current_qconfig

__all__ = ["QuantizeContext", "quantize_context"]


class QuantizeContext:
    """Per-run annotation state; :func:`quantize_context` gives the current one."""

    def __init__(self) -> None:
        self.qnode_map: dict[Any, Call] = {}
        self._conv2d_counter = 0
        self._stop_quantize = False

    @property
    def stopped(self) -> bool:
        return self._stop_quantize

    def check_to_skip(self, ref_call: Call) -> bool:
        """Whether ``ref_call`` stays in float: quantization stopped, or it is a
        ``nn.conv2d`` whose index is in ``skip_conv_layers`` (counts conv2d calls)."""
        if self._stop_quantize:
            return True
        skipped = current_qconfig().skip_conv_layers
        if skipped is None or getattr(ref_call.op, "name", None) != "nn.conv2d":
            return False
        index = self._conv2d_counter
        self._conv2d_counter += 1
        return index in skipped

    def stop_quantize(self) -> None:
        self._stop_quantize = True

    def reset(self) -> None:
        self.qnode_map = {}
        self._conv2d_counter = 0
        self._stop_quantize = False

    def __enter__(self) -> QuantizeContext:
        self.reset()
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


_LOCAL = threading.local()


def quantize_context() -> QuantizeContext:
    """This thread's annotation state (one per thread, reset by ``with``)."""
    ctx: QuantizeContext | None = getattr(_LOCAL, "ctx", None)
    if ctx is None:
        ctx = QuantizeContext()
        _LOCAL.ctx = ctx
    return ctx
