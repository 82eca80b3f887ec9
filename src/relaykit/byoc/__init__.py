"""Bring Your Own Codegen: find the parts of a model a backend supports and cut them out.

A backend describes what it supports with operator rules and composite
patterns; four passes then partition a module, with Relay's semantics::

    mod = MergeComposite(pattern_table)(mod)      # wrap pattern matches
    mod = AnnotateTarget(["mylib"])(mod)          # target per operator
    mod = MergeCompilerRegions()(mod)             # grow regions, cycle-free
    mod = PartitionGraph()(mod)                   # one global function per region

or all at once with :func:`partition_for`. Beyond TVM: a rule can
:func:`decline` with a reason, :func:`configure_target` sets transparent ops
and a minimum region size per target, :func:`pin` forces operators to the
host or a target, and :func:`explain` says where every operator went and why.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x, w = relay.var("x", shape=(1, 64)), relay.var("w", shape=(64, 64))
>>> y = relay.nn.relu(relay.nn.dense(x, w))
>>> mod = tvm.IRModule.from_expr(relay.nn.softmax(relay.abs(y)))
>>> with scoped_registries():           # rules registered here vanish at the end
...     @tvm.ir.register_op_attr("nn.dense", "target.mylib")
...     def dense(expr):                  # TVM 0.8+ rules take the typed call
...         if expr.args[0].checked_type.dtype != "float32":
...             return decline("mylib only has float32 GEMMs")
...         return True
...     _ = tvm.ir.register_op_attr("nn.relu", "target.mylib", lambda expr: True)
...     _ = configure_target("mylib", min_region_ops=2)  # tiny regions stay home
...     out = partition_for(mod, "mylib", pin=[pin("nn.softmax")])
...     report = explain(mod, "mylib")
>>> [gv.name_hint for gv, f in out.items() if "Compiler" in f.attrs]
['tvmgen_default_mylib_main_0']
>>> [(r.op, r.placement) for r in report.ops]
[('nn.dense', 'mylib'), ('nn.relu', 'mylib'), ('abs', 'host'), ('nn.softmax', 'host')]
"""

from ._common import PartitionError
from .annotate import AnnotateTarget
from .choose import Decision, TargetChooser
from .cost import call_macs, call_op_count
from .merge_composite import MergeComposite
from .merge_regions import MergeCompilerRegions
from .partition import PartitionGraph, RegionInfo, partition_module, region_functions
from .pins import Pin, pin
from .pipeline import (
    Prepared,
    optimize_for,
    partition_for,
    partition_passes,
    partitioner,
    prepare,
    registered_patterns,
    run_optimize_hook,
)
from .report.explain import OpReport, Report, explain
from .rules import Decline, RuleError, Verdict, check_op, decline
from .sub_graph import CapturePostDfsIndexInSpans, PartitionForTesting, SubGraph, SubGraphConfig
from .targets import TargetSpec, configure_target, get_target_spec, scoped_registries

__all__ = [
    # a backend's optimize hook (relay.ext.<name>.optimize)
    "run_optimize_hook",
    # the pipeline every command runs: bind, optimise, partition
    "prepare",
    "Prepared",
    "optimize_for",
    # passes
    "MergeComposite",
    "AnnotateTarget",
    "MergeCompilerRegions",
    "PartitionGraph",
    "CapturePostDfsIndexInSpans",
    "PartitionForTesting",
    "SubGraph",
    "SubGraphConfig",
    "partition_for",
    "partitioner",
    "partition_passes",
    "partition_module",
    "registered_patterns",
    "region_functions",
    "RegionInfo",
    # rules and options
    "decline",
    "Decline",
    "Verdict",
    "check_op",
    "TargetSpec",
    "configure_target",
    "get_target_spec",
    "scoped_registries",
    "pin",
    "Pin",
    "Decision",
    "TargetChooser",
    # measures and reports
    "call_macs",
    "call_op_count",
    "explain",
    "Report",
    "OpReport",
    # errors
    "PartitionError",
    "RuleError",
]
