"""Tuned host-kernel choices: which algorithm each operator workload runs with.

A workload is an operator with its input shapes, dtypes and attributes
(:func:`workload_key`). ``with use_choices({key: "winograd"}):`` around
``relay.build`` makes the build record the choice on each matching plan node
(:func:`apply_choices`), where the host kernel reads it; the plan carries it into
executors and exported artifacts. Tuners (:mod:`relaykit.execution.tuning`)
measure the choices; ``autotvm.apply_history_best`` installs the best ones.

>>> key = workload_key("nn.conv2d", [((1, 8, 8, 8), "float32"), ((8, 8, 3, 3), "float32")], {})
>>> with use_choices({key: "im2col"}):
...     current_choices()[key]
'im2col'
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from relaykit.backends.host.convolution import ALGORITHM_ATTR
from relaykit.ir.attrs import Attrs

from .graph_plan import GraphPlan, attrs_to_json

__all__ = ["TUNABLE_OPS", "workload_key", "use_choices", "current_choices", "apply_choices"]

#: Operators whose host kernel has a choice to tune (others are never keyed).
TUNABLE_OPS = ("nn.conv2d", "nn.dense")

_NONE: Mapping[str, str] = MappingProxyType({})
_CHOICES: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "relaykit_kernel_choices", default=_NONE
)


def workload_key(
    op: str, inputs: Sequence[tuple[Sequence[int], str]], attrs: Mapping[str, Any]
) -> str:
    """A stable text key for ``op`` on inputs of these (shape, dtype), with these attributes."""
    clean = {k: v for k, v in attrs_to_json(attrs).items() if k != ALGORITHM_ATTR}
    args = [[[int(d) for d in shape], str(dtype)] for shape, dtype in inputs]
    return json.dumps([op, args, clean], sort_keys=True, separators=(",", ":"))


@contextlib.contextmanager
def use_choices(choices: Mapping[str, str]) -> Iterator[None]:
    """Builds inside this block run each keyed workload with the chosen algorithm."""
    token = _CHOICES.set({**_CHOICES.get(), **choices})
    try:
        yield
    finally:
        _CHOICES.reset(token)


def current_choices() -> Mapping[str, str]:
    """The choices in force in this thread (or task)."""
    return _CHOICES.get()


def apply_choices(plan: GraphPlan) -> int:
    """Record the current choices on the plan's matching nodes; how many were set."""
    choices = _CHOICES.get()
    if not choices:
        return 0
    count = 0
    for i, node in enumerate(plan.nodes):
        if node.kind != "op" or node.name not in TUNABLE_OPS:
            continue
        inputs = [(plan.entries[e].shape, plan.entries[e].dtype) for e in node.inputs]
        choice = choices.get(workload_key(node.name, inputs, node.attrs))
        if choice is None:
            continue
        attrs = Attrs({**node.attrs, ALGORITHM_ATTR: choice}, node.attrs.type_key)
        plan.nodes[i] = dataclasses.replace(node, attrs=attrs)
        count += 1
    return count
