"""Shared by the vision operator tests: evaluate a function of several outputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from relaykit import relay
from relaykit.ir import IRModule


def _evaluate(outs: Any, params: list[Any], *arrays: Any) -> Any:
    body = outs.astuple() if hasattr(outs, "astuple") else outs
    mod = IRModule.from_expr(relay.Function(params, body))
    return relay.create_executor("debug", mod=mod).evaluate()(*arrays)


@pytest.fixture
def evaluate() -> Callable[..., Any]:
    """``evaluate(outs, params, *arrays)``: the debug executor's result of
    ``Function(params, outs)`` (a tuple for several outputs)."""
    return _evaluate
