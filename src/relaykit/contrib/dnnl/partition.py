"""``partition_for_dnnl``: the whole partitioning pipeline for oneDNN, as TVM's.

The steps: bind ``params`` into ``main``; the pre-partitioning optimisations
(:func:`optimize_for_dnnl`: type inference, ``SimplifyInference``,
``FoldConstant``, and ``FoldScaleAxis`` when relaykit has it); then
``MergeComposite`` with the dnnl pattern table, ``AnnotateTarget(["dnnl"])``,
``MergeCompilerRegions`` and ``PartitionGraph``.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 8))
>>> mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
>>> sorted(gv.name_hint for gv in partition_for_dnnl(mod).get_global_vars())
['main', 'tvmgen_default_dnnl_main_0']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relaykit import transform
from relaykit.byoc import configure_target, partition_for, target_registry
from relaykit.byoc.targets import activate_targets
from relaykit.ir.expr import Function
from relaykit.ir.module import IRModule
from relaykit.transform.bind import bind_params_by_name
from relaykit.transform.pass_infra import Pass, Sequential

from .library import find_onednn
from .patterns import pattern_table

__all__ = ["partition_for_dnnl", "optimize_for_dnnl", "pre_partition_passes"]


def pre_partition_passes() -> list[Pass]:
    """The optimisations run before partitioning (those this relaykit provides)."""
    passes: list[Pass] = [transform.InferType()]
    for name in ("SimplifyInference", "FoldConstant", "FoldScaleAxis", "FoldConstant"):
        cls = getattr(transform, name, None)
        if cls is not None:
            passes.append(cls())
    passes.append(transform.InferType())
    return passes


def optimize_for_dnnl(
    mod: IRModule | Function, params: Mapping[str, Any] | None = None
) -> IRModule:
    """Bind ``params`` and run :func:`pre_partition_passes` (the codegen's optimize hook)."""
    if isinstance(mod, Function):
        mod = IRModule.from_expr(mod)
    if params:
        mod = mod.copy()
        mod["main"] = bind_params_by_name(mod["main"], params)
    return Sequential(pre_partition_passes(), name="OptimizeForDnnl")(mod)


def partition_for_dnnl(
    mod: IRModule | Function,
    params: Mapping[str, Any] | None = None,
    alter_layout: bool = True,
    prune_subgraphs: bool = False,
    *,
    pin: Any = None,
    mod_name: str = "default",
) -> IRModule:
    """Partition ``mod`` for oneDNN (TVM's ``relay.op.contrib.dnnl.partition_for_dnnl``).

    ``params`` are bound first, so weights become constants the regions embed.
    ``alter_layout`` is accepted for TVM compatibility and has no effect: oneDNN
    chooses blocked layouts itself, inside each region. ``prune_subgraphs``
    returns regions without a convolution or dense layer to the host (TVM's
    ``prune_dnnl_subgraphs``). ``pin`` is as for ``AnnotateTarget`` (force
    operators to the host or to dnnl). Without oneDNN installed it raises
    :class:`~.library.DnnlNotFoundError`, which names the extra to install.
    """
    find_onednn()  # choosing dnnl without oneDNN installed fails here, saying what to install
    activate_targets(["dnnl"])  # the record's rules, re-installed if a test dropped them
    mod = optimize_for_dnnl(mod, params)
    with target_registry.scoped():
        if prune_subgraphs:
            configure_target("dnnl", min_region_macs=1)
        return partition_for(mod, "dnnl", patterns=pattern_table(), pin=pin, mod_name=mod_name)
