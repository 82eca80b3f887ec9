"""Helpers shared by the example backends: idempotent registration, the optimize hook.

>>> from relaykit.ir import IRModule
>>> inference_optimize(IRModule()).functions
{}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from relaykit.ir.module import IRModule
from relaykit.ir.op import default_registry
from relaykit.op.contrib import register_pattern_table
from relaykit.transform.bind import bind_params_by_name
from relaykit.transform.fold_constant import FoldConstant
from relaykit.transform.infer_type import InferType
from relaykit.transform.pass_infra import Sequential
from relaykit.transform.simplify_inference import SimplifyInference

__all__ = ["register_rules", "inference_optimize"]


def register_rules(
    target: str, rules: Mapping[str, Callable[..., Any]], patterns: Callable[[], Any]
) -> None:
    """(Re)register ``target``'s operator rules and pattern table; safe to call again."""
    key = f"target.{target}"
    for op_name, rule in rules.items():
        if default_registry.get_attr(op_name, key) is not rule:
            default_registry.reset_attr(op_name, key)
            default_registry.set_attr(op_name, key, rule)
    register_pattern_table(target, patterns)


def inference_optimize(mod: IRModule, params: Mapping[str, Any] | None = None) -> IRModule:
    """The optimize hook of the example backends, as TVM's ``partition_for_<lib>``: bind
    ``params``, then ``SimplifyInference`` and ``FoldConstant`` (batch norms become
    multiply/add with constant scales the backend can take)."""
    if params and "main" in mod:
        mod = mod.copy()
        mod["main"] = bind_params_by_name(mod["main"], params)
    seq = Sequential([InferType(), SimplifyInference(), FoldConstant(), InferType()])
    return seq(mod)
